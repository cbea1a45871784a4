// The key tables of the model, GPU and cluster presets (input/presets.hpp). Hardware figures are
// given in the unit of their key name; their bounds are the SI ranges of input/preset_limits.hpp
// divided by that unit, as the loader divides them.
#include "core/scenario.hpp"
#include "core/units.hpp"
#include "input/input_keys.hpp"
#include "input/preset_limits.hpp"

namespace clustersim::input {

namespace {

using namespace keys;

// A figure in the key's unit (`unit` SI units each) within [min, max] SI units.
KeySpec figure(std::string name, double unit, double min, double max, std::string description) {
  return closed(std::move(name), min / unit, max / unit, std::move(description));
}

ObjectSpec make_model() {
  return {
      "model",
      "A model architecture (models/presets/NAME.json); every number cited in \"sources\"",
      {required(text("name", "the model's name")),
       text("source", "where the shape comes from"),
       text("description", "free text"),
       required(integer("num_layers", 1, kMaxLayers, "Transformer layers")),
       required(integer("hidden_size", 1, 1 << 24, "model width")),
       required(integer("num_attention_heads", 1, 1 << 16, "attention heads")),
       integer("num_kv_heads", 1, 1 << 16, "key/value heads (GQA); default: the attention heads"),
       required(integer("ffn_hidden_size", 1, kMaxWidth, "MLP width")),
       required(integer("vocab_size", 1, kMaxWidth, "vocabulary size")),
       required(integer("max_seq_len", 1, kMaxWidth, "longest sequence the model takes")),
       choice("ffn", kFfnNames.names(), "MLP activation; default gelu"),
       flag("tied_embeddings", "input and output embeddings shared; default false"),
       choice("position_embeddings", {"learned", "rope"}, "default rope"),
       flag("linear_biases", "linear layers carry biases; default false"),
       flag("dropout", "trained with dropout: the default of training.dropout; default true"),
       choice("norm", {"layernorm", "rmsnorm"}, "default layernorm"),
       integer("head_dim", 1, kMaxWidth, "width of one head; default hidden_size / heads"),
       object("moe", {"moe"}, "mixture-of-experts layers (docs/moe.md)"),
       object("mla", {"mla"}, "multi-head latent attention (DeepSeek-V2/V3)"),
       integer("mtp_layers", 0, kMaxMtpLayers, "multi-token prediction modules; default 0"),
       sources("citations and notes, as text")}};
}

ObjectSpec make_moe() {
  return {"moe",
          "Mixture-of-experts layers; every number cited in \"sources\"",
          {required(integer("num_experts", 1, kMaxExperts, "routed experts per MoE layer")),
           required(integer("experts_per_token", 1, kMaxExperts,
                            "routed experts per token (top-k), at most num_experts")),
           required(integer("expert_ffn_hidden_size", 1, kMaxWidth, "MLP width of one expert")),
           integer("shared_experts", 0, kMaxExperts, "experts every token uses; default 0"),
           integer("shared_expert_ffn_hidden_size", 1, kMaxWidth,
                   "MLP width of the shared experts; required with shared_experts"),
           integer("first_dense_layers", 0, kMaxLayers, "leading dense layers; default 0"),
           integer("moe_layer_freq", 1, kMaxLayers, "every N-th layer is MoE; default 1"),
           closed_unit("capacity_factor", 0, kMaxCapacityFactor, "",
                       "expert capacity / the mean load; 0 (default) = no limit"),
           closed_unit("routing_imbalance", 1, static_cast<double>(kMaxExperts), "",
                       "tokens on the busiest expert / the mean; default 1"),
           integer("expert_groups", 1, kMaxExperts, "group-limited routing: expert groups"),
           integer("groups_per_token", 1, kMaxExperts,
                   "group-limited routing: groups a token may reach"),
           required(sources("a citation for every number"))}};
}

ObjectSpec make_mla() {
  return {"mla",
          "Multi-head latent attention; every number cited in \"sources\"",
          {required(integer("q_lora_rank", 0, kMaxWidth, "query compression rank (0: none)")),
           required(integer("kv_lora_rank", 1, kMaxWidth, "key/value compression rank")),
           required(integer("qk_nope_head_dim", 1, kMaxWidth, "head width without RoPE")),
           required(integer("qk_rope_head_dim", 1, kMaxWidth, "head width with RoPE")),
           required(integer("v_head_dim", 1, kMaxWidth, "value head width")),
           required(sources("a citation for every number"))}};
}

ObjectSpec make_peak_tflops() {
  ObjectSpec s{"peak_tflops", "Dense peak TFLOP/s by dtype; bf16 is required", {}};
  for (const auto& name : kDtypeNames.names()) {
    KeySpec k = figure(name, 1, kMinPeakFlops / kTflops, kMaxPeakFlops / kTflops,
                       "dense peak TFLOP/s in " + name);
    k.required = name == "bf16";
    s.keys.push_back(std::move(k));
  }
  return s;
}

// GPU and cluster citations: required in a preset file; a scenario's inline object may leave
// numbers uncited, each then a warned what-if.
const char* const kHardwareSources =
    "a citation for every number (a preset file must cite each; an inline object in a scenario "
    "may leave some uncited: a what-if, with a warning)";

ObjectSpec make_gpu() {
  return {"gpu",
          "A GPU (topologies/gpus/NAME.json); every number cited in \"sources\"",
          {required(text("name", "the GPU's name")), text("description", "free text"),
           required(object("peak_tflops", {"peak_tflops"}, "dense peak TFLOP/s by dtype")),
           required(figure("hbm_GB", kGB, kMinMemoryBytes, kMaxMemoryBytes, "HBM capacity, GB")),
           figure("hbm_reported_GiB", kGiB, kMinMemoryBytes, kMaxMemoryBytes,
                  "device memory as CUDA reports it (cudaDeviceProp::totalGlobalMem, "
                  "torch.cuda.get_device_properties().total_memory), GiB; the memory verdicts "
                  "use it in place of hbm_GB (docs/hardware.md#memory-capacity)"),
           required(figure("hbm_TBps", kTB, kMinBandwidth_Bps, kMaxBandwidth_Bps, "HBM bandwidth")),
           required(figure("nvlink_GBps", kGB, kMinBandwidth_Bps, kMaxBandwidth_Bps,
                           "NVLink bandwidth per GPU, one direction")),
           required(figure("pcie_GBps", kGB, kMinBandwidth_Bps, kMaxBandwidth_Bps,
                           "PCIe bandwidth, one direction")),
           required(figure("kernel_launch_us", kUs, 0, kMaxLatency_s, "kernel launch overhead")),
           figure("host_us_per_kernel", kUs, 0, kMaxLatency_s,
                  "host time to issue one kernel (default: 22.8 us, measured on an H200's host; "
                  "docs/system-calibration.md#host-dispatch)"),
           integer("sm_count", 1, 1 << 16, "streaming multiprocessors"),
           choice("architecture", kGpuArchNames.names(),
                  "volta, ampere, hopper or blackwell: NCCL's tuning tables, NVLink SHARP and "
                  "channels follow it (default hopper)"),
           closed("tdp_W", 1, kMaxPowerW, "board power"),
           text("compute_calibration",
                "kernel-efficiency file, relative to the data directory; default "
                "validation/data/compute_efficiency.json"),
           sources(kHardwareSources)}};
}

ObjectSpec make_cluster() {
  return {"cluster",
          "A cluster (topologies/clusters/NAME.json); every number cited in \"sources\"",
          {required(text("name", "the cluster's name")), text("description", "free text"),
           text("source", "where the cluster's figures come from"),
           required(preset("gpu", "gpu", "a GPU preset of topologies/gpus (by name) or inline")),
           required(integer("nodes", 1, 1 << 20, "nodes")),
           required(integer("gpus_per_node", 1, 1024, "GPUs per node")),
           figure("nvlink_GBps", kGB, kMinBandwidth_Bps, kMaxBandwidth_Bps,
                  "NVLink bandwidth per GPU, one direction; default: the GPU's"),
           required(figure("nvlink_latency_us", kUs, 0, kMaxLatency_s, "NVLink latency")),
           required(integer("nics_per_node", 1, 1024, "NICs per node")),
           required(figure("nic_Gbps", kGbit, kMinBandwidth_Bps, kMaxBandwidth_Bps,
                           "line rate of one NIC")),
           flag("rail_optimized", "one leaf per NIC index (needs one NIC per GPU); default false"),
           flag("gpudirect_rdma", "NICs read GPU memory directly; default true"),
           required(object("fabric", {"fabric"}, "the network between nodes")),
           text("calibration", "a `clustersim calibrate -o` file for the collectives it measured"),
           sources(kHardwareSources)}};
}

ObjectSpec make_fabric() {
  return {"fabric",
          "The network between nodes (no latencies: NCCL's cost model counts them)",
          {required(choice("kind", kFabricNames.names(), "the fabric's topology")),
           required(integer("nodes_per_leaf", 1, 1 << 20,
                            "nodes per leaf switch; at most 512 downlinks per leaf")),
           custom_number("oversubscription", 1, kMaxOversubscription, false, false,
                         "leaf downlinks per uplink; default 1 (non-blocking)"),
           sources("citations, as text")}};
}

}  // namespace

const ObjectSpec& model_keys() {
  return built_once<make_model>();
}
const ObjectSpec& moe_keys() {
  return built_once<make_moe>();
}
const ObjectSpec& mla_keys() {
  return built_once<make_mla>();
}
const ObjectSpec& gpu_keys() {
  return built_once<make_gpu>();
}
const ObjectSpec& peak_tflops_keys() {
  return built_once<make_peak_tflops>();
}
const ObjectSpec& cluster_keys() {
  return built_once<make_cluster>();
}
const ObjectSpec& fabric_keys() {
  return built_once<make_fabric>();
}

}  // namespace clustersim::input
