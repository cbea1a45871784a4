#include "input/presets.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "core/data_root.hpp"
#include "core/units.hpp"
#include "input/input_keys.hpp"
#include "input/model_blocks.hpp"
#include "input/preset_limits.hpp"
#include "input/read_helpers.hpp"

namespace clustersim {

namespace {

using input::check_sources;
using input::require_sources;

using input::choice_at;
using input::choice_or;
using input::int_at;
using input::int_or;
using input::kMaxLeafDownlinks;
using input::number_at;
using input::read_number;

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

// Where a GPU or cluster object's citations stand: a preset file needs one for every number
// (uncited == nullptr); an object written inline in a scenario may leave numbers uncited, each
// recorded in *uncited.
struct Citations {
  std::vector<std::string>* uncited = nullptr;
};

// `n` cites the numbers of `keys` it sets, as `citations` requires.
void cite(const JsonNode& n, const std::vector<std::string>& keys, const Citations& citations) {
  if (!citations.uncited) return require_sources(n, keys);
  const auto sources = n.find("sources");
  if (sources) input::check_sources(n, *sources);
  for (const auto& key : keys) {
    if (n.has(key) && !(sources && sources->has(key))) {
      citations.uncited->push_back(
          "uncited (what-if): " + n.pointer() + "/" + json_pointer_escape(key) + " of \"" +
          n.string_or("name", "") +
          "\" has no citation in \"sources\"; results that depend on it are a what-if, not a "
          "prediction for real hardware");
    }
  }
}

// A node that is either a preset name or an inline object: returns the document to read. An
// inline object keeps `citations`; a preset file needs every citation.
template <typename T, typename Loader>
T by_name_or_inline(const JsonNode& node, const std::string& folder, const char* what,
                    Loader&& load_object, const Citations& citations = {}) {
  if (node.is_object()) return load_object(node, citations);
  if (!node.is_string()) {
    node.fail(std::string("expected a ") + what + " preset name or an inline object, got " +
              node.describe());
  }
  const std::string name = node.as_string();
  require_preset(node, folder, what, name);
  const JsonDocument doc = JsonDocument::load(preset_path(folder, name));
  return load_object(doc.root(), Citations{});
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
  const input::ObjectSpec& keys = input::model_keys();
  only_table_keys(n, keys);
  ModelSpec m;
  m.name = n.string_at("name");
  m.source = n.string_or("source", "");
  m.num_layers = static_cast<int>(int_at(n, keys, "num_layers"));
  m.hidden = static_cast<int>(int_at(n, keys, "hidden_size"));
  m.num_heads = static_cast<int>(int_at(n, keys, "num_attention_heads"));
  m.num_kv_heads = static_cast<int>(int_or(n, keys, "num_kv_heads", m.num_heads));
  m.ffn_hidden = static_cast<int>(int_at(n, keys, "ffn_hidden_size"));
  m.vocab = static_cast<int>(int_at(n, keys, "vocab_size"));
  m.max_seq_len = static_cast<int>(int_at(n, keys, "max_seq_len"));
  m.ffn = choice_or(n, keys, "ffn", kFfnNames, FfnKind::gelu);
  m.tied_embeddings = n.bool_or("tied_embeddings", false);
  m.learned_position_embeddings = choice_or(n, keys, "position_embeddings", "rope") == "learned";
  m.linear_biases = n.bool_or("linear_biases", false);
  m.trained_with_dropout = n.bool_or("dropout", true);
  m.norm = choice_or(n, keys, "norm", "layernorm");
  // Besides its keys, a model's sources may carry the notes "check" (the parameter count
  // against the publication) and "also_in" (another place the same figures appear).
  if (const auto sources = n.find("sources")) {
    check_sources(n, *sources, {"check", "also_in"}, "model");
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

GpuSpec gpu_from_object(const JsonNode& n, const Citations& citations) {
  const input::ObjectSpec& keys = input::gpu_keys();
  only_table_keys(n, keys);
  // The peaks are cited as one object; every other figure by its key.
  std::vector<std::string> cited = {"peak_tflops"};
  for (const auto& key : keys.number_names()) cited.push_back(key);
  cite(n, cited, citations);
  GpuSpec g;
  g.name = n.string_at("name");
  const JsonNode peaks = n.at("peak_tflops");
  const input::ObjectSpec& peak_keys = input::peak_tflops_keys();
  only_table_keys(peaks, peak_keys);
  for (const auto& [key, value] : peaks.members()) {
    g.peak_flops[kDtypeNames.value(key)] = read_number(value, peak_keys.key(key)) * kTflops;
  }
  if (!peaks.has("bf16")) peaks.fail_at("bf16", "a bf16 peak is required");
  g.hbm_bytes = number_at(n, keys, "hbm_GB") * kGB;
  if (n.has("hbm_reported_GiB"))
    g.reported_memory_bytes = number_at(n, keys, "hbm_reported_GiB") * kGiB;
  g.hbm_Bps = number_at(n, keys, "hbm_TBps") * kTB;
  g.nvlink_Bps = number_at(n, keys, "nvlink_GBps") * kGB;
  g.pcie_Bps = number_at(n, keys, "pcie_GBps") * kGB;
  g.kernel_launch_s = number_at(n, keys, "kernel_launch_us") * kUs;
  if (n.has("host_us_per_kernel"))
    g.host_per_kernel_s = number_at(n, keys, "host_us_per_kernel") * kUs;
  if (n.has("sm_count")) g.sm_count = static_cast<int>(int_at(n, keys, "sm_count"));
  if (n.has("architecture")) g.architecture = choice_at(n, keys, "architecture", kGpuArchNames);
  if (n.has("tdp_W")) number_at(n, keys, "tdp_W");
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
  const input::ObjectSpec& keys = input::fabric_keys();
  only_table_keys(f, keys);
  if (const auto sources = f.find("sources")) check_sources(f, *sources);
  FabricSpec fabric;
  fabric.kind = choice_at(f, keys, "kind", kFabricNames);
  fabric.nodes_per_leaf = static_cast<int>(int_at(f, keys, "nodes_per_leaf"));
  if (std::int64_t(fabric.nodes_per_leaf) * leaf_downlinks_per_node > kMaxLeafDownlinks) {
    f.fail_at("nodes_per_leaf",
              std::to_string(fabric.nodes_per_leaf) + " nodes x " +
                  std::to_string(leaf_downlinks_per_node) + " NICs per leaf exceed the " +
                  std::to_string(kMaxLeafDownlinks) +
                  " downlinks of the largest switch (Broadcom Tomahawk 5: 512 ports)");
  }
  fabric.oversubscription = f.positive_or("oversubscription", 1.0);
  const input::KeySpec& range = keys.key("oversubscription");
  if (fabric.oversubscription < range.min || fabric.oversubscription > range.max) {
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

ClusterSpec cluster_from_object(const JsonNode& n, const Citations& citations) {
  const input::ObjectSpec& keys = input::cluster_keys();
  only_table_keys(n, keys);
  cite(n, keys.number_names(), citations);
  ClusterSpec c;
  c.name = n.string_at("name");
  c.source = n.string_or("source", n.string_or("description", ""));
  c.gpu =
      by_name_or_inline<GpuSpec>(n.at("gpu"), "topologies/gpus", "GPU", gpu_from_object, citations);
  c.nodes = static_cast<int>(int_at(n, keys, "nodes"));
  c.gpus_per_node = static_cast<int>(int_at(n, keys, "gpus_per_node"));
  c.nvlink_Bps = n.has("nvlink_GBps") ? number_at(n, keys, "nvlink_GBps") * kGB : c.gpu.nvlink_Bps;
  c.nvlink_latency_s = number_at(n, keys, "nvlink_latency_us") * kUs;
  c.nics_per_node = static_cast<int>(int_at(n, keys, "nics_per_node"));
  c.nic_Bps = number_at(n, keys, "nic_Gbps") * kGbit;
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
  return by_name_or_inline<ModelSpec>(
      node, "models/presets", "model",
      [](const JsonNode& n, const Citations&) { return model_from_object(n); });
}

GpuSpec load_gpu(const JsonNode& node) {
  return by_name_or_inline<GpuSpec>(node, "topologies/gpus", "GPU", gpu_from_object);
}

ClusterSpec load_cluster(const JsonNode& node) {
  return by_name_or_inline<ClusterSpec>(node, "topologies/clusters", "cluster",
                                        cluster_from_object);
}

ClusterSpec load_cluster(const JsonNode& node, std::vector<std::string>& uncited) {
  return by_name_or_inline<ClusterSpec>(node, "topologies/clusters", "cluster", cluster_from_object,
                                        Citations{&uncited});
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
