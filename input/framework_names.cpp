#include "input/framework_names.hpp"

#include <map>
#include <string>

namespace clustersim::input {
namespace {

// Megatron-LM's argument names (arguments.py: --tensor-model-parallel-size, ...) and NeMo's
// config fields (trainer/model config: tensor_model_parallel_size, ...), which share them.
const std::map<std::string, std::string>& framework_names() {
  static const std::map<std::string, std::string> names = {
      {"tensor_model_parallel_size", "write \"tp\" in \"parallelism\""},
      {"pipeline_model_parallel_size", "write \"pp\" in \"parallelism\""},
      {"context_parallel_size", "write \"cp\" in \"parallelism\""},
      {"data_parallel_size",
       "write \"dp\" in \"parallelism\" (or leave it out: it is gpus / (tp x pp x cp))"},
      {"virtual_pipeline_model_parallel_size",
       "write \"vpp\" (model chunks per pipeline stage) in \"parallelism\""},
      {"num_layers_per_virtual_pipeline_stage",
       "write \"vpp\" in \"parallelism\": layers per stage / this number of layers per chunk"},
      {"use_distributed_optimizer",
       "write \"zero_stage\": 1 in \"parallelism\" (Megatron's distributed optimizer shards the "
       "optimizer states over data-parallel ranks, as ZeRO stage 1 does)"},
      {"expert_model_parallel_size", "write \"ep\" in \"parallelism\""},
      {"expert_tensor_parallel_size",
       "write \"etp\" in \"parallelism\" (or leave it out: experts then take tp, as in "
       "Megatron-Core)"},
      {"micro_batch_size", "write \"micro_batch\" in \"training\""},
      {"global_batch_size", "write \"global_batch\" in \"training\""},
      {"seq_length", "write \"seq_len\" in \"training\""},
      {"encoder_seq_length", "write \"seq_len\" in \"training\""},
      {"bf16", "write \"precision\": \"bf16\" in \"training\""},
      {"fp16", "write \"precision\": \"fp16\" in \"training\""},
      {"fp8", "write \"precision\": \"fp8\" in \"training\""},
      {"recompute_granularity", "write \"recompute\" in \"training\""},
      {"recompute_num_layers", "write \"recompute_layers\" in \"training\""},
  };
  return names;
}

}  // namespace

// A name both spell the same way (sequence_parallel, overlap_grad_reduce, ...) is not here: the
// section's own keys pass through.
void refuse_framework_names(const JsonNode& section) {
  if (!section.is_object()) return;
  for (const auto& [key, node] : section.members()) {
    const auto it = framework_names().find(key);
    if (it == framework_names().end()) continue;
    section.fail_at(key, "\"" + key + "\" is Megatron-LM's / NeMo's name; " + it->second);
  }
}

}  // namespace clustersim::input
