#include "input/scenario_loader.hpp"

#include <filesystem>

#include "input/execution.hpp"

namespace clustersim {

namespace input {

Scenario parse_scenario(const JsonDocument& document) {
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
  s.parallelism = parse_parallelism(root.at("parallelism"));
  s.training = parse_training(root.at("training"));
  if (const auto comm = root.find("comm")) s.comm = parse_comm(*comm);
  s.warnings = s.comm.nccl.warnings;
  validate_scenario(s);
  return s;
}

}  // namespace input

}  // namespace clustersim
