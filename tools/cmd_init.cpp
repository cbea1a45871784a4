// `clustersim init [--model M] [--cluster C] [--gpus N] [-o FILE]`: writes a starting scenario
// with every key that has a default written out at that default, so that a user sees what can be
// changed. The defaults are not restated here: a minimal scenario is loaded, and what the loader
// made of it is written back, in the order of the loader's key tables (input/input_keys.hpp).
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/errors.hpp"
#include "core/json_reader.hpp"
#include "core/units.hpp"
#include "input/input_keys.hpp"
#include "input/scenario_loader.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"

namespace clustersim::cli {

namespace {

using Json = nlohmann::ordered_json;

// The seed's model and cluster, as `run` and `check` use them without a scenario.
constexpr const char* kStartModel = "llama2-70b";
constexpr const char* kStartCluster = "h800-128x8-rail";
// About the seed's batch: 1024 sequences of 4096 tokens (Llama 2: 4M tokens per step,
// arXiv 2307.09288 Table 1), rounded up to whole data-parallel ranks.
constexpr std::int64_t kStartGlobalBatch = 1024;
constexpr int kStartSeqLen = 4096;

const std::vector<OptionSpec>& init_options() {
  static const std::vector<OptionSpec> specs = {
      {"model", "", true, false, "a model preset (default llama2-70b)"},
      {"cluster", "", true, false, "a cluster preset (default h800-128x8-rail)"},
      {"gpus", "", true, false, "GPUs of the job (default: the whole cluster)"},
      {"output", "o", true, false, "write the scenario to FILE instead of standard output"},
  };
  return specs;
}

// A scenario of these presets with tensor parallelism `tp` and data parallelism for the rest.
Json minimal_with_tp(const std::string& model, int max_seq_len, const std::string& cluster,
                     int gpus, int tp) {
  const std::int64_t dp = gpus / tp;
  return {{"name", "start"},
          {"description",
           "A starting scenario written by `clustersim init`, every key with a default written "
           "at it: `clustersim schema` says what each key means, `clustersim check FILE` "
           "validates the file."},
          {"model", model},
          {"cluster", cluster},
          {"gpus", gpus},
          {"parallelism", {{"tp", tp}}},
          {"training",
           {{"global_batch", (kStartGlobalBatch + dp - 1) / dp * dp},
            {"micro_batch", 1},
            {"seq_len", std::min(kStartSeqLen, max_seq_len)}}}};
}

// The smallest scenario the loader accepts for these presets, with the widest tensor
// parallelism inside a node that the loader's rules (input/scenario_rules.cpp) allow; tp 1 when
// none wider is accepted, whose errors are then the user's.
Json minimal_scenario(const std::string& model, const std::string& cluster, int gpus) {
  const int max_seq_len = load_model_preset(model).max_seq_len;
  const int per_node = load_cluster_preset(cluster).gpus_per_node;
  for (int tp = std::min(per_node, gpus); tp > 1; --tp) {
    if (gpus % tp != 0) continue;
    const Json doc = minimal_with_tp(model, max_seq_len, cluster, gpus, tp);
    try {
      input::parse_scenario(JsonDocument::parse(doc.dump(), "<clustersim init>"));
      return doc;
    } catch (const ConfigError&) {
      // A width the model or the layout rules refuse: try the next narrower one.
    }
  }
  return minimal_with_tp(model, max_seq_len, cluster, gpus, 1);
}

// `values` in the order of `keys`, leaving out what it does not set.
Json in_table_order(const input::ObjectSpec& keys, const Json& values) {
  Json out = Json::object();
  for (const auto& name : keys.names()) {
    if (values.contains(name)) out[name] = values[name];
  }
  return out;
}

Json parallelism_json(const Scenario& s) {
  const Parallelism& p = s.parallelism;
  Json out = {{"dp", p.dp},
              {"tp", p.tp},
              {"pp", p.pp},
              {"cp", p.cp},
              {"vpp", p.vpp},
              {"sequence_parallel", p.sequence_parallel},
              {"pipeline_scatter_gather", p.pipeline_scatter_gather},
              {"zero_stage", p.zero_stage},
              {"schedule", to_string(p.schedule)},
              {"account_for_embedding_in_pipeline_split", p.embedding_in_pipeline_split},
              {"account_for_loss_in_pipeline_split", p.loss_in_pipeline_split}};
  if (p.cp > 1) out["cp_implementation"] = to_string(p.cp_implementation);
  if (s.model.moe) {
    out["ep"] = p.ep;
    out["etp"] = p.expert_tp();
  }
  return in_table_order(input::parallelism_keys(), out);
}

Json training_json(const Scenario& s) {
  const Training& t = s.training;
  Json out = {{"global_batch", t.global_batch},
              {"micro_batch", t.micro_batch},
              {"seq_len", t.seq_len},
              {"precision", to_string(t.precision)},
              {"recompute", to_string(t.recompute)},
              {"dropout", t.dropout},
              {"attention", to_string(t.attention)},
              {"tp_comm_overlap", t.tp_comm_overlap},
              {"tp_async_backward", t.tp_async_backward},
              {"overlap_p2p_comm", t.overlap_p2p_comm},
              {"overlap_grad_reduce", t.overlap_grad_reduce},
              {"overlap_param_gather", t.overlap_param_gather},
              {"grad_bucket_MiB", t.grad_bucket_bytes / kMiB},
              {"grad_reduce", t.reduce_per_micro_batch ? "per_micro_batch" : "per_step"},
              {"optimizer_state_dtype", to_string(t.optimizer_state_dtype)},
              {"optimizer_moments_dtype", to_string(t.optimizer_moments_dtype)}};
  if (t.recompute != Recompute::full) out["recompute_modules"] = Json::array();
  out["fp8_activation_cache"] = t.fp8_activation_cache;
  if (t.repeat_kv) out["repeat_kv"] = true;
  if (t.tp_comm_overlap) {
    out["tp_comm_overlap_implementation"] = to_string(t.tp_comm_overlap_implementation);
  }
  out["kernel_fusion"] = to_string(t.kernel_fusion);
  if (t.cuda_graphs != CudaGraphs::none) out["cuda_graphs"] = to_string(t.cuda_graphs);
  out["cross_entropy"] = to_string(t.cross_entropy);
  out["grad_accumulation"] = to_string(t.grad_accumulation);
  out["optimizer_kernels"] = to_string(t.optimizer_kernels);
  if (t.precision == Dtype::fp8) {
    out["fp8_recipe"] = to_string(t.fp8_recipe);
    out["fp8_gradient_gather"] = t.fp8_gradient_gather;
    out["fp8_param_gather"] = t.fp8_param_gather;
  }
  if (s.model.moe) {
    out["moe_dispatcher"] = to_string(t.moe_dispatcher);
    out["moe_expert_gemm"] = to_string(t.moe_expert_gemm);
    out["moe_comm_overlap"] = t.moe_comm_overlap;
    out["moe_comm_sms"] = t.moe_comm_sms;
  }
  return in_table_order(input::training_keys(), out);
}

Json comm_json(const Scenario& s) {
  return in_table_order(input::comm_keys(), {{"grad_dtype", to_string(s.comm.grad_dtype)},
                                             {"compression", to_string(s.comm.compression.kind)},
                                             {"fp32_layer_groups", s.comm.fp32_layer_groups},
                                             {"nccl", Json::object()}});
}

// The options may ask for what no scenario can be (GPUs that do not fill whole nodes): a usage
// error with the loader's reason.
Scenario load_text(const std::string& text) {
  try {
    return input::parse_scenario(JsonDocument::parse(text, "<clustersim init>"));
  } catch (const ConfigError& e) {
    throw UsageError("no starting scenario for these options: " + e.pointer() + ": " + e.message());
  }
}

// The starting scenario: the minimal one with every default the loader filled in written out,
// loaded once more to be sure the result is accepted as written.
std::string starting_scenario(const std::string& model, const std::string& cluster, int gpus) {
  Json doc = minimal_scenario(model, cluster, gpus);
  const Scenario s = load_text(doc.dump());
  doc["parallelism"] = parallelism_json(s);
  doc["training"] = training_json(s);
  doc["comm"] = comm_json(s);
  const std::string text = doc.dump(2) + "\n";
  load_text(text);
  return text;
}

}  // namespace

std::string usage_init() {
  return "usage: clustersim init [--model M] [--cluster C] [--gpus N] [-o FILE]\n\n"
         "Writes a starting scenario that `clustersim check` accepts: the model and cluster\n"
         "presets, tensor parallelism inside a node as wide as the model allows, the rest data\n"
         "parallel, about 1024 sequences of up to 4096 tokens per step, and every key that has a\n"
         "default written out at it, so that you see what you can change (`clustersim schema`\n"
         "says what each key means).\n\n" +
         describe_options(init_options());
}

int cmd_init(const std::vector<std::string>& argv) {
  const Args args(argv, init_options(), 0);
  const std::string model = args.value_or("model", kStartModel);
  const std::string cluster = args.value_or("cluster", kStartCluster);
  OutputFiles outputs;
  const auto path = args.value("output");
  if (path) outputs.declare(*path);
  const long long total = load_cluster_preset(cluster).total_gpus();
  const long long gpus = args.int_or("gpus", total);
  if (gpus < 1 || gpus > total) {
    throw UsageError("--gpus must be in 1.." + std::to_string(total) + " (cluster \"" + cluster +
                     "\")");
  }
  const std::string text = starting_scenario(model, cluster, static_cast<int>(gpus));
  if (!path) {
    std::cout << text;
    return 0;
  }
  outputs.set(*path, text);
  outputs.commit();
  return 0;
}

}  // namespace clustersim::cli
