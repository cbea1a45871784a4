// Bad scenario input: every error is a ConfigError that names the file and the JSON pointer of
// the offending value, and where a name was mistyped, suggests the right one.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/json_reader.hpp"
#include "input/scenario_loader.hpp"

using namespace clustersim;
using nlohmann::json;

namespace {

// A valid scenario (the seed's optimized layout written inline) that each case breaks.
json base() {
  return json::parse(R"({
    "name": "bad", "model": "llama2-70b", "cluster": "h800-128x8-rail", "gpus": 1024,
    "parallelism": {"dp": 64, "tp": 8, "pp": 2, "sequence_parallel": true, "zero_stage": 1},
    "training": {"global_batch": 1024, "micro_batch": 1, "seq_len": 4096,
                 "tokens_total": 3.5e12, "recompute": "selective"},
    "comm": {"grad_dtype": "fp16", "fp32_layer_groups": ["embedding", "lm_head"],
             "nccl": {"NCCL_ALGO": "Ring", "NCCL_IB_TIMEOUT": 22}}
  })");
}

// Loads `doc` as file "bad.json"; requires a ConfigError at `pointer` whose message contains
// `fragment`. Returns the message for further checks.
std::string expect_error(const json& doc, const std::string& pointer, const std::string& fragment) {
  try {
    load_scenario(JsonDocument::parse(doc.dump(), "bad.json"));
  } catch (const ConfigError& e) {
    INFO(e.what());
    CHECK(e.file() == "bad.json");
    CHECK(e.pointer() == pointer);
    std::string where = "bad.json:";
    where += pointer.empty() ? std::string("/") : pointer;
    where += ": ";
    CHECK(std::string(e.what()).rfind(where, 0) == 0);
    CHECK(e.message().find(fragment) != std::string::npos);
    return e.message();
  }
  FAIL("no ConfigError for a document that should fail at " << pointer);
  return "";
}

json with(const json& patch) {
  json doc = base();
  doc.merge_patch(patch);
  return doc;
}

}  // namespace

TEST_CASE("the unbroken base scenario loads") {
  CHECK_NOTHROW(load_scenario(JsonDocument::parse(base().dump(), "ok.json")));
}

TEST_CASE("values of the wrong type are rejected at their path") {
  expect_error(with({{"gpus", "1024"}}), "/gpus", "1024");
  expect_error(with({{"parallelism", {{"tp", 8.5}}}}), "/parallelism/tp", "8.5");
  expect_error(with({{"parallelism", {{"sequence_parallel", "yes"}}}}),
               "/parallelism/sequence_parallel", "yes");
  expect_error(with({{"training", {{"seq_len", json::array({4096})}}}}), "/training/seq_len", "");
  expect_error(with({{"comm", {{"fp32_layer_groups", "embedding"}}}}), "/comm/fp32_layer_groups",
               "array");
  expect_error(with({{"parallelism", "dp64"}}), "/parallelism", "object");
}

TEST_CASE("unknown keys are rejected with the nearest valid name") {
  json doc = base();
  doc["modle"] = "llama2-70b";
  CHECK(expect_error(doc, "/modle", "unknown key").find("\"model\"") != std::string::npos);
  CHECK(expect_error(with({{"parallelism", {{"zero_stag", 1}}}}), "/parallelism/zero_stag",
                     "unknown key")
            .find("zero_stage") != std::string::npos);
  CHECK(
      expect_error(with({{"training", {{"micro_bach", 1}}}}), "/training/micro_bach", "unknown key")
          .find("micro_batch") != std::string::npos);
  CHECK(expect_error(with({{"comm", {{"nccl", {{"NCCL_ALOG", "Ring"}}}}}}), "/comm/nccl/NCCL_ALOG",
                     "")
            .find("NCCL_ALGO") != std::string::npos);
}

TEST_CASE("zero and negative values are rejected") {
  expect_error(with({{"gpus", -8}}), "/gpus", "-8");
  expect_error(with({{"gpus", 0}}), "/gpus", "0");
  expect_error(with({{"training", {{"global_batch", 0}}}}), "/training/global_batch", "0");
  expect_error(with({{"training", {{"micro_batch", -1}}}}), "/training/micro_batch", "-1");
  expect_error(with({{"training", {{"tokens_total", -3.5e12}}}}), "/training/tokens_total", "");
  expect_error(with({{"parallelism", {{"zero_stage", 4}}}}), "/parallelism/zero_stage", "4");
  expect_error(with({{"training", {{"recompute", "full"}, {"recompute_layers", 0}}}}),
               "/training/recompute_layers", "");
}

TEST_CASE("recompute_layers needs full recomputation") {
  // The base scenario recomputes selectively.
  expect_error(with({{"training", {{"recompute_layers", 5}}}}), "/training/recompute_layers",
               "full");
}

TEST_CASE("enumerations list their valid names") {
  expect_error(with({{"training", {{"recompute", "partial"}}}}), "/training/recompute",
               "selective");
  expect_error(with({{"training", {{"attention", "sdpa"}}}}), "/training/attention", "unfused");
  expect_error(with({{"parallelism", {{"schedule", "zigzag"}}}}), "/parallelism/schedule", "1f1b");
  expect_error(with({{"comm", {{"grad_dtype", "int8"}}}}), "/comm/grad_dtype", "fp16");
  expect_error(with({{"comm", {{"fp32_layer_groups", {"embedding", "attention"}}}}}),
               "/comm/fp32_layer_groups/1", "lm_head");
}

TEST_CASE("impossible layouts are rejected at the key to change") {
  SECTION("dp x tp x pp must equal the GPU count") {
    expect_error(with({{"parallelism", {{"dp", 32}}}}), "/parallelism", "1024");
  }
  SECTION("tp must divide the attention heads") {
    expect_error(with({{"gpus", 24},
                       {"parallelism", {{"dp", 8}, {"tp", 3}, {"pp", 1}}},
                       {"training", {{"global_batch", 1024}}}}),
                 "/parallelism/tp", "64 attention heads");
  }
  SECTION("pp must divide the layers unless a split is given") {
    expect_error(with({{"gpus", 96},
                       {"parallelism", {{"dp", 4}, {"tp", 8}, {"pp", 3}}},
                       {"training", {{"global_batch", 1024}}}}),
                 "/parallelism/pp", "80 layers");
  }
  SECTION("an uneven split must add up to the model's layers") {
    expect_error(with({{"parallelism", {{"layers_per_stage", {40, 41}}}}}),
                 "/parallelism/layers_per_stage", "81");
  }
  SECTION("with vpp > 1 an uneven split gives one entry per virtual stage") {
    const json interleaved = {{"vpp", 2}, {"schedule", "interleaved"}};
    json four = interleaved;
    four["layers_per_stage"] = {21, 20, 20, 19};
    CHECK_NOTHROW(
        load_scenario(JsonDocument::parse(with({{"parallelism", four}}).dump(), "ok.json")));
    json two = interleaved;
    two["layers_per_stage"] = {40, 40};
    expect_error(with({{"parallelism", two}}), "/parallelism/layers_per_stage",
                 "pp x vpp is 4 (one entry per virtual stage)");
  }
  SECTION("the embedding counted in the pipeline split must leave an even split") {
    // 80 layers + the embedding = 81 over pp 2.
    expect_error(with({{"parallelism", {{"account_for_embedding_in_pipeline_split", true}}}}),
                 "/parallelism/account_for_embedding_in_pipeline_split", "81");
    expect_error(
        with({{"parallelism",
               {{"account_for_loss_in_pipeline_split", true}, {"layers_per_stage", {40, 40}}}}}),
        "/parallelism/account_for_loss_in_pipeline_split", "layers_per_stage");
  }
  SECTION("sequence parallelism needs tensor parallelism") {
    expect_error(with({{"gpus", 128}, {"parallelism", {{"dp", 64}, {"tp", 1}, {"pp", 2}}}}),
                 "/parallelism/sequence_parallel", "tp > 1");
  }
  SECTION("virtual stages need a pipeline") {
    expect_error(
        with({{"gpus", 512},
              {"parallelism", {{"dp", 64}, {"pp", 1}, {"vpp", 2}, {"schedule", "interleaved"}}}}),
        "/parallelism/vpp", "pp > 1");
  }
  SECTION("more GPUs than the cluster has") {
    expect_error(with({{"gpus", 2048}, {"parallelism", {{"dp", 128}}}}), "/gpus", "1024");
  }
  SECTION("GPUs that do not fill whole nodes") {
    expect_error(
        with({{"gpus", 12},
              {"parallelism", {{"dp", 12}, {"tp", 1}, {"pp", 1}, {"sequence_parallel", false}}}}),
        "/gpus", "whole nodes");
  }
}

TEST_CASE("a global batch that does not split into micro-batches is rejected") {
  expect_error(with({{"training", {{"global_batch", 1000}}}}), "/training/global_batch", "64");
}

TEST_CASE("combinations that cannot run together are rejected") {
  expect_error(
      with({{"parallelism", {{"zero_stage", 3}}}, {"comm", {{"compression", "onebit_adam"}}}}),
      "/comm/compression", "ZeRO stage 3");
  expect_error(with({{"training", {{"tokens_total", 1000}}}}), "/training/tokens_total", "tokens");
  expect_error(with({{"cluster", "dgx-a100-sc21"}, {"training", {{"precision", "fp8"}}}}),
               "/training/precision", "FP8");
  expect_error(with({{"parallelism", {{"sequence_parallel", false}}},
                     {"training", {{"tp_comm_overlap", true}}}}),
               "/training/tp_comm_overlap", "sequence_parallel");
  expect_error(
      with({{"parallelism", {{"dp", 32}, {"cp", 2}}}, {"training", {{"attention", "unfused"}}}}),
      "/training/attention", "flash");
}

TEST_CASE("missing presets and required keys are named") {
  CHECK(expect_error(with({{"model", "llama2-71b"}}), "/model", "no model preset")
            .find("llama2-70b") != std::string::npos);
  expect_error(with({{"cluster", "h800-64x8"}}), "/cluster", "no cluster preset");
  json doc = base();
  doc.erase("training");
  expect_error(doc, "/training", "missing");
  doc = base();
  doc["training"].erase("seq_len");
  expect_error(doc, "/training/seq_len", "missing");
}

TEST_CASE("errors inside inline presets point into the scenario") {
  SECTION("KV heads that do not divide the attention heads") {
    json model = json::parse(R"({"name": "m", "num_layers": 4, "hidden_size": 512,
        "num_attention_heads": 8, "num_kv_heads": 3, "ffn_hidden_size": 2048,
        "vocab_size": 1000, "max_seq_len": 4096})");
    expect_error(with({{"model", model}}), "/model/num_kv_heads", "3 KV heads");
  }
  SECTION("a rail-optimized cluster needs a NIC per GPU") {
    json cluster = json::parse(R"({"name": "c", "gpu": "h800-sxm", "nodes": 128,
        "gpus_per_node": 8, "nvlink_latency_us": 3.33, "nics_per_node": 1, "nic_Gbps": 400,
        "rail_optimized": true,
        "fabric": {"kind": "fat_tree", "nodes_per_leaf": 32},
        "sources": {"nodes": "x", "gpus_per_node": "x", "nvlink_latency_us": "x",
                    "nics_per_node": "x", "nic_Gbps": "x"}})");
    expect_error(with({{"cluster", cluster}}), "/cluster/rail_optimized", "one NIC per GPU");
  }
  SECTION("an inline GPU number without a citation is a what-if, a missing file an error") {
    json gpu = json::parse(R"({"name": "g", "peak_tflops": {"bf16": 1000}, "hbm_GB": 80,
        "hbm_TBps": 3, "nvlink_GBps": 450, "pcie_GBps": 64, "kernel_launch_us": 4,
        "sources": {"peak_tflops": "x", "hbm_TBps": "x", "nvlink_GBps": "x", "pcie_GBps": "x",
                    "kernel_launch_us": "x"}})");
    json cluster = json::parse(R"({"name": "c", "nodes": 128,
        "gpus_per_node": 8, "nvlink_latency_us": 3.33, "nics_per_node": 8, "nic_Gbps": 400,
        "fabric": {"kind": "fat_tree", "nodes_per_leaf": 32},
        "sources": {"nodes": "x", "gpus_per_node": "x", "nvlink_latency_us": "x",
                    "nics_per_node": "x", "nic_Gbps": "x"}})");
    cluster["gpu"] = gpu;
    const Scenario s =
        load_scenario(JsonDocument::parse(with({{"cluster", cluster}}).dump(), "w.json"));
    REQUIRE(s.warnings.size() == 1);
    CHECK_THAT(s.warnings[0], Catch::Contains("uncited (what-if): /cluster/gpu/hbm_GB"));
    gpu["sources"]["hbm_GB"] = "x";
    gpu["compute_calibration"] = "validation/data/no-such-file.json";
    cluster["gpu"] = gpu;
    expect_error(with({{"cluster", cluster}}), "/cluster/gpu/compute_calibration",
                 "does not exist");
  }
}

TEST_CASE("NCCL settings out of NCCL's range are rejected at their variable") {
  expect_error(with({{"comm", {{"nccl", {{"NCCL_IB_TIMEOUT", 40}}}}}}),
               "/comm/nccl/NCCL_IB_TIMEOUT", "40");
  expect_error(with({{"comm", {{"nccl", {{"NCCL_ALGO", "Butterfly"}}}}}}), "/comm/nccl/NCCL_ALGO",
               "Butterfly");
}

TEST_CASE("malformed, empty and non-object documents name the file") {
  SECTION("malformed JSON reports line and column") {
    try {
      JsonDocument::parse("{\"gpus\": 8,\n \"model\": }", "bad.json");
      FAIL("malformed JSON parsed");
    } catch (const ConfigError& e) {
      CHECK(e.file() == "bad.json");
      CHECK(std::string(e.what()).find("line 2") != std::string::npos);
    }
  }
  SECTION("an empty document") {
    CHECK_THROWS_AS(JsonDocument::parse("", "empty.json"), ConfigError);
    CHECK_THROWS_WITH(JsonDocument::parse("  \n", "empty.json"),
                      Catch::Matchers::StartsWith("empty.json"));
  }
  SECTION("a missing file") {
    CHECK_THROWS_WITH(load_scenario("/nonexistent/dir/scenario.json"),
                      Catch::Matchers::Contains("/nonexistent/dir/scenario.json"));
  }
  SECTION("an array instead of an object") {
    expect_error(json::array({1, 2}), "", "object");
  }
}

TEST_CASE("Megatron-LM and NeMo key names are answered with the clustersim key they map to") {
  expect_error(with({{"parallelism", {{"tensor_model_parallel_size", 8}}}}),
               "/parallelism/tensor_model_parallel_size", "write \"tp\"");
  expect_error(with({{"parallelism", {{"use_distributed_optimizer", true}}}}),
               "/parallelism/use_distributed_optimizer", "\"zero_stage\": 1");
  expect_error(with({{"parallelism", {{"expert_model_parallel_size", 8}}}}),
               "/parallelism/expert_model_parallel_size", "write \"ep\"");
  expect_error(with({{"parallelism", {{"expert_tensor_parallel_size", 1}}}}),
               "/parallelism/expert_tensor_parallel_size", "write \"etp\"");
  expect_error(with({{"training", {{"micro_batch_size", 1}}}}), "/training/micro_batch_size",
               "write \"micro_batch\"");
  expect_error(with({{"training", {{"seq_length", 4096}}}}), "/training/seq_length",
               "write \"seq_len\"");
}

TEST_CASE("Without dp the data-parallel size is what tp, pp and cp leave of the GPUs") {
  json doc = base();
  doc["parallelism"].erase("dp");
  // 1024 GPUs / (tp 8 x pp 2 x cp 1) = 64.
  CHECK(load_scenario(JsonDocument::parse(doc.dump(), "ok.json")).parallelism.dp == 64);
  doc["parallelism"]["cp"] = 2;
  doc["training"]["global_batch"] = 512;
  CHECK(load_scenario(JsonDocument::parse(doc.dump(), "ok.json")).parallelism.dp == 32);
  // 1000 GPUs are not a multiple of 8 x 2 x 2: the layout rule says so.
  doc["gpus"] = 1000;
  expect_error(doc, "/parallelism", "uses 1000 GPUs");
}

TEST_CASE("An inline model's or fabric's sources are texts, and a fabric cites only its keys") {
  json doc = base();
  doc["model"] = json::parse(R"({"name": "m", "num_layers": 8, "hidden_size": 1024,
    "num_attention_heads": 8, "ffn_hidden_size": 4096, "vocab_size": 32000, "max_seq_len": 4096,
    "sources": {"vocab_size": null}})");
  doc["parallelism"] = {{"dp", 128}, {"tp", 8}, {"pp", 1}};
  expect_error(doc, "/model/sources/vocab_size", "");
  doc["model"]["sources"] = true;
  expect_error(doc, "/model/sources", "");
  // Found by the CLI mutation driver: a citation of a key the model does not have was accepted.
  doc["model"]["sources"] = {{"vocab_size", "x"}, {"zz_interval", "x"}};
  expect_error(doc, "/model/sources/zz_interval", "which this model does not set");
  doc["model"]["sources"] = {{"vocab_size", "x"}, {"check", "a note"}, {"also_in", "a note"}};
  CHECK_NOTHROW(load_scenario(JsonDocument::parse(doc.dump(), "ok.json")));
  json fabric = base();
  fabric["cluster"] = JsonDocument::load(std::string(CLUSTERSIM_SOURCE_DIR) +
                                         "/topologies/clusters/h800-128x8-rail.json")
                          .root()
                          .raw();
  fabric["cluster"]["fabric"]["sources"]["switch_radix"] = "a key the fabric does not set";
  expect_error(fabric, "/cluster/fabric/sources/switch_radix", "does not set");
}

// Found by the CLI mutation driver: the GPU loader never read "description", so an array or a
// null there was accepted. Every text key a table lists is now a string wherever it appears.
TEST_CASE("Free-text keys of inline objects must be strings") {
  json doc = base();
  doc["cluster"] = JsonDocument::load(std::string(CLUSTERSIM_SOURCE_DIR) +
                                      "/topologies/clusters/h800-128x8-rail.json")
                       .root()
                       .raw();
  doc["cluster"]["gpu"] =
      JsonDocument::load(std::string(CLUSTERSIM_SOURCE_DIR) + "/topologies/gpus/h800-sxm.json")
          .root()
          .raw();
  CHECK_NOTHROW(load_scenario(JsonDocument::parse(doc.dump(), "ok.json")));
  for (const json& wrong : {json::array({1, 2}), json(nullptr), json(3)}) {
    json gpu_description = doc;
    gpu_description["cluster"]["gpu"]["description"] = wrong;
    expect_error(gpu_description, "/cluster/gpu/description", "expected a string");
    json cluster_description = doc;
    cluster_description["cluster"]["description"] = wrong;
    expect_error(cluster_description, "/cluster/description", "expected a string");
    json scenario_description = doc;
    scenario_description["description"] = wrong;
    expect_error(scenario_description, "/description", "expected a string");
  }
}

TEST_CASE("A run's token count is at least one token and at most 10^16") {
  expect_error(with({{"training", {{"tokens_total", 1e308}}}}), "/training/tokens_total", "");
  expect_error(with({{"training", {{"tokens_total", 0.5}}}}), "/training/tokens_total", "");
  CHECK_NOTHROW(load_scenario(
      JsonDocument::parse(with({{"training", {{"tokens_total", 1.5e13}}}}).dump(), "ok.json")));
}

TEST_CASE("An inline cluster may leave numbers uncited: each is a what-if warning") {
  json doc = base();
  doc["cluster"] = JsonDocument::load(std::string(CLUSTERSIM_SOURCE_DIR) +
                                      "/topologies/clusters/h800-128x8-rail.json")
                       .root()
                       .raw();
  // A hypothetical 200 Gb/s NIC and a hypothetical GPU, written without citations.
  doc["cluster"]["nic_Gbps"] = 200;
  doc["cluster"]["sources"].erase("nic_Gbps");
  doc["cluster"]["gpu"] =
      JsonDocument::load(std::string(CLUSTERSIM_SOURCE_DIR) + "/topologies/gpus/h800-sxm.json")
          .root()
          .raw();
  doc["cluster"]["gpu"]["name"] = "h800-whatif";
  doc["cluster"]["gpu"].erase("sources");
  const Scenario s = load_scenario(JsonDocument::parse(doc.dump(), "whatif.json"));
  CHECK(s.cluster.nic_Bps == Approx(200e9 / 8));
  std::vector<std::string> uncited;
  for (const auto& w : s.warnings) {
    if (w.rfind("uncited (what-if): ", 0) == 0) uncited.push_back(w);
  }
  // The NIC, then every number the GPU sets (its peaks counted once).
  REQUIRE_FALSE(uncited.empty());
  CHECK_THAT(uncited.front(),
             Catch::Contains("/cluster/nic_Gbps") && Catch::Contains("h800-128x8-rail"));
  bool peaks = false;
  for (const auto& w : uncited) peaks = peaks || w.find("/cluster/gpu/peak_tflops") != w.npos;
  CHECK(peaks);
  // A preset loaded by name still needs every citation: the shipped ones have them all.
  CHECK(load_scenario(JsonDocument::parse(base().dump(), "ok.json")).warnings.empty());
}
