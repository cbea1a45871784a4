#include "core/scenario_loader.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <numeric>

namespace clustersim {

namespace {

constexpr double kGB = 1e9;               // bytes, decimal (datasheets)
constexpr double kTB = 1e12;              // bytes, decimal
constexpr double kMiB = 1024.0 * 1024.0;  // bytes
constexpr double kGbit = 1e9 / 8.0;       // bytes in a gigabit
constexpr double kUs = 1e-6;              // seconds
constexpr double kTflops = 1e12;          // FLOP/s
// Megatron-LM's default DDP bucket: 40M parameters (distributed.py, bucket_size = 40000000);
// in BF16 gradients that is 80 MB.
constexpr double kDefaultGradBucketBytes = 40e6 * 2.0;

const std::vector<std::string> kDtypeNames = {"fp32", "tf32", "bf16", "fp16", "fp8"};

Dtype parse_dtype(const std::string& s) {
  if (s == "fp32") return Dtype::fp32;
  if (s == "tf32") return Dtype::tf32;
  if (s == "bf16") return Dtype::bf16;
  if (s == "fp16") return Dtype::fp16;
  return Dtype::fp8;
}

// Every numeric key of a preset must be cited in its "sources" object.
void require_sources(const JsonNode& node, const std::vector<std::string>& numeric_keys) {
  const JsonNode sources = node.at("sources");
  sources.require_object();
  for (const auto& [key, value] : sources.members()) {
    value.as_string();
    if (!node.has(key)) {
      value.fail("cites \"" + key + "\", which this file does not set");
    }
  }
  for (const auto& key : numeric_keys) {
    if (node.has(key) && !sources.has(key)) {
      node.fail_at(key, "\"" + key + "\" has no citation in \"sources\"");
    }
  }
}

std::string preset_path(const std::string& folder, const std::string& name) {
  return data_root() + "/" + folder + "/" + name + ".json";
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
  const auto names = preset_names(folder);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string message = std::string("no ") + what + " preset named \"" + name + "\"";
    const std::string suggestion = nearest_name(name, names);
    if (!suggestion.empty()) {
      message += "; did you mean \"" + suggestion + "\"?";
    } else {
      message += "; available: " + join_names(names);
    }
    node.fail(message);
  }
  const JsonDocument doc = JsonDocument::load(preset_path(folder, name));
  return load_object(doc.root());
}

ModelSpec model_from_object(const JsonNode& n) {
  n.only_keys({"name", "source", "description", "num_layers", "hidden_size", "num_attention_heads",
               "num_kv_heads", "ffn_hidden_size", "vocab_size", "max_seq_len", "ffn",
               "tied_embeddings", "position_embeddings", "linear_biases", "norm", "sources"});
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
  const std::string ffn = n.enum_or("ffn", {"gelu", "swiglu", "squared_relu"}, "gelu");
  m.ffn = ffn == "gelu" ? FfnKind::gelu : ffn == "swiglu" ? FfnKind::swiglu : FfnKind::squared_relu;
  m.tied_embeddings = n.bool_or("tied_embeddings", false);
  m.learned_position_embeddings =
      n.enum_or("position_embeddings", {"learned", "rope"}, "rope") == "learned";
  m.linear_biases = n.bool_or("linear_biases", false);
  m.norm = n.enum_or("norm", {"layernorm", "rmsnorm"}, "layernorm");
  if (m.hidden % m.num_heads != 0) {
    n.fail_at("num_attention_heads", std::to_string(m.num_heads) +
                                         " attention heads do not divide hidden_size " +
                                         std::to_string(m.hidden));
  }
  if (m.num_heads % m.num_kv_heads != 0) {
    n.fail_at("num_kv_heads", std::to_string(m.num_kv_heads) + " KV heads do not divide the " +
                                  std::to_string(m.num_heads) + " attention heads");
  }
  return m;
}

// A data file named in a preset: absolute, or relative to the data root.
std::string resolve_data_path(const std::string& path) {
  return std::filesystem::path(path).is_absolute() ? path : data_root() + "/" + path;
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
  peaks.only_keys(kDtypeNames);
  for (const auto& [key, value] : peaks.members()) {
    g.peak_flops[parse_dtype(key)] = value.as_positive() * kTflops;
  }
  if (!peaks.has("bf16")) peaks.fail_at("bf16", "a bf16 peak is required");
  g.hbm_bytes = n.positive_at("hbm_GB") * kGB;
  g.hbm_Bps = n.positive_at("hbm_TBps") * kTB;
  g.nvlink_Bps = n.positive_at("nvlink_GBps") * kGB;
  g.pcie_Bps = n.positive_at("pcie_GBps") * kGB;
  g.kernel_launch_s = n.non_negative_at("kernel_launch_us") * kUs;
  if (n.has("sm_count")) {
    g.sm_count = static_cast<int>(n.int_at("sm_count", 1, 1 << 16));
  }
  if (n.has("tdp_W")) n.at("tdp_W").as_positive();
  g.compute_calibration = n.string_or("compute_calibration", "");
  if (!g.compute_calibration.empty()) {
    const std::string resolved = resolve_data_path(g.compute_calibration);
    if (!std::filesystem::exists(resolved)) {
      n.fail_at("compute_calibration",
                "compute calibration file \"" + g.compute_calibration + "\" does not exist");
    }
    g.compute_calibration = resolved;
  }
  return g;
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
  c.nvlink_Bps = n.positive_or("nvlink_GBps", c.gpu.nvlink_Bps / kGB) * kGB;
  c.nvlink_latency_s = n.non_negative_at("nvlink_latency_us") * kUs;
  c.nics_per_node = static_cast<int>(n.int_at("nics_per_node", 1, 1024));
  c.nic_Bps = n.positive_at("nic_Gbps") * kGbit;
  c.rail_optimized = n.bool_or("rail_optimized", false);
  c.gpudirect_rdma = n.bool_or("gpudirect_rdma", true);
  c.calibration = n.string_or("calibration", "");
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
  const JsonNode f = n.at("fabric");
  f.only_keys({"kind", "nodes_per_leaf", "oversubscription", "nic_latency_us", "switch_latency_us",
               "sources"});
  f.enum_at("kind", {"fat_tree"});
  c.fabric.kind = FabricKind::fat_tree;
  c.fabric.nodes_per_leaf = static_cast<int>(f.int_at("nodes_per_leaf", 1, 1 << 20));
  c.fabric.oversubscription = f.positive_or("oversubscription", 1.0);
  if (c.fabric.oversubscription < 1) {
    f.fail_at("oversubscription", "oversubscription " + f.at("oversubscription").describe() +
                                      " must be at least 1 (1 = non-blocking)");
  }
  c.fabric.nic_latency_s = f.non_negative_at("nic_latency_us") * kUs;
  c.fabric.switch_latency_s = f.non_negative_at("switch_latency_us") * kUs;
  if (!c.calibration.empty()) {
    // Relative to the data directory, else to the working directory.
    const std::string in_data = resolve_data_path(c.calibration);
    if (std::filesystem::exists(in_data)) {
      c.calibration = in_data;
    } else if (!std::filesystem::exists(c.calibration)) {
      n.fail_at("calibration", "calibration file \"" + c.calibration + "\" does not exist");
    }
  }
  return c;
}

Parallelism parse_parallelism(const JsonNode& n) {
  n.only_keys({"dp", "tp", "pp", "cp", "vpp", "sequence_parallel", "zero_stage",
               "zero3_implementation", "schedule", "layers_per_stage",
               "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"});
  Parallelism p;
  p.dp = static_cast<int>(n.int_or("dp", 1, 1, 1 << 20));
  p.tp = static_cast<int>(n.int_or("tp", 1, 1, 1 << 12));
  p.pp = static_cast<int>(n.int_or("pp", 1, 1, 1 << 12));
  p.cp = static_cast<int>(n.int_or("cp", 1, 1, 1 << 12));
  p.vpp = static_cast<int>(n.int_or("vpp", 1, 1, 1 << 10));
  p.sequence_parallel = n.bool_or("sequence_parallel", false);
  p.zero_stage = static_cast<int>(n.int_or("zero_stage", 0, 0, 3));
  if (n.has("zero3_implementation")) {
    if (p.zero_stage != 3) {
      n.fail_at("zero3_implementation", "applies with \"zero_stage\": 3 only");
    }
    p.zero3_implementation =
        n.enum_or("zero3_implementation", {"fsdp", "deepspeed-2021"}, "fsdp") == "fsdp"
            ? Zero3Implementation::fsdp
            : Zero3Implementation::deepspeed_2021;
  }
  const std::string def = p.vpp > 1 ? "interleaved" : "1f1b";
  const std::string schedule = n.enum_or("schedule", {"1f1b", "interleaved", "gpipe"}, def);
  p.schedule = schedule == "1f1b"          ? PipelineSchedule::one_f_one_b
               : schedule == "interleaved" ? PipelineSchedule::interleaved
                                           : PipelineSchedule::gpipe;
  if (const auto layers = n.find("layers_per_stage")) {
    for (const auto& item : layers->items()) {
      p.layers_per_stage.push_back(static_cast<int>(item.as_int_in(1, 1 << 20)));
    }
  }
  p.embedding_in_pipeline_split = n.bool_or("account_for_embedding_in_pipeline_split", false);
  p.loss_in_pipeline_split = n.bool_or("account_for_loss_in_pipeline_split", false);
  return p;
}

Training parse_training(const JsonNode& n) {
  n.only_keys({"global_batch", "micro_batch", "seq_len", "tokens_total", "precision", "recompute",
               "recompute_layers", "dropout", "attention", "tp_comm_overlap", "tp_comm_overlap_sms",
               "overlap_grad_reduce", "overlap_param_gather", "grad_bucket_MiB", "grad_reduce",
               "optimizer_state_dtype"});
  Training t;
  t.global_batch = n.int_at("global_batch", 1, std::int64_t(1) << 40);
  t.micro_batch = n.int_at("micro_batch", 1, std::int64_t(1) << 30);
  t.seq_len = static_cast<int>(n.int_at("seq_len", 1, 1 << 26));
  t.tokens_total = n.positive_or("tokens_total", 0.0);
  t.precision = parse_dtype(n.enum_or("precision", {"bf16", "fp16", "fp8"}, "bf16"));
  const std::string r = n.enum_or("recompute", {"none", "selective", "full"}, "none");
  t.recompute = r == "none"        ? Recompute::none
                : r == "selective" ? Recompute::selective
                                   : Recompute::full;
  if (n.has("recompute_layers")) {
    if (t.recompute != Recompute::full) {
      n.fail_at("recompute_layers",
                "recompute_layers applies to full recomputation (\"recompute\": \"full\") only");
    }
    t.recompute_layers = static_cast<int>(n.int_at("recompute_layers", 1, 1 << 20));
  }
  t.dropout = n.bool_or("dropout", true);
  t.attention = n.enum_or("attention", {"flash", "unfused"}, "flash") == "flash"
                    ? AttentionKernel::flash
                    : AttentionKernel::unfused;
  t.tp_comm_overlap = n.bool_or("tp_comm_overlap", false);
  if (const auto sms = n.find("tp_comm_overlap_sms")) {
    if (!t.tp_comm_overlap) {
      n.fail_at("tp_comm_overlap_sms", "applies with \"tp_comm_overlap\": true only");
    }
    sms->require_object();
    sms->only_keys({"proj_fprop", "fc2_fprop"});
    t.tp_overlap_proj_fprop_sms = static_cast<int>(sms->int_or("proj_fprop", 0, 0, 1 << 16));
    t.tp_overlap_fc2_fprop_sms = static_cast<int>(sms->int_or("fc2_fprop", 0, 0, 1 << 16));
  }
  t.optimizer_state_dtype =
      parse_dtype(n.enum_or("optimizer_state_dtype", {"fp32", "bf16"}, "fp32"));
  t.overlap_grad_reduce = n.bool_or("overlap_grad_reduce", true);
  t.overlap_param_gather = n.bool_or("overlap_param_gather", true);
  t.grad_bucket_bytes = n.positive_or("grad_bucket_MiB", kDefaultGradBucketBytes / kMiB) * kMiB;
  t.reduce_per_micro_batch =
      n.enum_or("grad_reduce", {"per_step", "per_micro_batch"}, "per_step") == "per_micro_batch";
  return t;
}

CommSpec parse_comm(const JsonNode& n) {
  n.only_keys({"grad_dtype", "compression", "fp32_layer_groups", "nccl"});
  CommSpec c;
  c.grad_dtype = parse_dtype(n.enum_or("grad_dtype", {"fp32", "bf16", "fp16", "fp8"}, "bf16"));
  if (const auto comp = n.find("compression")) {
    if (comp->is_string()) {
      c.compression.kind = comp->as_enum({"none", "onebit_adam"}) == "none"
                               ? Compression::none
                               : Compression::onebit_adam;
    } else {
      comp->only_keys({"kind", "warmup_fraction"});
      c.compression.kind = comp->enum_at("kind", {"none", "onebit_adam"}) == "none"
                               ? Compression::none
                               : Compression::onebit_adam;
      c.compression.warmup_fraction = comp->fraction_or("warmup_fraction", 0.0);
    }
    if (c.compression.kind == Compression::onebit_adam && !comp->is_string() &&
        !comp->has("warmup_fraction")) {
      comp->fail_at("warmup_fraction", "1-bit Adam needs a full-precision warm-up fraction");
    }
    if (c.compression.kind == Compression::onebit_adam && comp->is_string()) {
      // 1-bit Adam's paper warms up for 15-25% of BERT-Large pre-training (Tang et al. 2021, §5).
      c.compression.warmup_fraction = 0.15;
    }
  }
  if (const auto groups = n.find("fp32_layer_groups")) {
    for (const auto& item : groups->items()) {
      const std::string g = item.as_enum({"embedding", "lm_head"});
      if (std::find(c.fp32_layer_groups.begin(), c.fp32_layer_groups.end(), g) !=
          c.fp32_layer_groups.end()) {
        item.fail("\"" + g + "\" is listed twice");
      }
      c.fp32_layer_groups.push_back(g);
    }
  }
  if (const auto nccl = n.find("nccl")) c.nccl = parse_nccl_settings(*nccl);
  return c;
}

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

std::string plural(std::int64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

std::string data_root() {
  const char* env = std::getenv("CLUSTERSIM_DATA_DIR");
  return (env && *env) ? std::string(env) : std::string(CLUSTERSIM_DATA_DIR);
}

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
  s.parallelism = parse_parallelism(root.at("parallelism"));
  s.training = parse_training(root.at("training"));
  if (const auto comm = root.find("comm")) s.comm = parse_comm(*comm);
  s.faults = raw_section(root, "faults");
  s.checkpointing = raw_section(root, "checkpointing");
  s.cost = raw_section(root, "cost");
  s.campaign = raw_section(root, "campaign");
  s.warnings = s.comm.nccl.warnings;

  // Phase two needs the locations of the fields it checks; re-read them from the document.
  validate_scenario(s);
  return s;
}

void validate_scenario(Scenario& s) {
  // Cross-field errors point at the key that has to change. The document is re-parsed only to
  // report locations; the checks themselves use the structs.
  const std::string& file = s.file;
  auto fail = [&](const std::string& pointer, const std::string& message) {
    throw ConfigError(file, pointer, message);
  };
  const Parallelism& p = s.parallelism;
  const Training& t = s.training;
  const ModelSpec& m = s.model;
  const ClusterSpec& c = s.cluster;

  if (s.gpus > c.total_gpus()) {
    fail("/gpus", std::to_string(s.gpus) + " GPUs requested but cluster \"" + c.name +
                      "\" has only " + std::to_string(c.total_gpus()) + " (" +
                      plural(c.nodes, "node") + " x " + std::to_string(c.gpus_per_node) + ")");
  }
  if (s.gpus > c.gpus_per_node && s.gpus % c.gpus_per_node != 0) {
    fail("/gpus", std::to_string(s.gpus) + " GPUs do not fill whole nodes of " +
                      std::to_string(c.gpus_per_node) + " GPUs");
  }
  const std::int64_t product = std::int64_t(p.dp) * p.tp * p.pp * p.cp;
  if (product != s.gpus) {
    fail("/parallelism", "dp x tp x pp x cp = " + std::to_string(p.dp) + " x " +
                             std::to_string(p.tp) + " x " + std::to_string(p.pp) + " x " +
                             std::to_string(p.cp) + " = " + std::to_string(product) +
                             ", but the scenario uses " + std::to_string(s.gpus) + " GPUs");
  }
  if (m.num_heads % p.tp != 0) {
    fail("/parallelism/tp", "tp " + std::to_string(p.tp) + " does not divide the model's " +
                                std::to_string(m.num_heads) + " attention heads");
  }
  if (m.num_kv_heads % p.tp != 0 && p.tp % m.num_kv_heads != 0) {
    fail("/parallelism/tp", "tp " + std::to_string(p.tp) + " does not divide the model's " +
                                std::to_string(m.num_kv_heads) + " KV heads");
  }
  if (m.ffn_hidden % p.tp != 0) {
    fail("/parallelism/tp", "tp " + std::to_string(p.tp) + " does not divide ffn_hidden_size " +
                                std::to_string(m.ffn_hidden));
  }
  if (p.tp > c.gpus_per_node) {
    s.warnings.push_back("tp " + std::to_string(p.tp) + " spans nodes (" +
                         std::to_string(c.gpus_per_node) +
                         " GPUs per node): tensor-parallel traffic crosses the network");
  } else if (c.gpus_per_node % p.tp != 0) {
    fail("/parallelism/tp", "tp " + std::to_string(p.tp) + " does not divide " +
                                std::to_string(c.gpus_per_node) + " GPUs per node");
  }
  if (p.sequence_parallel && p.tp == 1) {
    fail("/parallelism/sequence_parallel", "sequence parallelism needs tp > 1");
  }
  if (p.vpp > 1 && p.pp == 1) {
    fail("/parallelism/vpp",
         "vpp " + std::to_string(p.vpp) + " (virtual pipeline stages) needs pp > 1");
  }
  if (p.vpp > 1 && p.schedule != PipelineSchedule::interleaved) {
    fail("/parallelism/schedule",
         std::string("vpp > 1 needs the \"interleaved\" schedule, not \"") + to_string(p.schedule) +
             "\"");
  }
  if (p.vpp == 1 && p.schedule == PipelineSchedule::interleaved) {
    fail("/parallelism/vpp", "the interleaved schedule needs vpp > 1");
  }
  const int split_extra = p.layers_added_to_split();
  const char* split_key = p.embedding_in_pipeline_split
                              ? "/parallelism/account_for_embedding_in_pipeline_split"
                              : "/parallelism/account_for_loss_in_pipeline_split";
  if (split_extra > 0) {
    const int chunks = p.pp * p.vpp;
    const int split_layers = m.num_layers + split_extra;
    if (!p.layers_per_stage.empty()) {
      fail(split_key,
           "cannot be combined with parallelism.layers_per_stage (Megatron-Core refuses "
           "it with an uneven split too)");
    }
    if (split_layers % chunks != 0) {
      fail(split_key, "the model's " + std::to_string(m.num_layers) + " layers + " +
                          std::to_string(split_extra) + " = " + std::to_string(split_layers) +
                          " do not split evenly over pp x vpp = " + std::to_string(chunks) +
                          " virtual stages");
    }
    if (split_layers / chunks <= (split_extra == 2 && chunks == 1 ? 2 : 1)) {
      fail(split_key, "leaves a virtual stage without a Transformer layer (" +
                          std::to_string(split_layers / chunks) +
                          " per virtual stage); the simulator needs at least one in each");
    }
  } else if (!p.layers_per_stage.empty()) {
    if (static_cast<int>(p.layers_per_stage.size()) != p.pp) {
      fail("/parallelism/layers_per_stage",
           "gives " + plural(static_cast<std::int64_t>(p.layers_per_stage.size()), "stage") +
               " but pp is " + std::to_string(p.pp));
    }
    const int sum = std::accumulate(p.layers_per_stage.begin(), p.layers_per_stage.end(), 0);
    if (sum != m.num_layers) {
      fail("/parallelism/layers_per_stage", "adds up to " + std::to_string(sum) +
                                                " layers but the model has " +
                                                std::to_string(m.num_layers));
    }
    if (p.vpp > 1) {
      fail("/parallelism/layers_per_stage", "an uneven split cannot be combined with vpp > 1");
    }
  } else if (m.num_layers % (p.pp * p.vpp) != 0) {
    fail(p.vpp > 1 ? "/parallelism/vpp" : "/parallelism/pp",
         "pp x vpp = " + std::to_string(p.pp * p.vpp) + " does not divide the model's " +
             std::to_string(m.num_layers) +
             " layers; give parallelism.layers_per_stage for an "
             "uneven split");
  }
  if (t.tp_comm_overlap && !(p.tp > 1 && p.sequence_parallel)) {
    fail("/training/tp_comm_overlap",
         "TP communication overlap needs tp > 1 and sequence_parallel (it pipelines the "
         "sequence-parallel all-gathers and reduce-scatters with their GEMMs; Megatron-Bridge "
         "CommOverlapConfig refuses it otherwise)");
  }
  const int overlap_sms = std::max(t.tp_overlap_proj_fprop_sms, t.tp_overlap_fc2_fprop_sms);
  if (overlap_sms > 0 && overlap_sms >= c.gpu.sm_count) {
    fail("/training/tp_comm_overlap_sms",
         c.gpu.sm_count == 0
             ? "GPU " + c.gpu.name + " has no sm_count to take SMs from"
             : std::to_string(overlap_sms) + " SMs leave none of the " +
                   std::to_string(c.gpu.sm_count) + " of GPU " + c.gpu.name + " to the GEMM");
  }
  if (p.cp > 1 && t.attention == AttentionKernel::unfused) {
    fail("/training/attention",
         "context parallelism (cp " + std::to_string(p.cp) +
             ") needs \"flash\" attention: Megatron-LM's ring attention is built on fused "
             "attention kernels");
  }
  if (p.cp > 1 && t.seq_len % (2 * p.cp) != 0) {
    fail("/parallelism/cp", "cp " + std::to_string(p.cp) + " needs seq_len divisible by 2 x cp");
  }
  if (t.global_batch % (std::int64_t(p.dp) * t.micro_batch) != 0) {
    fail("/training/global_batch",
         "global batch " + std::to_string(t.global_batch) +
             " is not divisible by dp x micro_batch = " + std::to_string(p.dp) + " x " +
             std::to_string(t.micro_batch) + " = " +
             std::to_string(std::int64_t(p.dp) * t.micro_batch));
  }
  const std::int64_t micro_batches = s.micro_batches();
  if (p.schedule == PipelineSchedule::interleaved && micro_batches % p.pp != 0) {
    fail("/training/global_batch", "the interleaved schedule needs the " +
                                       plural(micro_batches, "micro-batch") +
                                       " per step to be a multiple of pp " + std::to_string(p.pp));
  }
  if (p.pp > 1 && micro_batches < p.pp) {
    s.warnings.push_back(
        plural(micro_batches, "micro-batch") + " per step for " + std::to_string(p.pp) +
        " pipeline stages: the pipeline never fills and most of the step is bubble");
  }
  if (t.seq_len > m.max_seq_len) {
    s.warnings.push_back("seq_len " + std::to_string(t.seq_len) +
                         " exceeds the model's trained context " + std::to_string(m.max_seq_len));
  }
  if (t.precision == Dtype::fp8 && !c.gpu.peak_flops.count(Dtype::fp8)) {
    fail("/training/precision", "GPU " + c.gpu.name + " has no FP8 tensor cores");
  }
  if (s.comm.compression.kind == Compression::onebit_adam && p.zero_stage > 1) {
    // 1-bit Adam compresses an all-reduce of the whole momentum with error feedback on every
    // rank (Tang et al. 2021, Alg. 1); ZeRO-2/3 replace that all-reduce by a reduce-scatter of
    // gradients into shards, so the two do not compose.
    fail("/comm/compression", "1-bit Adam cannot be combined with ZeRO stage " +
                                  std::to_string(p.zero_stage) +
                                  " (DeepSpeed supports it without "
                                  "ZeRO partitioning of gradients)");
  }
  if (s.comm.grad_dtype == Dtype::fp8 && s.comm.compression.kind == Compression::onebit_adam) {
    fail("/comm/grad_dtype", "fp8 gradients and 1-bit Adam are alternatives; choose one");
  }
  if (t.tokens_total > 0 && t.tokens_total < s.tokens_per_step()) {
    fail("/training/tokens_total", "the run's tokens_total is smaller than one step's " +
                                       std::to_string(static_cast<long long>(s.tokens_per_step())) +
                                       " tokens");
  }
}

}  // namespace clustersim
