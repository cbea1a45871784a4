// Model, GPU and cluster presets: by name (models/presets/NAME.json, topologies/gpus/NAME.json,
// topologies/clusters/NAME.json under the data root) or inline in a scenario. Types, ranges and
// enum names are checked, unknown keys rejected, and every numeric key of a preset must be
// cited in its "sources" object. Errors are ConfigErrors naming the file and JSON pointer.
//
// Model preset:
//   {"name", "source", "num_layers", "hidden_size", "num_attention_heads", "num_kv_heads",
//    "ffn_hidden_size", "vocab_size", "max_seq_len", "ffn": "gelu"|"swiglu"|"squared_relu",
//    "tied_embeddings", "position_embeddings": "learned"|"rope", "linear_biases", "dropout",
//    "norm": "layernorm"|"rmsnorm", "head_dim" (optional; default hidden_size / heads),
//    "moe": {...}, "mla": {...}, "mtp_layers" (optional blocks: input/model_blocks.hpp)}
// GPU preset:
//   {"name", "peak_tflops": {"fp32","tf32","bf16","fp16","fp8"} (dense), "hbm_GB",
//    "hbm_reported_GiB" (optional: the memory CUDA reports, which the memory verdicts prefer),
//    "hbm_TBps", "nvlink_GBps" (per GPU, one direction), "pcie_GBps" (one direction),
//    "kernel_launch_us" (the gap between queued kernels), "host_us_per_kernel" (optional; default
//    models/compute_cost.hpp kHostPerKernelS), "sm_count" (optional), "compute_calibration"
//    (optional path of the GPU's kernel-efficiency file, relative to the data directory;
//    default validation/data/compute_efficiency.json), "sources": {key: citation}}
// Cluster preset:
//   {"name", "description", "gpu": NAME|{inline}, "nodes", "gpus_per_node",
//    "nvlink_GBps" (optional, default: the GPU's), "nvlink_latency_us", "nics_per_node",
//    "nic_Gbps", "rail_optimized", "gpudirect_rdma",
//    "fabric": {"kind": "fat_tree", "nodes_per_leaf" (at most 512 downlinks per leaf),
//               "oversubscription"} (no latencies: NCCL's cost model counts the network's),
//    "calibration" (optional path of a `clustersim calibrate -o` file, relative to the data
//    directory or the working directory: collectives it has measured take its fitted α/β
//    instead of NCCL's cost model; compute efficiencies come from the GPU's
//    compute_calibration),
//    "sources": {...}}
#pragma once

#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "core/scenario.hpp"

namespace clustersim {

// A preset by name or an inline object, from a node that is one or the other.
ModelSpec load_model(const JsonNode& node);
GpuSpec load_gpu(const JsonNode& node);
ClusterSpec load_cluster(const JsonNode& node);
// A scenario's cluster (a preset by name or an inline object). Numbers of an inline cluster, or
// of an inline GPU in it, may be left uncited: a hypothetical part ("what-if"), each such number
// appended to `uncited` as a sentence naming its JSON pointer instead of being an error. A preset
// loaded by name (and everything in its file) needs a citation for every number.
ClusterSpec load_cluster(const JsonNode& node, std::vector<std::string>& uncited);
// A preset by name.
ModelSpec load_model_preset(const std::string& name);
ClusterSpec load_cluster_preset(const std::string& name);

// Names of the shipped presets in `folder` (under the data root), sorted, for errors and help.
std::vector<std::string> preset_names(const std::string& folder);

}  // namespace clustersim
