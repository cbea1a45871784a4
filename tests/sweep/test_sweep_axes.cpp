// The hardware axes (nic_Gbps, nvlink_GBps, gpu), the MoE axes (ep, moe_dispatcher,
// moe_expert_gemm, moe_comm_overlap), fp8_param_gather and fp8_recipe of sweep files: enumeration,
// where each value lands, what-if marking, error rows, result columns, bad values.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>

#include "core/errors.hpp"
#include "core/units.hpp"
#include "input/scenario_loader.hpp"
#include "sweep/results.hpp"
#include "sweep/sweep_runner.hpp"
#include "sweep/sweep_spec.hpp"
#include "tests/sweep/sweep_spec_from.hpp"
#include "tests/tools/cli_runner.hpp"

using namespace clustersim;
using namespace clustersim::sweep;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kSource = CLUSTERSIM_SOURCE_DIR;

using test::spec_from;

// The point's scenario as the loader reads it; fails the test when it does not load.
Scenario loaded(const SweepSpec& spec, const SweepPoint& point) {
  std::optional<Scenario> scenario;
  const auto record = screen_point(spec, point, "k", {}, scenario);
  INFO(point.label << ": " << (record ? record->reason : std::string()));
  REQUIRE_FALSE(record.has_value());
  REQUIRE(scenario.has_value());
  return *scenario;
}

// The reason of the point's "invalid" row; fails the test when the point loads.
std::string invalid_reason(const SweepSpec& spec, const SweepPoint& point) {
  std::optional<Scenario> scenario;
  const auto record = screen_point(spec, point, "k", {}, scenario);
  INFO(point.label);
  REQUIRE(record.has_value());
  CHECK(record->status == kStatusInvalid);
  return record->reason;
}

// The header line of a CSV text.
std::string header_of(const std::string& csv) {
  return csv.substr(0, csv.find('\n'));
}

}  // namespace

TEST_CASE("hardware axes: one point per combination, each value where the loader reads it") {
  // The base: 1024 H800 of h800-128x8-rail (400 Gb/s NICs; the H800's NVLink 200 GB/s).
  const SweepSpec spec = spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
      "axes": {"gpus": [512, 1024], "gpu": ["h800-sxm", "h200-sxm"],
               "nvlink_GBps": [200, 300], "nic_Gbps": [400, 200]}})");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 2 * 2 * 2 * 2);
  // Order: gpus, gpu, nvlink_GBps, nic_Gbps (the last one innermost).
  std::size_t i = 0;
  for (int gpus : {512, 1024}) {
    for (const char* gpu : {"h800-sxm", "h200-sxm"}) {
      for (double nvlink : {200, 300}) {
        for (double nic : {400, 200}) {
          const SweepPoint& p = points[i++];
          const Scenario s = loaded(spec, p);
          CHECK(s.gpus == gpus);
          CHECK(s.cluster.gpu.name == gpu);
          CHECK(s.cluster.nvlink_Bps == Approx(nvlink * kGB));
          CHECK(s.cluster.nic_Bps == Approx(nic * kGbit));
          CHECK(p.parameters["nic_Gbps"] == nic);
          CHECK(p.parameters["nvlink_GBps"] == nvlink);
          CHECK(p.parameters["gpu"] == gpu);
          // What-if exactly when a value differs from the cited hardware of the preset.
          const bool what_if = nic != 400 || nvlink != 200 || std::string(gpu) != "h800-sxm";
          CHECK(p.what_if.empty() == !what_if);
          CHECK(p.parameters["what_if"].get<std::string>().empty() == !what_if);
        }
      }
    }
  }
  SECTION("values equal to the preset's leave the base scenario as it is") {
    // 1024 GPUs, H800, 200 GB/s, 400 Gb/s: the base's own point.
    CHECK(points[8].scenario == spec.base);
    CHECK(point_key(points[8].scenario, "run") == point_key(spec.base, "run"));
  }
  SECTION("a changed value replaces its citation and says so") {
    const SweepPoint& p = points[1];  // 512 GPUs, H800, 200 GB/s, 200 Gb/s
    const std::string cited = p.scenario["cluster"]["sources"]["nic_Gbps"];
    CHECK_THAT(cited, Catch::StartsWith("uncited (what-if): 200 Gb/s set by a sweep axis") &&
                          Catch::Contains("h800-128x8-rail has 400 Gb/s, cited as: Seed article"));
    REQUIRE(p.what_if.size() == 1);
    CHECK(p.what_if[0] == "NIC 200 Gb/s in place of the cited 400 Gb/s of h800-128x8-rail");
    CHECK(p.label == "512 GPUs DP32 TP8 PP2 NIC 200Gb/s NVLink 200GB/s h800-sxm");
    // The shipped preset's file keeps its citation.
    const json preset =
        JsonDocument::load(kSource + "/topologies/clusters/h800-128x8-rail.json").root().raw();
    CHECK_THAT(preset["sources"]["nic_Gbps"].get<std::string>(), Catch::StartsWith("Seed article"));
  }
  SECTION("an NVLink figure different from the GPU's is set on the cluster, cited as a what-if") {
    const SweepPoint& p = points[2];  // 512 GPUs, H800, 300 GB/s, 400 Gb/s
    CHECK(p.scenario["cluster"]["nvlink_GBps"] == 300);
    CHECK(p.scenario["cluster"]["gpu"]["nvlink_GBps"] == 200);  // the GPU preset unchanged
    CHECK_THAT(p.scenario["cluster"]["sources"]["nvlink_GBps"].get<std::string>(),
               Catch::StartsWith("uncited (what-if)"));
  }
  SECTION("records carry the what-if as a warning") {
    std::optional<Scenario> s;
    const auto r = screen_point(
        spec, points[1], "k",
        [](const Scenario&) {
          return std::optional<Evaluation>(Evaluation{kStatusInfeasible, "test", {}, {}, {}});
        },
        s);
    REQUIRE(r.has_value());
    CHECK(std::count(r->warnings.begin(), r->warnings.end(),
                     "uncited (what-if): " + points[1].what_if[0]) == 1);
  }
}

TEST_CASE("the NIC count, oversubscription and GPU of another cluster preset are what-ifs too") {
  // h800-128x8-seed-as-written: one 400 Gb/s NIC per node, not rail-optimized, non-blocking,
  // and a cluster-level NVLink of 450 GB/s (the article's figure) in place of the H800's 200.
  const SweepSpec spec = spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
      "axes": {"cluster": ["h800-128x8-rail", "h800-128x8-seed-as-written"],
               "nics_per_node": [1], "oversubscription": [2], "gpu": ["h200-sxm"]}})");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 2);
  const json& rail = points[0].scenario["cluster"];
  CHECK(rail["nics_per_node"] == 1);
  CHECK(rail["rail_optimized"] == false);  // one NIC for 8 GPUs cannot be rail-optimized
  CHECK(rail["fabric"]["oversubscription"] == 2);
  for (const char* key : {"nics_per_node", "rail_optimized"}) {
    CHECK_THAT(rail["sources"][key].get<std::string>(), Catch::StartsWith("uncited (what-if)"));
  }
  CHECK_THAT(rail["fabric"]["sources"]["oversubscription"].get<std::string>(),
             Catch::StartsWith("uncited (what-if)"));
  // One note per axis value; the NIC count's names the rail optimization it ends.
  const std::vector<std::string> notes = {
      "NICs per node 1 in place of the cited 8 of h800-128x8-rail; "
      "rail-optimized false in place of the cited true of h800-128x8-rail",
      "oversubscription 2:1 in place of the cited 1:1 of h800-128x8-rail",
      "GPU h200-sxm in place of h800-sxm in h800-128x8-rail"};
  CHECK(points[0].what_if == notes);
  // The as-written cluster has one NIC already: only the fabric and the GPU change.
  const SweepPoint& seed = points[1];
  CHECK(seed.what_if.size() == 2);
  const Scenario s = loaded(spec, seed);
  CHECK(s.cluster.gpu.name == "h200-sxm");
  CHECK(s.cluster.gpu.hbm_bytes == Approx(141e9));
  CHECK(s.cluster.nvlink_Bps == Approx(450 * kGB));  // the cluster's own figure stays
  CHECK(s.cluster.fabric.oversubscription == 2);
  CHECK(loaded(spec, points[0]).cluster.nics_per_node == 1);
}

TEST_CASE("cluster and gpu values may be files or inline objects, cited as presets are") {
  json gpu = JsonDocument::load(kSource + "/topologies/gpus/h200-sxm.json").root().raw();
  gpu["name"] = "h200-inline";
  const std::string axes = R"({"base": "scenarios/seed-optimized-1024.json", "axes": {
      "cluster": ["h800-128x8-rail", "topologies/clusters/h800-256x8-rail.json"], "gpu": [)";
  const SweepSpec spec = spec_from(axes + gpu.dump() + "]}}");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 2);
  CHECK(loaded(spec, points[0]).cluster.nodes == 128);
  const Scenario big = loaded(spec, points[1]);
  CHECK(big.cluster.nodes == 256);
  CHECK(big.cluster.gpu.name == "h200-inline");
  CHECK(points[1].parameters["cluster"] == "h800-256x8-rail");
  CHECK(points[1].what_if ==
        std::vector<std::string>{"GPU h200-inline in place of h800-sxm in h800-256x8-rail"});

  SECTION("an inline GPU without a citation is refused at its pointer") {
    gpu["sources"].erase("hbm_GB");
    try {
      spec_from(axes + gpu.dump() + "]}}");
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(e.pointer() == "/axes/gpu/0/hbm_GB");
      CHECK_THAT(e.what(), Catch::Contains("no citation"));
    }
  }
  SECTION("a cluster file that does not exist") {
    CHECK_THROWS_WITH(spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
        "axes": {"cluster": ["clusters/nope.json"]}})"),
                      Catch::Contains("/axes/cluster/0") &&
                          Catch::Contains("cluster file \"clusters/nope.json\""));
  }
}

TEST_CASE(
    "MoE axes: ep, dispatcher and overlap land in the scenario, an infeasible ep is an error row") {
  // DeepSeek-V3 on 2048 H800: dp 128 x tp 1 = 128 ranks per pipeline stage, 256 routed experts.
  const SweepSpec spec = spec_from(R"({"base": "scenarios/deepseek-v3-2048-h800.json",
      "axes": {"ep": [8, 48, 64, 256], "moe_dispatcher": ["alltoall", "deepep"],
               "moe_comm_overlap": [true, false]}})");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 4 * 2 * 2);
  for (const auto& p : points) {
    const int ep = p.parameters["ep"];
    CHECK(p.scenario["parallelism"]["ep"] == ep);
    CHECK_THAT(p.label, Catch::Contains("EP" + std::to_string(ep)));
    if (ep == 48) {
      // 256 / 48 is not whole.
      CHECK_THAT(invalid_reason(spec, p),
                 Catch::Contains("/parallelism/ep") &&
                     Catch::Contains("does not divide the model's 256 routed experts"));
    } else if (ep == 256) {
      // 128 ranks per stage cannot hold 256 expert-parallel ranks.
      CHECK_THAT(invalid_reason(spec, p),
                 Catch::Contains("/parallelism/ep") && Catch::Contains("128"));
    } else {
      const Scenario s = loaded(spec, p);
      CHECK(s.parallelism.ep == ep);
      CHECK(kMoeDispatcherNames.name(s.training.moe_dispatcher) == p.parameters["moe_dispatcher"]);
      CHECK(s.training.moe_comm_overlap == p.parameters["moe_comm_overlap"].get<bool>());
      // The base's 20 communication SMs apply with the overlap only.
      CHECK(s.training.moe_comm_sms == (s.training.moe_comm_overlap ? 20 : 0));
    }
  }
  CHECK(points[0].label == "DP128 TP1 PP16 EP8 dispatch:alltoall EP-overlap");
  // No hardware axis: no what_if column.
  CHECK_FALSE(points[0].parameters.contains("what_if"));
}

TEST_CASE("The expert GEMM axis lands in the scenario, its label and its column") {
  const SweepSpec spec = spec_from(R"({"base": "scenarios/deepseek-v3-2048-h800.json",
      "axes": {"moe_expert_gemm": ["per_expert", "grouped"]}})");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 2);
  CHECK(points[0].label == "DP128 TP1 PP16 experts:per_expert");
  CHECK(points[1].label == "DP128 TP1 PP16 experts:grouped");
  for (const auto& p : points) {
    std::optional<Scenario> s;
    REQUIRE_FALSE(screen_point(spec, p, "k", {}, s).has_value());
    CHECK(kMoeExpertGemmNames.name(s->training.moe_expert_gemm) == p.parameters["moe_expert_gemm"]);
  }
  CHECK_THROWS_WITH(spec_from(R"({"base": "scenarios/deepseek-v3-2048-h800.json",
      "axes": {"moe_expert_gemm": ["cutlass"]}})"),
                    Catch::Contains("/axes/moe_expert_gemm/0") && Catch::Contains("per_expert"));
}

TEST_CASE("the new axes are result columns only when the sweep has them") {
  auto header = [](const SweepSpec& spec) {
    std::vector<SweepRecord> records;
    for (const auto& p : enumerate_points(spec)) {
      SweepRecord r;
      r.key = point_key(p.scenario, "run");
      r.index = p.index;
      r.status = kStatusOk;
      r.parameters = p.parameters;
      records.push_back(r);
    }
    return header_of(to_csv(records));
  };
  const std::string fixed =
      "key,index,status,label,gpus,dp,tp,pp,vpp,cp,micro_batch,global_batch,zero_stage,"
      "recompute,sequence_parallel,grad_dtype,compression,nics_per_node,oversubscription,"
      "cluster,model,";
  const std::string metrics = "step_time_s,mfu,";
  const std::string plain = header(spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
      "axes": {"zero_stage": [1, 2]}})"));
  CHECK_THAT(plain, Catch::StartsWith(fixed + metrics));
  const std::string with_nic = header(spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
      "axes": {"nic_Gbps": [400, 200]}})"));
  CHECK_THAT(with_nic, Catch::StartsWith(fixed + "nic_Gbps,what_if," + metrics));
  CHECK(csv_append_header(optional_columns(json{{"ep", 8}, {"gpus", 8}})).find(",model,ep,") !=
        std::string::npos);
}

TEST_CASE("fp8_param_gather lands in the scenario, and without a ZeRO stage is an error row") {
  // DeepSeek-V3 on 2048 H800 trains in FP8 with ZeRO-1.
  const SweepSpec spec = spec_from(R"({"base": "scenarios/deepseek-v3-2048-h800.json",
      "axes": {"zero_stage": [0, 1], "fp8_param_gather": [false, true]}})");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 2 * 2);
  for (const auto& p : points) {
    const bool fp8 = p.parameters["fp8_param_gather"].get<bool>();
    CHECK(p.scenario["training"]["fp8_param_gather"] == fp8);
    CHECK_THAT(p.label, Catch::Contains(fp8 ? "FP8-params" : "16-bit-params"));
    if (fp8 && p.parameters["zero_stage"] == 0) {
      CHECK_THAT(invalid_reason(spec, p), Catch::Contains("/training/fp8_param_gather"));
    } else {
      CHECK(loaded(spec, p).training.fp8_param_gather == fp8);
    }
  }
}

TEST_CASE("bad values of the new axes are errors at the sweep file's JSON path") {
  const std::string base = R"({"base": "scenarios/seed-optimized-1024.json", "axes": )";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"nic_Gbps": [400, 0]})", "/axes/nic_Gbps/1"},
      {R"({"nvlink_GBps": ["fast"]})", "/axes/nvlink_GBps/0"},
      {R"({"gpu": ["h200-sxn"]})", "/axes/gpu/0"},
      {R"({"ep": [0]})", "/axes/ep/0"},
      {R"({"moe_dispatcher": ["deep"]})", "/axes/moe_dispatcher/0"},
      {R"({"moe_comm_overlap": ["yes"]})", "/axes/moe_comm_overlap/0"},
      {R"({"fp8_recipe": ["blockwise"]})", "/axes/fp8_recipe/0"},
      {R"({"fp8_param_gather": [1]})", "/axes/fp8_param_gather/0"}};
  for (const auto& [axes, pointer] : cases) {
    INFO(axes);
    try {
      spec_from(base + axes + "}");
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(e.pointer() == pointer);
    }
  }
  CHECK_THROWS_WITH(spec_from(base + R"({"gpu": ["h200-sxn"]}})"),
                    Catch::Contains("did you mean \"h200-sxm\""));

  SECTION("the command exits 2 naming the file and pointer") {
    const fs::path dir = test::cli_scratch("bad-axis");
    test::write_text(dir / "bad.json", R"({"base": "scenarios/seed-optimized-1024.json",
        "axes": {"nic_Gbps": [400, -200]}})");
    const test::CliRun r = test::run_cli("sweep bad.json --dry-run", dir);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("bad.json:/axes/nic_Gbps/1"));
    fs::remove_all(dir);
  }
}

TEST_CASE("one sweep file answers 512 -> 2048 GPUs x InfiniBand 400 or 200 Gb/s", "[slow]") {
  // tests/sweep/data/ib-what-if.json: Llama 3 8B, TP 8 in a node, DP across nodes on
  // h800-128x8-rail (one 400 Gb/s NIC per GPU), gradient reduction not overlapped. No preset
  // is copied: the nic_Gbps axis sets the what-if.
  const fs::path dir = test::cli_scratch("ib-what-if");
  const test::CliRun run =
      test::run_cli("sweep " + test::shell_quote(kSource + "/tests/sweep/data/ib-what-if.json") +
                        " --jobs 2 --no-plots --out out",
                    dir);
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);

  const auto records = read_results((dir / "out/results.jsonl").string(), false).records;
  REQUIRE(records.size() == 4);
  std::map<std::pair<int, int>, SweepRecord> by;  // (gpus, Gb/s)
  for (const auto& r : records) {
    REQUIRE(r.status == kStatusOk);
    by[{r.parameters.at("gpus").get<int>(), r.parameters.at("nic_Gbps").get<int>()}] = r;
  }
  for (int gpus : {512, 2048}) {
    const SweepRecord& fast = by.at({gpus, 400});
    const SweepRecord& slow = by.at({gpus, 200});
    const std::string layout =
        std::to_string(gpus) + " GPUs DP" + std::to_string(gpus / 8) + " TP8 PP1";
    CHECK(fast.label == layout + " NIC 400Gb/s");
    CHECK(slow.label == layout + " NIC 200Gb/s");
    // The data-parallel reduction crosses nodes on one NIC per GPU: with half the line rate its
    // bandwidth term doubles. It takes longer, and at most twice as long (t = a + V/B at B/2 is
    // a + 2V/B <= 2t).
    const double dp_fast = fast.breakdown.at("dp_s").get<double>();
    const double dp_slow = slow.breakdown.at("dp_s").get<double>();
    INFO(gpus << " GPUs: DP " << dp_fast << " s at 400 Gb/s, " << dp_slow << " s at 200 Gb/s");
    CHECK(dp_fast > 0);
    CHECK(dp_slow > dp_fast);
    CHECK(dp_slow <= 2 * dp_fast);
    // And it moves at least the reduce-scatter of the rank's bf16 gradients at line rate:
    // (dp - 1) / dp x 8.03e9 parameters (Llama 3 8B) / TP 8 x 2 bytes over 25 GB/s.
    const double dp = gpus / 8.0;
    const double reduce_scatter_s = (dp - 1) / dp * 8.03e9 / 8 * 2 / (200 * kGbit);
    CHECK(dp_slow >= reduce_scatter_s);
    CHECK(slow.metric("step_time_s") > fast.metric("step_time_s"));
    // The 200 Gb/s points are what-ifs, the 400 Gb/s ones the preset as cited.
    CHECK(fast.parameters.at("what_if") == "");
    CHECK(slow.parameters.at("what_if") ==
          "NIC 200 Gb/s in place of the cited 400 Gb/s of h800-128x8-rail");
  }
  const std::string csv = test::read_text(dir / "out/results.csv");

  CHECK_THAT(header_of(csv), Catch::Contains(",cluster,model,nic_Gbps,what_if,step_time_s,"));
  CHECK_THAT(csv, Catch::Contains("NIC 200Gb/s") && Catch::Contains("NIC 400Gb/s"));
  CHECK_THAT(run.out, Catch::Contains("uncited (what-if) hardware in 2 of 4 points"));
  // The ranking names the axis behind the runner-up's longer DP communication.
  CHECK_THAT(run.out, Catch::Contains("(nic_Gbps 200 vs 400)"));
  fs::remove_all(dir);
}

TEST_CASE("fp8_recipe lands in the scenario, and MXFP8 off Blackwell is an error row") {
  // DeepSeek-V3 trains in FP8; on its H800s MXFP8 is refused, on B200s it is not.
  const SweepSpec spec = spec_from(R"({"base": "scenarios/deepseek-v3-2048-h800.json",
      "axes": {"gpu": ["h800-sxm", "b200"], "fp8_recipe": ["current", "mxfp8"]}})");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 2 * 2);
  for (const auto& p : points) {
    const std::string recipe = p.parameters["fp8_recipe"].get<std::string>();
    CHECK(p.scenario["training"]["fp8_recipe"] == recipe);
    CHECK_THAT(p.label, Catch::Contains("FP8-" + recipe));
    if (recipe == "mxfp8" && p.parameters["gpu"] == "h800-sxm") {
      CHECK_THAT(invalid_reason(spec, p), Catch::Contains("/training/fp8_recipe"));
    } else {
      CHECK(kFp8RecipeNames.name(loaded(spec, p).training.fp8_recipe) == recipe);
    }
  }
}
