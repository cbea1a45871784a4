#include "input/presets.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "core/data_root.hpp"
#include "core/units.hpp"
#include "input/model_blocks.hpp"
#include "input/read_helpers.hpp"

namespace clustersim {

namespace {

using input::check_sources;
using input::enum_or;
using input::require_sources;

// Ranges of the hardware figures, in SI units. They are far wider than any real part (the
// slowest link meant here is PCIe 1.0 x1, 0.25 GB/s per direction; an H100's HBM3 moves
// 3.35 TB/s; the densest 2024 GPU peaks near 5 PFLOP/s in FP8), wide enough for idealised
// parts (a bandwidth of 1 EB/s makes a memory-bound kernel free); what they exclude is a typo
// or a generated value that would make a step's durations overflow a double or drive a flow's
// rate below SimGrid's solver precision, where it never finishes.
constexpr double kMinBandwidth_Bps = 1e6;   // 1 MB/s
constexpr double kMaxBandwidth_Bps = 1e18;  // 1 EB/s
constexpr double kMinPeakFlops = 1e9;       // 1 GFLOP/s
constexpr double kMaxPeakFlops = 1e18;      // 1 EFLOP/s
constexpr double kMinMemoryBytes = 1e6;     // 1 MB
constexpr double kMaxMemoryBytes = 1e15;    // 1 PB
constexpr double kMaxLatency_s = 1.0;       // latencies and launch overheads, each
constexpr double kMaxPowerW = 1e5;          // 100 kW per GPU
// A leaf switch with more downlinks than this does not exist: the largest single-chip switch
// radix is 512 ports (Broadcom Tomahawk 5, 512 x 100GbE); the limit also bounds the spine
// count (one per oversubscribed downlink) and so the leaf-spine links the graph builds.
constexpr int kMaxLeafDownlinks = 512;
// A leaf with one uplink per thousand downlinks is the most oversubscribed fabric accepted.
constexpr double kMaxOversubscription = 1000;

// A figure in the key's unit (`unit` SI units each) within [min, max] SI units; returns SI.
double figure_at(const JsonNode& n, std::string_view key, double unit, double min, double max) {
  return n.number_in_at(key, min / unit, max / unit) * unit;
}

std::string preset_path(const std::string& folder, const std::string& name) {
  return data_root() + "/" + folder + "/" + name + ".json";
}

// Fails at `node` unless `name` is a preset of `folder`, suggesting the nearest one.
void require_preset(const JsonNode& node, const std::string& folder, const char* what,
                    const std::string& name) {
  const auto names = preset_names(folder);
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  std::string message = std::string("no ") + what + " preset named \"" + name + "\"";
  const std::string suggestion = nearest_name(name, names);
  if (!suggestion.empty()) {
    message += "; did you mean \"" + suggestion + "\"?";
  } else {
    message += "; available: " + join_names(names);
  }
  node.fail(message);
}

// A node that is either a preset name or an inline object: returns the document to read.
template <typename T, typename Loader>
T by_name_or_inline(const JsonNode& node, const std::string& folder, const char* what,
                    Loader&& load_object) {
  if (node.is_object()) return load_object(node);
  if (!node.is_string()) {
    node.fail(std::string("expected a ") + what + " preset name or an inline object, got " +
              node.describe());
  }
  const std::string name = node.as_string();
  require_preset(node, folder, what, name);
  const JsonDocument doc = JsonDocument::load(preset_path(folder, name));
  return load_object(doc.root());
}

void check_model_heads(const JsonNode& n, const ModelSpec& m) {
  // With the head width given (head_dim) or MLA's, the hidden size need not split into heads.
  const bool own_head_width = m.attention_head_dim > 0 || m.mla.has_value();
  if (!own_head_width && m.hidden % m.num_heads != 0) {
    n.fail_at("num_attention_heads", std::to_string(m.num_heads) +
                                         " attention heads do not divide hidden_size " +
                                         std::to_string(m.hidden));
  }
  if (m.num_heads % m.num_kv_heads != 0) {
    n.fail_at("num_kv_heads", std::to_string(m.num_kv_heads) + " KV heads do not divide the " +
                                  std::to_string(m.num_heads) + " attention heads");
  }
}

ModelSpec model_from_object(const JsonNode& n) {
  n.only_keys({"name",
               "source",
               "description",
               "num_layers",
               "hidden_size",
               "num_attention_heads",
               "num_kv_heads",
               "ffn_hidden_size",
               "vocab_size",
               "max_seq_len",
               "ffn",
               "tied_embeddings",
               "position_embeddings",
               "linear_biases",
               "norm",
               "head_dim",
               "moe",
               "mla",
               "mtp_layers",
               "sources"});
  ModelSpec m;
  m.name = n.string_at("name");
  m.source = n.string_or("source", "");
  m.num_layers = static_cast<int>(n.int_at("num_layers", 1, 100000));
  m.hidden = static_cast<int>(n.int_at("hidden_size", 1, 1 << 24));
  m.num_heads = static_cast<int>(n.int_at("num_attention_heads", 1, 1 << 16));
  m.num_kv_heads = static_cast<int>(n.int_or("num_kv_heads", m.num_heads, 1, 1 << 16));
  m.ffn_hidden = static_cast<int>(n.int_at("ffn_hidden_size", 1, 1 << 26));
  m.vocab = static_cast<int>(n.int_at("vocab_size", 1, 1 << 26));
  m.max_seq_len = static_cast<int>(n.int_at("max_seq_len", 1, 1 << 26));
  m.ffn = enum_or(n, "ffn", kFfnNames, FfnKind::gelu);
  m.tied_embeddings = n.bool_or("tied_embeddings", false);
  m.learned_position_embeddings =
      n.enum_or("position_embeddings", {"learned", "rope"}, "rope") == "learned";
  m.linear_biases = n.bool_or("linear_biases", false);
  m.norm = n.enum_or("norm", {"layernorm", "rmsnorm"}, "layernorm");
  // A model's sources may also carry notes (e.g. "check": the parameter count against the
  // paper), so only their form is checked: an object of texts.
  if (const auto sources = n.find("sources")) {
    sources->require_object();
    for (const auto& [key, value] : sources->members()) value.as_string();
  }
  input::read_model_blocks(n, m);
  check_model_heads(n, m);
  return m;
}

// The GPU's kernel-efficiency file, resolved against the data root; "" = the default.
std::string gpu_compute_calibration(const JsonNode& n) {
  const std::string given = n.string_or("compute_calibration", "");
  if (given.empty()) return given;
  const std::string resolved = resolve_data_path(given);
  if (!std::filesystem::exists(resolved)) {
    n.fail_at("compute_calibration", "compute calibration file \"" + given + "\" does not exist");
  }
  return resolved;
}

GpuSpec gpu_from_object(const JsonNode& n) {
  n.only_keys({"name", "description", "peak_tflops", "hbm_GB", "hbm_TBps", "nvlink_GBps",
               "pcie_GBps", "kernel_launch_us", "sm_count", "tdp_W", "compute_calibration",
               "sources"});
  require_sources(n, {"peak_tflops", "hbm_GB", "hbm_TBps", "nvlink_GBps", "pcie_GBps",
                      "kernel_launch_us", "sm_count", "tdp_W"});
  GpuSpec g;
  g.name = n.string_at("name");
  const JsonNode peaks = n.at("peak_tflops");
  peaks.only_keys(kDtypeNames.names());
  for (const auto& [key, value] : peaks.members()) {
    g.peak_flops[kDtypeNames.value(key)] =
        value.as_number_in(kMinPeakFlops / kTflops, kMaxPeakFlops / kTflops) * kTflops;
  }
  if (!peaks.has("bf16")) peaks.fail_at("bf16", "a bf16 peak is required");
  g.hbm_bytes = figure_at(n, "hbm_GB", kGB, kMinMemoryBytes, kMaxMemoryBytes);
  g.hbm_Bps = figure_at(n, "hbm_TBps", kTB, kMinBandwidth_Bps, kMaxBandwidth_Bps);
  g.nvlink_Bps = figure_at(n, "nvlink_GBps", kGB, kMinBandwidth_Bps, kMaxBandwidth_Bps);
  g.pcie_Bps = figure_at(n, "pcie_GBps", kGB, kMinBandwidth_Bps, kMaxBandwidth_Bps);
  g.kernel_launch_s = figure_at(n, "kernel_launch_us", kUs, 0, kMaxLatency_s);
  if (n.has("sm_count")) {
    g.sm_count = static_cast<int>(n.int_at("sm_count", 1, 1 << 16));
  }
  if (n.has("tdp_W")) n.number_in_at("tdp_W", 1, kMaxPowerW);
  g.compute_calibration = gpu_compute_calibration(n);
  return g;
}

// Links carry no latency: NCCL's cost model, which times every operation, counts the
// network's in its NET hardware latencies (sim/README.md). A fabric latency would count it
// twice or, as it did, change nothing; it is refused with the reason.
void refuse_fabric_latencies(const JsonNode& f) {
  for (const char* key : {"nic_latency_us", "switch_latency_us"}) {
    if (f.has(key)) {
      f.fail_at(key, std::string("\"") + key +
                         "\" is not accepted: NCCL's cost model, which times every operation, "
                         "already counts the network's latency (its NET hardware latencies "
                         "cover NICs, cables and switches; links carry none, sim/README.md), so "
                         "a fabric latency would change nothing; remove the key");
    }
  }
}

// `leaf_downlinks_per_node`: the NICs of a node on one leaf (1 on a rail-optimized fabric).
FabricSpec fabric_from_object(const JsonNode& f, int leaf_downlinks_per_node) {
  refuse_fabric_latencies(f);
  f.only_keys({"kind", "nodes_per_leaf", "oversubscription", "sources"});
  if (const auto sources = f.find("sources")) check_sources(f, *sources);
  FabricSpec fabric;
  fabric.kind = input::enum_at(f, "kind", kFabricNames);
  fabric.nodes_per_leaf = static_cast<int>(f.int_at("nodes_per_leaf", 1, 1 << 20));
  if (std::int64_t(fabric.nodes_per_leaf) * leaf_downlinks_per_node > kMaxLeafDownlinks) {
    f.fail_at("nodes_per_leaf",
              std::to_string(fabric.nodes_per_leaf) + " nodes x " +
                  std::to_string(leaf_downlinks_per_node) + " NICs per leaf exceed the " +
                  std::to_string(kMaxLeafDownlinks) +
                  " downlinks of the largest switch (Broadcom Tomahawk 5: 512 ports)");
  }
  fabric.oversubscription = f.positive_or("oversubscription", 1.0);
  if (fabric.oversubscription < 1 || fabric.oversubscription > kMaxOversubscription) {
    f.fail_at("oversubscription", "oversubscription " + f.at("oversubscription").describe() +
                                      " must be between 1 (non-blocking) and 1000");
  }
  return fabric;
}

void check_nics(const JsonNode& n, const ClusterSpec& c) {
  if (c.rail_optimized && c.nics_per_node != c.gpus_per_node) {
    n.fail_at("rail_optimized", "a rail-optimized fabric needs one NIC per GPU, but the node has " +
                                    std::to_string(c.nics_per_node) + " NICs for " +
                                    std::to_string(c.gpus_per_node) + " GPUs");
  }
  if (c.gpus_per_node % c.nics_per_node != 0 && c.nics_per_node % c.gpus_per_node != 0) {
    n.fail_at("nics_per_node", std::to_string(c.nics_per_node) +
                                   " NICs cannot be shared evenly by " +
                                   std::to_string(c.gpus_per_node) + " GPUs");
  }
}

// The cluster's network calibration file: relative to the data directory, else to the working
// directory; "" = none.
std::string cluster_calibration(const JsonNode& n) {
  const std::string given = n.string_or("calibration", "");
  if (given.empty()) return given;
  const std::string in_data = resolve_data_path(given);
  if (std::filesystem::exists(in_data)) return in_data;
  if (!std::filesystem::exists(given)) {
    n.fail_at("calibration", "calibration file \"" + given + "\" does not exist");
  }
  return given;
}

ClusterSpec cluster_from_object(const JsonNode& n) {
  n.only_keys({"name", "description", "source", "gpu", "nodes", "gpus_per_node", "nvlink_GBps",
               "nvlink_latency_us", "nics_per_node", "nic_Gbps", "rail_optimized", "gpudirect_rdma",
               "fabric", "calibration", "sources"});
  require_sources(n, {"nodes", "gpus_per_node", "nvlink_GBps", "nvlink_latency_us", "nics_per_node",
                      "nic_Gbps"});
  ClusterSpec c;
  c.name = n.string_at("name");
  c.source = n.string_or("source", n.string_or("description", ""));
  c.gpu = load_gpu(n.at("gpu"));
  c.nodes = static_cast<int>(n.int_at("nodes", 1, 1 << 20));
  c.gpus_per_node = static_cast<int>(n.int_at("gpus_per_node", 1, 1024));
  c.nvlink_Bps = n.has("nvlink_GBps")
                     ? figure_at(n, "nvlink_GBps", kGB, kMinBandwidth_Bps, kMaxBandwidth_Bps)
                     : c.gpu.nvlink_Bps;
  c.nvlink_latency_s = figure_at(n, "nvlink_latency_us", kUs, 0, kMaxLatency_s);
  c.nics_per_node = static_cast<int>(n.int_at("nics_per_node", 1, 1024));
  c.nic_Bps = figure_at(n, "nic_Gbps", kGbit, kMinBandwidth_Bps, kMaxBandwidth_Bps);
  c.rail_optimized = n.bool_or("rail_optimized", false);
  c.gpudirect_rdma = n.bool_or("gpudirect_rdma", true);
  check_nics(n, c);
  c.fabric = fabric_from_object(n.at("fabric"), c.rail_optimized ? 1 : c.nics_per_node);
  c.calibration = cluster_calibration(n);
  return c;
}

}  // namespace

std::vector<std::string> preset_names(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(data_root() + "/" + folder, ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

ModelSpec load_model(const JsonNode& node) {
  return by_name_or_inline<ModelSpec>(node, "models/presets", "model", model_from_object);
}

GpuSpec load_gpu(const JsonNode& node) {
  return by_name_or_inline<GpuSpec>(node, "topologies/gpus", "GPU", gpu_from_object);
}

ClusterSpec load_cluster(const JsonNode& node) {
  return by_name_or_inline<ClusterSpec>(node, "topologies/clusters", "cluster",
                                        cluster_from_object);
}

ModelSpec load_model_preset(const std::string& name) {
  const JsonDocument doc = JsonDocument::parse(nlohmann::json(name).dump(), "<model name>");
  return load_model(doc.root());
}

ClusterSpec load_cluster_preset(const std::string& name) {
  const JsonDocument doc = JsonDocument::parse(nlohmann::json(name).dump(), "<cluster name>");
  return load_cluster(doc.root());
}

}  // namespace clustersim
