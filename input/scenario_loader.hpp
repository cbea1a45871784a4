// Loading a scenario and the presets it names: phase one turns JSON into the structs of
// core/scenario.hpp (types, required keys, unknown keys rejected, ranges and enum names
// checked; presets in input/presets.hpp, the execution sections in input/execution.hpp);
// phase two checks the rules that tie fields together (input/scenario_rules.hpp).
// Every error is a ConfigError naming the file, the JSON pointer and the offending value.
//
// Scenario (scenarios/NAME.json; units in key names):
//   {"name", "description", "model": NAME|{inline}, "cluster": NAME|{inline}, "gpus",
//    "parallelism": {"dp","tp","pp","cp","vpp","sequence_parallel","zero_stage",
//                    "pipeline_scatter_gather" (false; Megatron-LM's 1/tp pipeline sends
//                                               without sequence parallelism),
//                    "ep" (expert parallelism; needs a "moe" model), "etp" (expert tensor
//                    parallelism; default tp; both checked as Megatron-Core lays them out),
//                    "zero3_implementation": "fsdp" (default) | "deepspeed-2021" (with
//                                            zero_stage 3; core/scenario.hpp),
//                    "cp_implementation": "all_gather" (default) | "torch" (PyTorch's
//                                         context_parallel; core/scenario.hpp),
//                    "schedule": "1f1b"|"interleaved"|"gpipe"|"zb-h1"|"dualpipe"
//                      (workload/schedule.hpp),
//                    "layers_per_stage": [..] (per stage; with vpp > 1 per virtual stage),
//                    "account_for_embedding_in_pipeline_split",
//                    "account_for_loss_in_pipeline_split"},
//    "training": {"global_batch","micro_batch","seq_len","tokens_total",
//                 "precision": "bf16"|"fp16"|"fp8", "recompute": "none"|"selective"|"full",
//                 "recompute_layers" (with "full": the first N layers of each pipeline chunk;
//                                     default all),
//                 "recompute_modules": ["layernorm","mla_up_proj","moe_act"] (with "none" or
//                                     "selective": dropped after the forward, recomputed in
//                                     the backward; models/layer_activations.hpp),
//                 "fp8_activation_cache" (with "fp8": DeepSeek-V3's E5M6 attention output and
//                                     FP8 SwiGLU inputs), "dropout" (true: masks stored),
//                 "attention": "flash" (default: the calibration's fused kernel, cuDNN's on
//                              Hopper; no score tensors) | "flash2" | "flash3" (FlashAttention-2/3,
//                              e.g. PyTorch SDPA = flash2) | "unfused" (Megatron-LM 2021-22:
//                              batched GEMMs + fused softmax, stored scores),
//                 "repeat_kv" (false; K/V repeated to the query heads before attention),
//                 "tp_comm_overlap" (false; needs tp > 1 and sequence_parallel),
//                 "tp_comm_overlap_implementation": "userbuffers" (default: Transformer Engine)
//                                     | "torch" (PyTorch's async TP),
//                 "tp_comm_overlap_sms": {"proj_fprop", "fc2_fprop"} (SMs each forward
//                                     reduce-scatter takes from its GEMM; default 0),
//                 "overlap_grad_reduce", "overlap_param_gather", "grad_bucket_MiB",
//                 "grad_reduce": "per_step"|"per_micro_batch",
//                 "optimizer_state_dtype": "fp32"|"bf16",
//                 "optimizer_moments_dtype": "fp32"|"bf16"},
//    "comm": {"grad_dtype": "fp32"|"bf16"|"fp16"|"fp8",
//             "compression": "none"|"onebit_adam"|{"kind", "warmup_fraction"},
//             "fp32_layer_groups": ["embedding","lm_head"], "nccl": {"NCCL_*": value}},
//    "faults", "checkpointing", "cost", "campaign": sections of the whole run
//                 (input/faults_section.hpp, input/run_sections.hpp)}
#pragma once

#include <string>

#include "core/data_root.hpp"
#include "core/json_reader.hpp"
#include "core/scenario.hpp"
#include "input/presets.hpp"
#include "input/scenario_rules.hpp"

namespace clustersim {

// Loads a scenario file and the presets it names. Throws ConfigError on any problem, in the
// scenario or in its run sections (which load_input, input/input_loader.hpp, returns too).
Scenario load_scenario(const std::string& path);
// Same, from an already-parsed document (tests, sweeps that patch a base scenario).
Scenario load_scenario(const JsonDocument& document);

namespace input {
// The scenario alone: model, cluster, execution and the cross-field rules; its run sections
// are left to load_input.
Scenario parse_scenario(const JsonDocument& document);
}  // namespace input

}  // namespace clustersim
