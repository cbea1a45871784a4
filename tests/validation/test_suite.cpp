// FLOP conventions of published runs and the conversion between a simulated step time and a
// source's reported metric, checked by hand calculation and against the figures
// validation/data/published_runs.json derives independently.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "input/presets.hpp"
#include "input/scenario_loader.hpp"
#include "validation/family_errors.hpp"
#include "validation/suite.hpp"
#include "validation/system_fit_io.hpp"

using namespace clustersim;
using namespace clustersim::validation;

namespace {
ModelSpec gpt(int layers, int hidden, int heads, int vocab) {
  ModelSpec m;
  m.num_layers = layers;
  m.hidden = hidden;
  m.num_heads = heads;
  m.num_kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.vocab = vocab;
  m.ffn = FfnKind::gelu;
  return m;
}
ModelSpec llama3_70b() {
  ModelSpec m = gpt(80, 8192, 64, 128256);
  m.num_kv_heads = 8;
  m.ffn_hidden = 28672;
  m.ffn = FfnKind::swiglu;
  return m;
}
std::string suite_path() {
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/validation/suites/published-runs/suite.json";
}
}  // namespace

TEST_CASE("Korthikanti eq. 7 gives the published 41.65% MFU of the 22B run at 1.1 s") {
  // 72·4·48·2048·6144²·(1 + 2048/36864 + 51200/3538944) = 1.14356e15 FLOPs per step;
  // / (1.1 s · 8 GPUs · 312 TFLOP/s) = 0.4165 (validation/data/published_runs.json derived
  // mfu_from_step_time_eq7).
  const ModelSpec m = gpt(48, 6144, 64, 51200);
  const double f = flops_per_step(FlopConvention::korthikanti_model, m, 4, 2048);
  CHECK(f == Approx(1.143560812e15).epsilon(1e-9));
  CHECK(f / (1.1 * 8 * 312e12) == Approx(0.4165).epsilon(1e-3));
}

TEST_CASE("SC'21 eq. 3 counts the recompute pass: 144 TFLOP/s on 384 GPUs is an 81.58 s step") {
  // 96·1536·2048·96·12288²·(1 + 2048/73728 + 51200/18874368) = 4.51097e18 FLOPs;
  // / (144e12 · 384) = 81.58 s (validation/data/published_runs.json derived step_time_s_from_eq3).
  const ModelSpec m = gpt(96, 12288, 96, 51200);
  const double eq3 = flops_per_step(FlopConvention::megatron_eq3, m, 1536, 2048);
  CHECK(eq3 == Approx(4.5109707533e18).epsilon(1e-9));
  CHECK(eq3 / (144e12 * 384) == Approx(81.58).epsilon(1e-3));
  // The recompute forward pass is one extra forward: 4/3 of the model FLOPs for the layer
  // GEMMs (96 vs 72), while the logit layer is not recomputed (V/16lh·96 = V/12lh·72).
  const double model = flops_per_step(FlopConvention::korthikanti_model, m, 1536, 2048);
  const double s = 2048, h = 12288, l = 96, v = 51200;
  CHECK(eq3 / model == Approx((96 * (1 + s / (6 * h)) + 6 * v / (l * h)) /
                              (72 * (1 + s / (6 * h)) + 6 * v / (l * h))));
}

TEST_CASE("Megatron-Core's formula reduces to Korthikanti eq. 7 for a GPT model") {
  const ModelSpec m = gpt(96, 12288, 96, 51200);
  CHECK(flops_per_step(FlopConvention::megatron_core, m, 64, 2048) ==
        Approx(flops_per_step(FlopConvention::korthikanti_model, m, 64, 2048)));
}

TEST_CASE("Megatron-Core's formula matches NeMo's implied FLOPs per token for Llama 3 70B") {
  // NeMo 24.07 reports 734 TFLOP/s/GPU and 1524 tokens/s/GPU: 481.6 GFLOP per token
  // (validation/data/published_runs.json derived flops_per_token_implied). By hand, per token:
  // 12·80·8192²·((1 + 8/64 + 8192/8192) + 3.5·1.5 + 128256/(2·80·8192)) = 481.44 GFLOP.
  const ModelSpec m = llama3_70b();
  const double per_token = flops_per_step(FlopConvention::megatron_core, m, 1, 8192) / 8192;
  CHECK(per_token == Approx(481.44e9).epsilon(1e-3));
  CHECK(per_token == Approx(734e12 / 1524).epsilon(0.005));
}

TEST_CASE("Megatron-Core 0.14's count gives Megatron-Bridge's DeepSeek-V3 FLOPs per token") {
  // Megatron-Bridge 25.11 reports 557 TFLOP/s and 2,139 tokens/s per GPU for DeepSeek-V3 with
  // one MTP module: 260.40 GFLOP per token. By hand, per token (h 7168, 128 heads, q latent
  // 1536, kv latent 512, head dims 128 + 64 rope, 128 value; s 4096; 3 dense layers of FFN
  // 18432 and 58 MoE layers of 8 routed + 1 shared experts of 2048, SwiGLU; vocab 129280):
  //   attention 6·62·(1536·(7168 + 128·192 + 1) + 512·(7168 + 128·256 + 1) + 7168·64
  //              + 128·128·7168 + 4096·128·192/2 + 4096·128·128/2)        = 100.810 GFLOP
  //   FFN       12·7168·1.5·(18432·3 + 9·2048·59)                          = 147.447 GFLOP
  //   MTP       6·(3·7168 + 2·7168²)                                        =   0.617 GFLOP
  //   logits    6·7168·129280·2                                             =  11.120 GFLOP
  // with the MTP module counted as a 62nd (MoE) layer: 259.99 GFLOP per token (the same terms
  // without it: 249.81).
  ModelSpec m = load_model_preset("deepseek-v3");
  REQUIRE(m.mtp_layers == 1);
  const double with_mtp = flops_per_step(FlopConvention::megatron_core_v014, m, 1, 4096) / 4096;
  CHECK(with_mtp == Approx(259.993e9).epsilon(1e-4));
  CHECK(with_mtp == Approx(557e12 / 2139).epsilon(0.005));
  m.mtp_layers = 0;
  const double without = flops_per_step(FlopConvention::megatron_core_v014, m, 1, 4096) / 4096;
  CHECK(without == Approx(249.812e9).epsilon(1e-4));
}

TEST_CASE("Megatron-Core 0.14's count halves the causal score matrix that r0.8's counts whole") {
  // For a dense model the two differ only in the score terms: 12·l·h²·(s/h)·(1 - 1/2) per
  // token, 12·80·8192·8192/2 = 3.221 GFLOP for Llama 3 70B at 8192 tokens.
  const ModelSpec m = llama3_70b();
  const double r08 = flops_per_step(FlopConvention::megatron_core, m, 1, 8192) / 8192;
  const double v014 = flops_per_step(FlopConvention::megatron_core_v014, m, 1, 8192) / 8192;
  CHECK(r08 - v014 == Approx(12.0 * 80 * 8192 * 8192 / 2).epsilon(1e-9));
}

TEST_CASE("a simulated step time becomes each source's metric in its own convention") {
  const auto suite = load_published_suite(suite_path());
  // A fake step simulator: 10 s per step at 50% MFU for every scenario.
  const StepPredictor fake = [](const Scenario&) { return StepPrediction{10.0, 0.5, 0.55}; };
  const auto r = run_published_suite(suite, fake);
  CHECK(r.ran == static_cast<int>(suite.cases.size()));
  const CaseResult* nemo = nullptr;
  const CaseResult* zero3 = nullptr;
  const CaseResult* k22 = nullptr;
  const CaseResult* nemo5b = nullptr;
  for (const auto& c : r.cases) {
    INFO(c.id << ": " << c.failure);
    CHECK(c.ok());
    if (c.id == "nemo2407_llama3-70b_64gpu") nemo = &c;
    if (c.id == "sc21_t2_zero3_174.6B_384gpu") zero3 = &c;
    if (c.id == "korthikanti_t5_22B_present") k22 = &c;
    if (c.id == "nemo2208_gpt3-5b_8gpu") nemo5b = &c;
  }
  REQUIRE(nemo);
  REQUIRE(nemo5b);
  REQUIRE(zero3);
  REQUIRE(k22);
  // tokens/s/GPU: 128 sequences · 8192 tokens / 10 s / 64 GPUs = 1638.4; reported 1524.
  CHECK(nemo->predicted == Approx(1638.4));
  CHECK(nemo->error_pct == Approx(100.0 * (1638.4 - 1524) / 1524));
  // The reported figure implies 1048576 / (1524 · 64) = 10.7507 s; at our model FLOPs that
  // run had 0.5 · 10 / 10.7507 = 46.51% MFU in our convention.
  CHECK(nemo->reported_step_time_s == Approx(10.7507).epsilon(1e-4));
  CHECK(nemo->reported_mfu_ours == Approx(0.46508).epsilon(1e-4));
  // SC'21 TFLOP/s in eq. 3: 4.51097e18 / 10 s / 384 GPUs = 1174.7 TFLOP/s.
  CHECK(zero3->predicted == Approx(4.5109707533e18 / 10 / 384 / 1e12).epsilon(1e-6));
  CHECK(zero3->reported_step_time_s == Approx(81.5786).epsilon(1e-4));
  // The NeMo launcher README gives tokens/s over all GPUs: 40,345 on one DGX A100 node is
  // 5043.1 per GPU; the launcher config's batch, 2048 sequences of 2048 tokens, in 10 s on 8 GPUs
  // is 52,428.8 tokens/s per GPU.
  CHECK(nemo5b->reported == Approx(40345.0 / 8).epsilon(1e-4));
  CHECK(nemo5b->predicted == Approx(2048.0 * 2048 / 10 / 8));
  // Step time compared directly.
  CHECK(k22->predicted == 10.0);
  CHECK(k22->error_pct == Approx(100.0 * (10 - 1.1) / 1.1));
}

TEST_CASE("the suite lists every published run, either as a case or with a reason") {
  const auto suite = load_published_suite(suite_path());
  // Every run of validation/data/published_runs.json, once; none may be dropped silently.
  std::ifstream in(std::string(CLUSTERSIM_SOURCE_DIR) + "/validation/data/published_runs.json");
  const auto runs = nlohmann::json::parse(in);
  // And the thirteen rows of Megatron-Core's DeepSeek-V3 GB200 guide
  // (tools/megatron_core_guide.py).
  std::ifstream guide_in(std::string(CLUSTERSIM_SOURCE_DIR) +
                         "/validation/data/megatron_core_deepseek_v3_gb200.json");
  const auto guide = nlohmann::json::parse(guide_in);
  REQUIRE(guide["rows"].size() == 13);
  std::multiset<std::string> listed;
  for (const auto& c : suite.cases) listed.insert(c.id);
  for (const auto& n : suite.not_expressible) listed.insert(n.id);
  CHECK(listed.size() == runs.size() + guide["rows"].size());
  for (const auto& r : runs) CHECK(listed.count(r["id"].get<std::string>()) == 1);
  int guide_listed = 0;
  for (const auto& id : listed) guide_listed += id.rfind("megatron_core_guide_", 0) == 0;
  CHECK(guide_listed == 13);
  // 72 runs of the first transcription, torchtitan's 18 rows, the NeMo launcher README's 11,
  // the other 25 rows of Megatron-Bridge's 25.11 table (GB300, GB200, B200, H100; FP8-MX figures
  // in parentheses as rows of their own) and torchao's float8 README's two expressible rows
  CHECK(runs.size() == 128);
  for (const auto& n : suite.not_expressible) CHECK_FALSE(n.reason.empty());
}

TEST_CASE("a step simulator failure is reported per case and left out of the MAPE") {
  const auto suite = load_published_suite(suite_path());
  const StepPredictor failing = [](const Scenario& s) -> StepPrediction {
    if (s.gpus > 64) throw std::runtime_error("does not fit");
    return {1.0, 0.4, 0.4};
  };
  const auto r = run_published_suite(suite, failing);
  int failed = 0;
  for (const auto& c : r.cases)
    if (!c.ok()) {
      ++failed;
      CHECK(c.failure == "does not fit");
    }
  CHECK(failed > 0);
  CHECK(r.ran + failed == static_cast<int>(r.cases.size()));
}

TEST_CASE("selecting cases keeps the suite's order and names the ids that match nothing") {
  auto suite = load_published_suite(suite_path());
  const auto unmatched = select_cases(
      suite, {"nemo2407_llama3-70b_64gpu", "no_such_run", "korthikanti_t5_22B_present"});
  REQUIRE(suite.cases.size() == 2);
  CHECK(suite.cases[0].id == "korthikanti_t5_22B_present");  // suite.json order
  CHECK(suite.cases[1].id == "nemo2407_llama3-70b_64gpu");
  CHECK(unmatched == std::vector<std::string>{"no_such_run"});
  CHECK(suite.cases.size() + suite.not_expressible.size() < 101);
}

TEST_CASE("regenerating the report keeps the hand-written analysis and nothing else") {
  auto suite = load_published_suite(suite_path());
  select_cases(suite, {"korthikanti_t5_22B_present"});
  StepPrediction p{2.2, 0.2, 0.21};
  p.breakdown.compute_s = 2.0;
  p.breakdown.tp_s = 0.2;
  const auto r = run_published_suite(suite, [&](const Scenario&) { return p; });
  const std::string analysis =
      "The 22B run is off by +100%: see the attention kernel.\n\n| a | b |";
  const std::string first = report_markdown({r}, "2026-01-01", "clustersim validate",
                                            {{"published-runs", "x.svg"}}, analysis);
  CHECK(extract_analysis(first) == analysis);
  // The table is the new run's; the analysis survives a second generation unchanged.
  const std::string second =
      report_markdown({r}, "2026-02-01", "clustersim validate", {}, extract_analysis(first));
  CHECK(extract_analysis(second) == analysis);
  CHECK(second.find("2026-02-01") != std::string::npos);
  CHECK(second.find("2026-01-01") == std::string::npos);
  // 2.2 s against the reported 1.1 s; 2.0 of 2.2 s is compute (90.9%).
  CHECK(first.find("+100.0%") != std::string::npos);
  CHECK(first.find("90.9%") != std::string::npos);
  CHECK(extract_analysis("no markers here") == "");
}

namespace {
// A suite.json of two cases on one scenario (Korthikanti's 22B run, reported 1.1 s), the first
// with `first_completion`, the second completed by a rule; returns its path.
std::string two_case_suite(const std::string& name, const std::string& first_completion) {
  const std::string scenario = std::string(CLUSTERSIM_SOURCE_DIR) +
                               "/validation/suites/published-runs/"
                               "korthikanti_t5_22B_present.scenario.json";
  const auto path = std::filesystem::temp_directory_path() / ("clustersim-test-" + name + ".json");
  std::ofstream out(path);
  out << R"({"name": "published-runs", "cases": [)";
  for (const auto& [id, completion] : {std::pair<std::string, std::string>{"a_1", first_completion},
                                       {"a_2",
                                        "\"completion\": \"rule\", "
                                        "\"completion_rules\": [\"SOME_RULE\"], "}})
    out << (id == "a_1" ? "" : ",") << R"({"id": ")" << id << R"(", "scenario": ")" << scenario
        << R"(", "metric": "step_time_s", "reported": 1.1, "flop_convention": )"
        << R"("korthikanti_model", )" << completion << R"("family": "fam"})";
  out << "]}";
  return path.string();
}
}  // namespace

TEST_CASE("the MAPE of fully specified cases is kept apart from that of cases completed by rule") {
  const auto path = two_case_suite("completion", "");  // no key: fully specified
  const auto suite = load_published_suite(path);
  std::filesystem::remove(path);
  REQUIRE(suite.cases.size() == 2);
  CHECK(suite.cases[0].completion == Completion::specified);
  CHECK(suite.cases[1].completion == Completion::rule);
  CHECK(suite.cases[1].completion_rules == std::vector<std::string>{"SOME_RULE"});
  CHECK(suite.cases[1].family == "fam");
  // 1.21 s against 1.1 s is +10 %, 0.88 s is -20 %: 10 % specified, 20 % by rule, 15 % in all.
  int call = 0;
  const auto r = run_published_suite(suite, [&](const Scenario&) {
    return StepPrediction{call++ == 0 ? 1.21 : 0.88, 0.4, 0.4};
  });
  CHECK(r.mape_pct == Approx(15.0));
  CHECK(r.specified.pct == Approx(10.0));
  CHECK(r.specified.ran == 1);
  CHECK(r.by_rule.pct == Approx(20.0));
  CHECK(r.by_rule.ran == 1);
  const std::string table = format_table(r);
  CHECK(table.find("fully specified 10.0% over 1, completed by rule 20.0% over 1") !=
        std::string::npos);
  const std::string report = report_markdown({r}, "2026-01-01", "clustersim validate", {}, "");
  CHECK(report.find("| published-runs | all, completed by rule | 1 | 20.0% |") !=
        std::string::npos);
  CHECK(to_json_text({r}, "2026-01-01").find("\"by_completion\"") != std::string::npos);
}

TEST_CASE("a completion other than specified or rule is an error at its JSON path") {
  const auto path = two_case_suite("completion-bad", R"("completion": "guessed", )");
  CHECK_THROWS_WITH(load_published_suite(path),
                    Catch::Contains("/cases/0/completion") && Catch::Contains("guessed"));
  std::filesystem::remove(path);
}

TEST_CASE("the report sets the memory model beside the peak memory a source reports") {
  // Case a_1 reports 50 GiB per GPU; the memory model says 40 (at or under it), a_2 reports none.
  const auto path = two_case_suite("memory", R"("reported_memory_GiB": 50, )");
  const auto suite = load_published_suite(path);
  std::filesystem::remove(path);
  REQUIRE(suite.cases[0].reported_memory_GiB == 50);
  CHECK(suite.cases[1].reported_memory_GiB == 0);
  const auto r = run_published_suite(suite, [](const Scenario&) {
    StepPrediction p{1.1, 0.4, 0.4};
    p.memory_per_gpu_GiB = 40;
    return p;
  });
  const std::string report = report_markdown({r}, "2026-01-01", "clustersim validate", {}, "");
  CHECK(report.find("at or under it in 1 of 1.") != std::string::npos);
  CHECK(report.find("| a_1 | 40.0 | 50.0 | 0.80 |") != std::string::npos);
  CHECK(report.find("| a_2 | 40.0 |") == std::string::npos);
  CHECK(to_json_text({r}, "2026-01-01").find("\"reported_memory_GiB\": 50") != std::string::npos);
  // Not a positive number: refused at its JSON path.
  const auto bad = two_case_suite("memory-bad", R"("reported_memory_GiB": -3, )");
  CHECK_THROWS_WITH(load_published_suite(bad), Catch::Contains("/cases/0/reported_memory_GiB"));
  std::filesystem::remove(bad);
}

TEST_CASE("The family table's signed error has one sign for every metric: + is predicted faster") {
  SuiteResult r;
  CaseResult slow_time;  // step time predicted 25 % longer than reported: 20 % slower
  slow_time.family = "a";
  slow_time.metric = Metric::step_time_s;
  slow_time.reported = 1.0;
  slow_time.predicted = 1.25;
  slow_time.error_pct = 25.0;
  CaseResult fast_rate;  // throughput predicted 10 % higher than reported: 10 % faster
  fast_rate.family = "a";
  fast_rate.metric = Metric::tokens_per_s_per_gpu;
  fast_rate.reported = 100.0;
  fast_rate.predicted = 110.0;
  fast_rate.error_pct = 10.0;
  CHECK(faster_pct(slow_time, slow_time.error_pct) == Approx(-20.0));
  CHECK(faster_pct(fast_rate, fast_rate.error_pct) == Approx(10.0));
  r.cases = {slow_time, fast_rate};
  const auto families = errors_by_family(r);
  REQUIRE(families.size() == 1);
  CHECK(families[0].mape_pct == Approx((25.0 + 10.0) / 2));
  CHECK(families[0].signed_pct == Approx((-20.0 + 10.0) / 2));
}

TEST_CASE("A run whose GPU borrows its system block is fitted in the lender's group") {
  // Blackwell's calibration takes the H100's fitted block (system_from), so its runs are
  // predicted with that block's values and folds, and are fitted with the H100's runs: the
  // Megatron-Core guide's GB200 run and Megatron-Bridge's H100 runs share one group.
  auto suite = load_published_suite(suite_path());
  std::vector<Scenario> scenarios;
  const std::vector<FitRun> runs = fit_runs_from_suite(suite, scenarios);
  std::string guide, bridge_h100;
  for (const auto& r : runs) {
    CHECK(r.group.find("compute_efficiency-blackwell.json") == std::string::npos);
    if (r.id == "megatron_core_guide_deepseekv3_gb200_mxfp8_256gpu") guide = r.group;
    if (r.id == "megatron_bridge_2511_qwen3_30b_a3b_16gpu") bridge_h100 = r.group;
  }
  REQUIRE_FALSE(guide.empty());
  CHECK(guide == bridge_h100);
  CHECK(std::filesystem::path(guide).filename() == "compute_efficiency.json");
}
