// The run sections of a scenario ("faults", "checkpointing", "cost", "campaign") as every
// command reads them: `check`, `run` and `campaign` refuse the same bad section with exit 2 and
// the same message naming the file and JSON pointer, before anything is simulated or written.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path dir = [] {
    std::string name = "clustersim-test-cli-sections-";
    name += std::to_string(::getpid());
    const fs::path d = fs::temp_directory_path() / name;
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Run {
  int exit_code = -1;
  std::string err;
};

// `clustersim COMMAND SCENARIO --json OUT`, stderr captured; OUT must not appear.
Run run(const std::string& command, const fs::path& scenario, const fs::path& out) {
  const fs::path err = scratch() / "stderr.txt";
  const std::string cmd = std::string("'") + CLUSTERSIM_BINARY + "' " + command + " '" +
                          scenario.string() + "' --json '" + out.string() + "' >/dev/null 2>'" +
                          err.string() + "'";
  const int status = std::system(cmd.c_str());
  Run r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(err);
  return r;
}

// `patch` merged into `target`, objects key by key; unlike RFC 7386 a null is set, not removed.
void merge(nlohmann::json& target, const nlohmann::json& patch) {
  if (!patch.is_object() || !target.is_object()) {
    target = patch;
    return;
  }
  for (const auto& [key, value] : patch.items()) {
    if (!target.contains(key)) target[key] = nullptr;
    merge(target[key], value);
  }
}

// A small valid scenario (16 GPUs) whose campaign gives its step time, with `patch` merged in.
fs::path scenario_with(const std::string& name, const std::string& patch) {
  nlohmann::json s = nlohmann::json::parse(R"({
    "name": "sections", "model": "llama3-8b", "cluster": "h800-128x8-rail", "gpus": 16,
    "parallelism": {"dp": 2, "tp": 8},
    "training": {"global_batch": 64, "micro_batch": 1, "seq_len": 4096, "tokens_total": 1e9},
    "campaign": {"trials": 2, "step_time_s": 1.0, "mfu": 0.4}})");
  merge(s, nlohmann::json::parse(patch));
  const fs::path p = scratch() / name;
  std::ofstream(p) << s.dump(2);
  return p;
}

struct Case {
  const char* name;
  const char* patch;
  const char* pointer;  // expected in the message after the file name
  const char* words;    // expected in the message
};

const Case kCases[] = {
    // Strings for numbers.
    {"faults-string", R"({"faults": {"watchdog_timeout_s": "600"}})", "/faults/watchdog_timeout_s",
     "expected a number"},
    {"checkpointing-string",
     R"({"checkpointing": {"interval": "fixed", "interval_min": "60", "save_s": 1, "load_s": 1}})",
     "/checkpointing/interval_min", "expected a number"},
    {"cost-string", R"({"cost": {"usd_per_gpu_hour": "2", "source": "quote"}})",
     "/cost/usd_per_gpu_hour", "expected a number"},
    {"campaign-string", R"({"campaign": {"trials": "10"}})", "/campaign/trials",
     "expected an integer"},
    // Nulls.
    {"faults-null", R"({"faults": {"crash_detection_s": null}})", "/faults/crash_detection_s",
     "expected a number, got null"},
    {"checkpointing-null", R"({"checkpointing": {"interval": null}})", "/checkpointing/interval",
     "expected a string, got null"},
    {"cost-null", R"({"cost": {"usd_per_gpu_hour": 2, "source": null}})", "/cost/source",
     "expected a string, got null"},
    {"campaign-null", R"({"campaign": {"max_days": null}})", "/campaign/max_days",
     "expected a number, got null"},
    {"faults-section-null", R"({"faults": null})", "/faults", "expected an object, got null"},
    // Negative rates.
    {"faults-negative-rate",
     R"({"faults": {"failure_rates": {"causes": {"gpu": {"per_gpu_hour": -1e-5}}}}})",
     "/faults/failure_rates/causes/gpu/per_gpu_hour", "negative failure rate"},
    {"faults-negative-straggler-rate",
     R"({"faults": {"stragglers": {"classes": [{"name": "hot", "target": "gpu",
         "rate_per_gpu_hour": -1, "speed_factor": 0.7, "duration_median_s": 60}]}}})",
     "/faults/stragglers/classes/0/rate_per_gpu_hour", "negative rate"},
    {"faults-negative-spike-rate", R"({"faults": {"loss_spikes": {"other_rate_per_Ttokens": -2}}})",
     "/faults/loss_spikes/other_rate_per_Ttokens", "negative rate"},
    {"checkpointing-negative-rate",
     R"({"checkpointing": {"interval": "young", "write_GBps": -5, "read_GBps": 5}})",
     "/checkpointing/write_GBps", "out of range"},
    {"cost-negative", R"({"cost": {"usd_per_gpu_hour": -2, "source": "quote"}})",
     "/cost/usd_per_gpu_hour", "out of range"},
    // Intervals and delays that would blow up or never end.
    {"monitor-interval-tiny", R"({"campaign": {"monitor_interval_min": 1e-6}})",
     "/campaign/monitor_interval_min", "out of range"},
    {"monitor-rows", R"({"campaign": {"monitor_interval_min": 0.02}})",
     "/campaign/monitor_interval_min", "rows, above the limit of 1e+07"},
    {"checkpoint-interval-tiny",
     R"({"checkpointing": {"interval": "fixed", "interval_min": 1e-308, "save_s": 1,
         "load_s": 1}})",
     "/checkpointing/interval_min", "out of range"},
    {"reschedule-huge",
     R"({"checkpointing": {"interval": "none", "restart": {"reschedule_s": 1e308}}})",
     "/checkpointing/restart/reschedule_s", "out of range"},
    {"failures-too-many",
     R"({"faults": {"failure_rates": {"model": "none", "scale": 1000,
                                      "causes": {"flaky": {"per_gpu_hour": 1}}}},
         "campaign": {"max_days": 3650}})",
     "/faults/failure_rates", "failures in one trial, above the limit"},
    // A fault on a link the cluster does not have, at the fault's own JSON pointer.
    {"faults-unknown-link",
     R"({"faults": {"events": [{"kind": "link_down", "link": "node1/nic0-leef", "from_h": 1}]}})",
     "/faults/events/0/link", "unknown link \"node1/nic0-leef\"; did you mean \"node1/nic0-leaf\""},
};

}  // namespace

TEST_CASE("check, run and campaign refuse a broken run section with the same message") {
  for (const Case& c : kCases) {
    INFO(c.name);
    const fs::path input = scenario_with(std::string(c.name) + ".json", c.patch);
    const fs::path out = scratch() / (std::string(c.name) + ".out.json");
    const Run checked = run("check", input, out);
    CHECK(checked.exit_code == 2);
    CHECK_THAT(checked.err, Catch::Contains(std::string(c.name) + ".json:" + c.pointer + ":") &&
                                Catch::Contains(c.words));
    for (const char* command : {"run", "campaign"}) {
      INFO(command);
      const Run other = run(command, input, out);
      CHECK(other.exit_code == 2);
      CHECK(other.err == checked.err);
    }
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("the scenario these cases break is valid for check, run and campaign", "[slow]") {
  const fs::path input = scenario_with("valid.json", "{}");
  for (const char* command : {"check", "campaign"}) {
    INFO(command);
    const fs::path out = scratch() / (std::string(command) + "-valid.out.json");
    const Run r = run(command, input, out);
    CHECK(r.exit_code == 0);
    CHECK(fs::exists(out));
  }
}

namespace {

nlohmann::json source_json(const std::string& relative) {
  return nlohmann::json::parse(slurp(std::string(CLUSTERSIM_SOURCE_DIR) + "/" + relative));
}

// The scenario of the cases above on a layout that does not fit in memory (llama3-8b without
// sharding: 16 bytes per parameter, about 128 GB per GPU against 80 GB), its cluster and GPU
// written inline from the shipped presets, with `cluster_patch` merged into the cluster.
fs::path unfit_scenario_with_cluster(const std::string& name, const nlohmann::json& cluster_patch) {
  nlohmann::json cluster = source_json("topologies/clusters/h800-128x8-rail.json");
  cluster["gpu"] = source_json("topologies/gpus/h800-sxm.json");
  merge(cluster, cluster_patch);
  nlohmann::json patch;
  patch["parallelism"] = {{"dp", 16}, {"tp", 1}, {"zero_stage", 0}};
  patch["cluster"] = cluster;
  return scenario_with(name, patch.dump());
}

}  // namespace

TEST_CASE("check, run and campaign refuse a malformed calibration file at its JSON pointer") {
  // The calibrations are read with the scenario, before run's memory verdict (this layout does
  // not fit) and although campaign, given its step time, simulates no step.
  nlohmann::json compute = source_json("validation/data/compute_efficiency.json");
  compute["memory"]["hbm_efficiency"]["achieved_TBps"] = "fast";
  const fs::path compute_file = scratch() / "broken-compute.json";
  std::ofstream(compute_file) << compute.dump(2);
  nlohmann::json network = source_json("validation/data/calibration-h100-published.json");
  REQUIRE_FALSE(network["network"].empty());
  network["network"][0]["regimes"][0]["latency_us"] = -1;
  const fs::path network_file = scratch() / "broken-network.json";
  std::ofstream(network_file) << network.dump(2);

  struct Broken {
    const char* name;
    nlohmann::json cluster_patch;
    std::string expected;  // file and pointer
    const char* words;
  };
  const Broken cases[] = {
      {"broken-compute-calibration",
       {{"gpu", {{"compute_calibration", compute_file.string()}}}},
       compute_file.string() + ":/memory/hbm_efficiency/achieved_TBps:",
       "expected a number"},
      {"broken-network-calibration",
       {{"calibration", network_file.string()}},
       network_file.string() + ":/network/0/regimes/0/latency_us:",
       "must not be negative"},
  };
  for (const Broken& c : cases) {
    INFO(c.name);
    const fs::path input =
        unfit_scenario_with_cluster(std::string(c.name) + ".json", c.cluster_patch);
    const fs::path out = scratch() / (std::string(c.name) + ".out.json");
    for (const char* command : {"check", "run", "campaign"}) {
      INFO(command);
      const Run r = run(command, input, out);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.err, Catch::Contains(c.expected) && Catch::Contains(c.words));
    }
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("without a broken calibration, run gives the unfit layout its memory verdict") {
  // The scenario the case above breaks: valid, so run stops at the memory verdict (exit 1).
  const fs::path input = unfit_scenario_with_cluster("unfit.json", nlohmann::json::object());
  const fs::path out = scratch() / "unfit.out.json";
  CHECK(run("check", input, out).exit_code == 0);
  CHECK(run("run", input, out).exit_code == 1);
}
