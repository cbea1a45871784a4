// Loading scenarios and presets from JSON: phase one turns JSON into the structs of
// core/scenario.hpp (types, required keys, unknown keys rejected, ranges and enum names
// checked); phase two checks the rules that tie fields together (dp·tp·pp·cp = gpus, ...).
// Every error is a ConfigError naming the file, the JSON pointer and the offending value.
//
// File formats (units in key names; every preset carries a "sources" object that cites each
// number it gives):
//
// Model preset (models/presets/NAME.json):
//   {"name", "source", "num_layers", "hidden_size", "num_attention_heads", "num_kv_heads",
//    "ffn_hidden_size", "vocab_size", "max_seq_len", "ffn": "gelu"|"swiglu",
//    "tied_embeddings", "position_embeddings": "learned"|"rope", "linear_biases",
//    "norm": "layernorm"|"rmsnorm"}
// GPU preset (topologies/gpus/NAME.json):
//   {"name", "peak_tflops": {"fp32","tf32","bf16","fp16","fp8"} (dense), "hbm_GB",
//    "hbm_TBps", "nvlink_GBps" (per GPU, one direction), "pcie_GBps" (one direction),
//    "kernel_launch_us", "sm_count" (optional), "compute_calibration" (optional path of the
//    GPU's kernel-efficiency
//    file, relative to the data directory; default validation/data/compute_efficiency.json),
//    "sources": {key: citation}}
// Cluster preset (topologies/clusters/NAME.json):
//   {"name", "description", "gpu": NAME|{inline}, "nodes", "gpus_per_node",
//    "nvlink_GBps" (optional, default: the GPU's), "nvlink_latency_us", "nics_per_node",
//    "nic_Gbps", "rail_optimized", "gpudirect_rdma",
//    "fabric": {"kind": "fat_tree", "nodes_per_leaf", "oversubscription", "nic_latency_us",
//               "switch_latency_us"},
//    "calibration" (optional path of a `clustersim calibrate -o` file, relative to the data
//    directory or the working directory: collectives it has measured take its fitted α/β
//    instead of NCCL's cost model, sim/detail/planner.hpp; compute efficiencies come from the
//    GPU's compute_calibration),
//    "sources": {...}}
// Scenario (scenarios/NAME.json):
//   {"name", "description", "model": NAME|{inline}, "cluster": NAME|{inline}, "gpus",
//    "parallelism": {"dp","tp","pp","cp","vpp","sequence_parallel","zero_stage",
//                    "zero3_implementation": "fsdp" (default) | "deepspeed-2021" (with
//                                            zero_stage 3; core/scenario.hpp),
//                    "schedule": "1f1b"|"interleaved"|"gpipe", "layers_per_stage": [..]},
//    "training": {"global_batch","micro_batch","seq_len","tokens_total",
//                 "precision": "bf16"|"fp16"|"fp8", "recompute": "none"|"selective"|"full",
//                 "recompute_layers" (with "full": the first N layers of each pipeline chunk;
//                                     default all), "dropout" (true: masks stored),
//                 "attention": "flash" (default: fused kernel, no score tensors) | "unfused"
//                              (Megatron-LM 2021-22: batched GEMMs + fused softmax, stored scores),
//                 "tp_comm_overlap" (false; needs tp > 1 and sequence_parallel),
//                 "tp_comm_overlap_sms": {"proj_fprop", "fc2_fprop"} (SMs each forward
//                                     reduce-scatter takes from its GEMM; default 0),
//                 "overlap_grad_reduce", "overlap_param_gather", "grad_bucket_MiB",
//                 "grad_reduce": "per_step"|"per_micro_batch"},
//    "comm": {"grad_dtype": "fp32"|"bf16"|"fp16"|"fp8",
//             "compression": "none"|"onebit_adam"|{"kind", "warmup_fraction"},
//             "fp32_layer_groups": ["embedding","lm_head"], "nccl": {"NCCL_*": value}},
//    "faults", "checkpointing", "cost", "campaign": sections validated by campaign/}
#pragma once

#include <string>

#include "core/json_reader.hpp"
#include "core/scenario.hpp"

namespace clustersim {

// Root of the shipped data (presets, scenarios): $CLUSTERSIM_DATA_DIR or the source tree.
std::string data_root();

// Loads a scenario file and the presets it names. Throws ConfigError on any problem.
Scenario load_scenario(const std::string& path);
// Same, from an already-parsed document (tests, sweeps that patch a base scenario).
Scenario load_scenario(const JsonDocument& document);

// Presets by name (models/presets/NAME.json, ...) or from a node that is a name or inline.
ModelSpec load_model(const JsonNode& node);
GpuSpec load_gpu(const JsonNode& node);
ClusterSpec load_cluster(const JsonNode& node);
ModelSpec load_model_preset(const std::string& name);
ClusterSpec load_cluster_preset(const std::string& name);

// Phase two on its own: the cross-field rules. Throws ConfigError at the offending key.
// Appends warnings (valid but questionable choices) to scenario.warnings.
void validate_scenario(Scenario& scenario);

// Names of the shipped presets, for error messages and help.
std::vector<std::string> preset_names(const std::string& folder);

}  // namespace clustersim
