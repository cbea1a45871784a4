#include "input/scenario_loader.hpp"

#include <filesystem>

#include "input/execution.hpp"
#include "input/input_keys.hpp"

namespace clustersim {

namespace input {
namespace {

// As Megatron-LM does: without "dp", the data-parallel size is what the other sizes leave of
// the GPUs. When they do not divide the GPU count, dp stays 1 and the layout rule reports it.
void infer_data_parallel(Scenario& s, const JsonNode& parallelism) {
  if (parallelism.is_object() && parallelism.has("dp")) return;
  const Parallelism& p = s.parallelism;
  const long long rest = static_cast<long long>(p.tp) * p.pp * p.cp;
  if (rest > 0 && s.gpus % rest == 0) s.parallelism.dp = static_cast<int>(s.gpus / rest);
}

}  // namespace

Scenario parse_scenario(const JsonDocument& document) {
  const JsonNode root = document.root();
  root.require_object();
  only_table_keys(root, scenario_keys());
  Scenario s;
  s.file = document.file();
  s.name = root.string_or("name", std::filesystem::path(document.file()).stem().string());
  s.description = root.string_or("description", "");
  s.model = load_model(root.at("model"));
  std::vector<std::string> uncited;
  s.cluster = load_cluster(root.at("cluster"), uncited);
  s.gpus = static_cast<int>(int_at(root, scenario_keys(), "gpus"));
  const JsonNode parallelism = root.at("parallelism");
  s.parallelism = parse_parallelism(parallelism);
  infer_data_parallel(s, parallelism);
  s.training = parse_training(root.at("training"), s.model.trained_with_dropout);
  if (const auto comm = root.find("comm"))
    s.comm = parse_comm(*comm, s.training.precision);
  else
    s.comm.grad_dtype = default_grad_dtype(s.training.precision);
  if (s.training.grad_bucket_bytes == 0)
    s.training.grad_bucket_bytes = default_grad_bucket_bytes(s);
  s.warnings = s.comm.nccl.warnings;
  s.warnings.insert(s.warnings.end(), uncited.begin(), uncited.end());
  validate_scenario(s);
  return s;
}

}  // namespace input

}  // namespace clustersim
