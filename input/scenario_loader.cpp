#include "input/scenario_loader.hpp"

#include <filesystem>

#include "input/execution.hpp"

namespace clustersim {

namespace {

RawSection raw_section(const JsonNode& root, const char* key) {
  RawSection s;
  if (const auto node = root.find(key)) {
    node->require_object();
    s.file = node->file();
    s.pointer = node->pointer();
    s.json = node->raw().dump();
  }
  return s;
}

}  // namespace

Scenario load_scenario(const std::string& path) {
  return load_scenario(JsonDocument::load(path));
}

Scenario load_scenario(const JsonDocument& document) {
  const JsonNode root = document.root();
  root.require_object();
  root.only_keys({"name", "description", "model", "cluster", "gpus", "parallelism", "training",
                  "comm", "faults", "checkpointing", "cost", "campaign"});
  Scenario s;
  s.file = document.file();
  s.name = root.string_or("name", std::filesystem::path(document.file()).stem().string());
  s.description = root.string_or("description", "");
  s.model = load_model(root.at("model"));
  s.cluster = load_cluster(root.at("cluster"));
  s.gpus = static_cast<int>(root.int_at("gpus", 1, 1 << 24));
  s.parallelism = input::parse_parallelism(root.at("parallelism"));
  s.training = input::parse_training(root.at("training"));
  if (const auto comm = root.find("comm")) s.comm = input::parse_comm(*comm);
  s.faults = raw_section(root, "faults");
  s.checkpointing = raw_section(root, "checkpointing");
  s.cost = raw_section(root, "cost");
  s.campaign = raw_section(root, "campaign");
  s.warnings = s.comm.nccl.warnings;
  validate_scenario(s);
  return s;
}

}  // namespace clustersim
