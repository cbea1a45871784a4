#include <catch2/catch.hpp>
#include <cmath>

#include "campaign/checkpoint_policy.hpp"
#include "campaign/monte_carlo.hpp"
#include "campaign_test_support.hpp"

using namespace clustersim;
using namespace clustersim::campaign;
using namespace clustersim::campaign::testing;

namespace {
constexpr double kHour = 3600;
constexpr double kDay = 86400;

double hung_seconds(const TrialTrace& trace) {
  double total = 0;
  for (const auto& s : trace.segments) {
    if (s.phase == Phase::hung) total += s.t1 - s.t0;
  }
  return total;
}

const TraceEvent* find_event(const TrialTrace& trace, const std::string& kind) {
  for (const auto& e : trace.events) {
    if (e.kind == kind) return &e;
  }
  return nullptr;
}
}  // namespace

TEST_CASE("with faults off the run takes exactly tokens divided by throughput") {
  const ToyRun s = toy_scenario();
  const double step = 5.0;
  const CampaignModel m = make_model(s, step);
  const double expected = kTokensTotal / (kTokensPerStep / step);  // 4,172,325.1 s
  const TrialResult r = run_trial(m, 1, nullptr);
  CHECK(r.finished);
  CHECK(r.interruptions == 0);
  CHECK(r.wall_s == Approx(expected).epsilon(1e-12));
  CHECK(r.goodput == Approx(1.0).epsilon(1e-12));
}

TEST_CASE("blocking checkpoints without failures add their save time once per interval") {
  ToyRun s = toy_scenario();
  s.checkpointing = section("checkpointing",
                            R"({"interval": "fixed", "interval_min": 60, "save_s": 20,
                                "load_s": 20})");
  const double step = 5.0;
  const CampaignModel m = make_model(s, step);
  const double productive = kTokensTotal / (kTokensPerStep / step);
  // A checkpoint starts after every full hour of training; the last partial hour has none.
  const double checkpoints = std::floor(productive / 3600.0);
  const TrialResult r = run_trial(m, 1, nullptr);
  CHECK(r.checkpoints == static_cast<int>(checkpoints));
  CHECK(r.wall_s == Approx(productive + 20.0 * checkpoints).epsilon(1e-12));
}

TEST_CASE("the Young interval matches its closed form") {
  // Worked example (docs/faults.md#checkpoint-and-restart): M = 3.09 h (Llama 3's job MTTI)
  // and delta = 300 s give 43 min.
  CHECK(young_interval_s(300, 3.09 * kHour) / 60 == Approx(43.05).margin(0.01));
  CHECK(young_interval_s(60, 3.09 * kHour) / 60 == Approx(19.25).margin(0.01));
  CHECK(young_interval_s(2.0, 8.0) == Approx(std::sqrt(2.0 * 2.0 * 8.0)));
}

TEST_CASE("the Daly interval matches the values in Daly's paper") {
  // Daly (2006): delta = 5 min gives 117, 57 and 9.1 min for M = 24 h, 6 h and 15 min.
  CHECK(daly_interval_s(300, 24 * kHour) / 60 == Approx(116.7).margin(0.1));
  CHECK(daly_interval_s(300, 6 * kHour) / 60 == Approx(56.7).margin(0.1));
  CHECK(daly_interval_s(300, 15 * 60) / 60 == Approx(9.14).margin(0.01));
  // Past delta >= 2M the optimum is M itself.
  CHECK(daly_interval_s(100, 40) == Approx(40));
}

TEST_CASE("the campaign's Young interval uses the job MTBF of the Llama 3 failure rates") {
  ToyRun s = toy_scenario();
  s.faults = section("faults", R"({"failure_rates": {"model": "llama3"}})");
  s.checkpointing =
      section("checkpointing", R"({"interval": "young", "save_s": 60, "load_s": 60})");
  const CampaignModel m = make_model(s, 5.0);
  // Llama 3 Table 5: 419 interruptions in 16,384 GPUs x 54 days; causes counted per GPU, per
  // NIC (one per GPU) and per node (8 GPUs) all scale with the GPUs, so 1024 GPUs see
  // 419 x 1024 / 16384 per 54 days.
  const double mtbf_s = 54.0 * kDay / (419.0 * 1024 / 16384);
  CHECK(m.failure_rate_per_s * mtbf_s == Approx(1.0).epsilon(1e-9));
  CHECK(m.interval_s == Approx(std::sqrt(2.0 * 60.0 * mtbf_s)).epsilon(1e-9));

  s.checkpointing = section("checkpointing", R"({"interval": "daly", "save_s": 60, "load_s": 60})");
  const CampaignModel d = make_model(s, 5.0);
  const double ratio = 60.0 / (2.0 * mtbf_s);
  CHECK(d.interval_s ==
        Approx(std::sqrt(2.0 * 60.0 * mtbf_s) * (1 + std::sqrt(ratio) / 3 + ratio / 9) - 60.0)
            .epsilon(1e-9));
}

TEST_CASE("a Young interval of a checkpoint that costs next to nothing is refused") {
  ToyRun s = toy_scenario();
  s.faults = section("faults", R"({"failure_rates": {"model": "llama3"}})");
  // A 1 ns save: sqrt(2 x 1e-9 s x 178,163 s) = 0.019 s between checkpoints, so 365 days
  // (campaign.max_days' default) would hold about 1.7e9 checkpoints, above the 1e7 a trial may
  // hold. The error names the interval policy that computed it.
  s.checkpointing =
      section("checkpointing", R"({"interval": "young", "save_s": 1e-9, "load_s": 60})");
  CHECK_THROWS_WITH(make_model(s, 5.0),
                    Catch::Contains("scenarios/toy.json:/checkpointing/interval:") &&
                        Catch::Contains("checkpoints in one trial, above the limit of 1e+07"));
  // A minute's save: sqrt(2 x 60 s x 178,163 s) = 4,624 s, about 6,800 checkpoints a year.
  s.checkpointing =
      section("checkpointing", R"({"interval": "young", "save_s": 60, "load_s": 60})");
  CHECK_NOTHROW(make_model(s, 5.0));
}

TEST_CASE("a slowed GPU stretches the step in the fallback model and is named") {
  const ToyRun s = toy_scenario();
  const StepModel step = fixed_step_model(s, 5.0, 0.4, 0.0);
  StepFaults f;
  f.slow_gpus.push_back({234, 0.5, 0.0, "ECC down-clocking"});
  const StepEstimate e = step(f);
  CHECK(e.step_time_s == Approx(10.0));
  CHECK(e.mfu == Approx(0.2));
  CHECK(e.slowest == "rank 234");
}

TEST_CASE("a GPU slowed to half speed for the rest of the run doubles the remaining time") {
  ToyRun s = toy_scenario();
  s.faults = section("faults", R"({"events": [{"kind": "gpu_slowdown", "rank": 7,
                                    "speed_factor": 0.5, "from_h": 5}]})");
  const double step = 5.0;
  const CampaignModel m = make_model(s, step);
  const double productive = kTokensTotal / (kTokensPerStep / step);
  const TrialResult r = run_trial(m, 1, nullptr);
  CHECK(r.wall_s == Approx(5 * kHour + 2.0 * (productive - 5 * kHour)).epsilon(1e-12));
  REQUIRE(m.scripted.size() == 1);
  CHECK(m.scripted[0].slowdown == Approx(2.0));
  CHECK(m.scripted[0].step.slowest == "rank 7");
}

TEST_CASE("a detected slow GPU is replaced after the detection delay") {
  ToyRun s = toy_scenario();
  s.faults = section("faults", R"({"events": [{"kind": "gpu_slowdown", "rank": 7,
                                    "speed_factor": 0.5, "from_h": 5}],
                                   "stragglers": {"policy": "replace", "detect_after_s": 600}})");
  s.checkpointing = section("checkpointing", R"({"interval": "fixed", "interval_min": 60,
                                    "save_s": 10, "load_s": 10,
                                    "restart": {"reschedule_s": 100, "init_s": 20}})");
  const CampaignModel m = make_model(s, 5.0);
  TrialTrace trace;
  const TrialResult r = run_trial(m, 1, &trace);
  const TraceEvent* e = find_event(trace, "replacement");
  REQUIRE(e != nullptr);
  CHECK(e->t == Approx(5 * kHour + 600));
  CHECK(r.interruptions_by_cause.at("replacement: GPU slowdown (rank 7)") == 1);
  // Replacement: a blocking save (10 s) and a restart (100 + 20 + 10 s), no lost work.
  CHECK(r.lost_s_by_cause.at("replacement: GPU slowdown (rank 7)") == Approx(140));
}

TEST_CASE("a down link crashes the job after exactly the NCCL timeout its settings imply") {
  ToyRun s = toy_scenario();
  s.faults = section("faults", R"({"events": [{"kind": "link_down", "link": "node3/nic5-leaf",
                                    "from_h": 10}]})");
  s.checkpointing = section("checkpointing", R"({"interval": "fixed", "interval_min": 60,
                                    "save_s": 10, "load_s": 10,
                                    "restart": {"reschedule_s": 100, "init_s": 20}})");
  SECTION("the seed's NCCL_IB_TIMEOUT=22, NCCL_IB_RETRY_CNT=12 (capped at 7)") {
    s.comm.nccl.ib_timeout = 22;
    s.comm.nccl.ib_retry_cnt = 7;
    const CampaignModel m = make_model(s, 5.0);
    // 4.096 us x 2^22 = 17.18 s per try, 1 + 7 tries.
    const double expected = 4.096e-6 * 4194304.0 * 8;
    CHECK(m.ib_detection_s == Approx(expected).epsilon(1e-12));
    TrialTrace trace;
    const TrialResult r = run_trial(m, 1, &trace);
    const TraceEvent* f = find_event(trace, "failure");
    REQUIRE(f != nullptr);
    CHECK(f->t == Approx(10 * kHour));
    CHECK(f->cause == "link down");
    CHECK(hung_seconds(trace) == Approx(expected).epsilon(1e-9));
    const TraceEvent* restart = find_event(trace, "restart");
    REQUIRE(restart != nullptr);
    CHECK(restart->t == Approx(10 * kHour + expected + 130));
    CHECK(r.interruptions == 1);
  }
  SECTION("NCCL's defaults (20, 7) give 34.4 s") {
    const CampaignModel m = make_model(s, 5.0);
    TrialTrace trace;
    run_trial(m, 1, &trace);
    CHECK(hung_seconds(trace) == Approx(4.096e-6 * 1048576.0 * 8).epsilon(1e-9));
  }
  SECTION("a framework watchdog shorter than NCCL's retries fires first") {
    s.comm.nccl.ib_timeout = 22;
    s.faults = section("faults", R"({"watchdog_timeout_s": 60,
                                     "events": [{"kind": "link_down",
                                                 "link": "node3/nic5-leaf", "from_h": 10}]})");
    const CampaignModel m = make_model(s, 5.0);
    TrialTrace trace;
    run_trial(m, 1, &trace);
    CHECK(hung_seconds(trace) == Approx(60));
  }
}

TEST_CASE("Monte Carlo results repeat for a seed and change with it") {
  ToyRun s = toy_scenario();
  s.faults = section("faults", R"({"failure_rates": {"model": "llama3"}})");
  s.checkpointing =
      section("checkpointing", R"({"interval": "young", "save_s": 60, "load_s": 60})");
  const CampaignModel m = make_model(s, 5.0);
  const CampaignSummary a = run_campaign(m, 40, 7);
  const CampaignSummary b = run_campaign(m, 40, 7);
  const CampaignSummary c = run_campaign(m, 40, 8);
  CHECK(a.days.mean == b.days.mean);
  CHECK(a.days.p90 == b.days.p90);
  CHECK(a.interruptions_by_cause == b.interruptions_by_cause);
  CHECK(a.gpu_hours_lost_by_cause == b.gpu_hours_lost_by_cause);
  CHECK(a.days.mean != c.days.mean);
}

TEST_CASE("the spread of the Monte Carlo mean narrows as trials grow") {
  ToyRun s = toy_scenario();
  s.faults = section("faults", R"({"failure_rates": {"model": "llama3"}})");
  s.checkpointing = section("checkpointing",
                            R"({"interval": "fixed", "interval_min": 120, "save_s": 60,
                                "load_s": 60})");
  const CampaignModel m = make_model(s, 5.0);
  const auto spread_of_means = [&](int trials) {
    std::vector<double> means;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      means.push_back(run_campaign(m, trials, seed).days.mean);
    }
    return describe(means).stddev;
  };
  const double few = spread_of_means(16);
  const double many = spread_of_means(256);
  // The standard error shrinks as 1/sqrt(trials): 16x the trials, a quarter of the spread.
  CHECK(many < few / 2);
}

TEST_CASE("failures arrive at the configured rate over the job's up-time") {
  ToyRun s = toy_scenario();
  s.faults = section("faults", R"({"failure_rates": {"model": "none",
                                    "causes": {"gpu": {"per_gpu_hour": 2e-5,
                                                       "detection": "crash"}}}})");
  s.checkpointing = section("checkpointing", R"({"interval": "fixed", "interval_min": 60,
                                    "save_s": 10, "load_s": 10,
                                    "restart": {"reschedule_s": 100, "init_s": 20}})");
  const CampaignModel m = make_model(s, 5.0);
  double failures = 0, uptime = 0;
  for (int i = 0; i < 300; ++i) {
    const TrialResult r = run_trial(m, trial_seed(3, i), nullptr);
    failures += r.interruptions;
    uptime += r.wall_s - r.interruptions * (kCrashDetection_s + 130);
  }
  const double rate_per_h = 2e-5 * 1024;
  // About 300 x 25 failures: the estimate's relative standard error is ~1.2%.
  CHECK(failures / (uptime / kHour) == Approx(rate_per_h).epsilon(0.05));
}

TEST_CASE("every second of a trial is productive or attributed to a cause") {
  ToyRun s = toy_scenario();
  s.faults = section("faults", R"({
      "failure_rates": {"model": "rsc1"},
      "stragglers": {"classes": [{"name": "hot", "target": "gpu", "rate_per_gpu_hour": 1e-5,
                                  "speed_factor": 0.7, "duration_median_s": 3600,
                                  "duration_sigma": 1.0}],
                     "policy": "replace"},
      "loss_spikes": {"outlier_rate_per_Ttokens": 2, "skip_batches": 200},
      "drift": {"from_step_time_s": 1.2, "to_step_time_s": 2.8, "over_days": 20}})");
  s.checkpointing = section("checkpointing", R"({"interval": "daly", "mode": "async",
                                    "save_s": 120, "async_stall_s": 2, "load_s": 60})");
  const CampaignModel m = make_model(s, 5.0);
  for (int i = 0; i < 20; ++i) {
    const TrialResult r = run_trial(m, trial_seed(11, i), nullptr);
    REQUIRE(r.finished);
    double attributed = 0;
    for (const auto& [cause, seconds] : r.lost_s_by_cause) attributed += seconds;
    CHECK(r.wall_s == Approx(m.productive_s + attributed).epsilon(1e-9));
  }
}

TEST_CASE("step-time drift follows its closed form and the mitigations remove it") {
  ToyRun s = toy_scenario();
  const double step = 2.0;
  const double productive = kTokensTotal / (kTokensPerStep / step);
  // The seed: 1.2 s -> 2.8 s over 20 days, linear in process age.
  const double g = (2.8 / 1.2 - 1.0) / 20.0 / kDay;
  SECTION("unmitigated: wall W solves integral_0^W da / (1 + g a) = T") {
    s.faults = section("faults", R"({"drift": {"from_step_time_s": 1.2,
                                      "to_step_time_s": 2.8, "over_days": 20}})");
    const CampaignModel m = make_model(s, step);
    const TrialResult r = run_trial(m, 1, nullptr);
    CHECK(r.wall_s == Approx(std::expm1(g * productive) / g).epsilon(1e-9));
  }
  SECTION("cache clearing alone halves the growth (fragmentation share 0.5)") {
    s.faults = section("faults", R"({"drift": {"from_step_time_s": 1.2,
                                      "to_step_time_s": 2.8, "over_days": 20,
                                      "mitigations": {"empty_cache_every_steps": 1000,
                                                      "empty_cache_cost_s": 2}}})");
    const CampaignModel m = make_model(s, step);
    const double k = 1.0 + 2.0 / (1000 * step);
    const TrialResult r = run_trial(m, 1, nullptr);
    CHECK(r.wall_s == Approx(std::expm1(g / 2 * k * productive) / (g / 2)).epsilon(1e-9));
  }
  SECTION("both mitigations: no growth, only their own cost") {
    s.faults = section("faults", R"({"drift": {"from_step_time_s": 1.2,
                                      "to_step_time_s": 2.8, "over_days": 20,
                                      "mitigations": {"empty_cache_every_steps": 1000,
                                                      "empty_cache_cost_s": 2,
                                                      "limit_loader_workers": true,
                                                      "loader_slowdown": 0.01}}})");
    const CampaignModel m = make_model(s, step);
    const TrialResult r = run_trial(m, 1, nullptr);
    CHECK(r.wall_s == Approx(productive * (1.0 + 2.0 / (1000 * step) + 0.01)).epsilon(1e-12));
  }
}

TEST_CASE("NaN events from outlier samples follow their rate and the sample filter removes them") {
  ToyRun s = toy_scenario();
  s.checkpointing = section("checkpointing", R"({"interval": "fixed", "interval_min": 60,
                                    "save_s": 10, "load_s": 10})");
  const auto mean_nans = [&](const std::string& filter) {
    s.faults = section("faults", R"({"loss_spikes": {"outlier_rate_per_Ttokens": 2,
                                      "outlier_min_tokens": 32768, "skip_batches": 300)" +
                                     filter + "}}");
    const CampaignModel m = make_model(s, 5.0);
    return run_campaign(m, 400, 5).interruptions.mean;
  };
  // 2 per trillion tokens over 3.5T tokens: 7 per run (standard error of the mean ~0.13).
  CHECK(mean_nans("") == Approx(7.0).margin(0.5));
  // The seed's filter (max 8192 tokens) drops the > 32k-token samples that cause them.
  CHECK(mean_nans(R"(, "sample_filter": {"max_tokens": 8192, "min_loss_mask_tokens": 10,
                                         "data_fraction_removed": 0.003})") == 0.0);
  // A filter that keeps 64k-token samples does not.
  CHECK(mean_nans(R"(, "sample_filter": {"max_tokens": 65536,
                                         "data_fraction_removed": 0.001})") ==
        Approx(7.0).margin(0.5));
}

TEST_CASE("a failure during an async persist loses that checkpoint") {
  // Deterministic check through the accounting: with one failure at a known time the lost work
  // reaches back to the last checkpoint that finished persisting.
  ToyRun s = toy_scenario();
  s.faults = section("faults", R"({"events": [{"kind": "node_lost", "node": 3,
                                    "at_s": 3650}]})");
  s.checkpointing = section("checkpointing", R"({"interval": "fixed", "interval_min": 60,
                                    "mode": "async", "save_s": 100, "async_stall_s": 5,
                                    "load_s": 10})");
  const CampaignModel m = make_model(s, 5.0);
  const TrialResult r = run_trial(m, 1, nullptr);
  // The checkpoint stalls 3600..3605 and persists until 3700: the node is lost at 3650, so
  // all 3645 s of progress are lost.
  const double detection = m.network_detection_s;
  CHECK(r.lost_s_by_cause.at("node lost") == Approx(3645 + detection + m.restart_s));
}
