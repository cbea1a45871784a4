#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/failure_rates.hpp"
#include "input/input_loader.hpp"

using namespace clustersim;

namespace {

// The shipped seed-dp-1024 scenario with extra sections, loaded as if from `name`, fault links
// checked against a few of its cluster graph's names.
InputBundle input_with(const std::string& sections_json, const std::string& name) {
  std::ifstream in(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/seed-dp-1024.json");
  std::stringstream buffer;
  buffer << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(buffer.str());
  const nlohmann::json sections = nlohmann::json::parse(sections_json);
  for (const auto& [key, value] : sections.items()) j[key] = value;
  LoadOptions options;
  options.link_names = [](const ClusterSpec&, int) {
    return std::vector<std::string>{"node3/nic5-leaf", "node3/nic4-leaf", "node3/gpu5-nvlink",
                                    "leaf0-spine0"};
  };
  return load_input(JsonDocument::parse(j.dump(2), name), options);
}

// The error loading this "faults" section raises, with the run taking 40 days ("" if none).
std::string fault_error(const std::string& faults_json) {
  try {
    const InputBundle b = input_with(R"({"faults": )" + faults_json + "}", "scenarios/bad.json");
    check_fault_times(b.faults, 40 * 86400.0);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sections loaded with a scenario keep their file and pointer") {
  CHECK_THROWS_WITH(
      input_with(R"({"faults": {"watchdog_timeout_s": -5}})", "scenarios/watchdog.json"),
      Catch::Contains("scenarios/watchdog.json:/faults/watchdog_timeout_s"));
}

TEST_CASE("bad fault specifications get errors naming the JSON path") {
  SECTION("unknown rank") {
    const auto e = fault_error(R"({"events": [{"kind": "gpu_slowdown", "rank": 4096,
                                               "speed_factor": 0.5, "from_days": 3}]})");
    CHECK_THAT(e, Catch::Contains("scenarios/bad.json:/faults/events/0/rank") &&
                      Catch::Contains("4096 is not a rank of this 1024-GPU job"));
  }
  SECTION("unknown link, with the nearest name suggested") {
    const auto e = fault_error(R"({"events": [{"kind": "link_down", "link": "node3/nic5-leef",
                                               "from_days": 3}]})");
    CHECK_THAT(e, Catch::Contains("scenarios/bad.json:/faults/events/0/link") &&
                      Catch::Contains("unknown link \"node3/nic5-leef\"") &&
                      Catch::Contains("did you mean \"node3/nic5-leaf\""));
  }
  SECTION("unknown node") {
    const auto e = fault_error(R"({"events": [{"kind": "node_lost", "node": 128,
                                               "at_days": 3}]})");
    CHECK_THAT(e, Catch::Contains("/faults/events/0/node") &&
                      Catch::Contains("128 is not a node of this job (nodes 0..127)"));
  }
  SECTION("negative failure rate") {
    const auto e = fault_error(R"({"failure_rates": {"model": "llama3",
                                   "causes": {"gpu": {"per_gpu_hour": -1e-5}}}})");
    CHECK_THAT(e, Catch::Contains("/faults/failure_rates/causes/gpu/per_gpu_hour") &&
                      Catch::Contains("negative failure rate"));
  }
  SECTION("negative straggler rate") {
    const auto e = fault_error(R"({"stragglers": {"classes": [{"name": "hot", "target": "gpu",
                                   "rate_per_gpu_hour": -1, "speed_factor": 0.7,
                                   "duration_median_s": 60}]}})");
    CHECK_THAT(e, Catch::Contains("/faults/stragglers/classes/0/rate_per_gpu_hour") &&
                      Catch::Contains("negative rate"));
  }
  SECTION("a time past the end of the run") {
    const auto e = fault_error(R"({"events": [{"kind": "gpu_slowdown", "rank": 3,
                                               "speed_factor": 0.5, "from_days": 45}]})");
    CHECK_THAT(e, Catch::Contains("/faults/events/0/from_days") &&
                      Catch::Contains("past the end of the run (it takes 40 days"));
  }
  SECTION("an end before the start") {
    const auto e = fault_error(R"({"events": [{"kind": "link_degraded",
                                   "link": "node3/nic5-leaf", "bandwidth_factor": 0.5,
                                   "from_h": 5, "until_h": 4}]})");
    CHECK_THAT(e, Catch::Contains("/faults/events/0/until_h") &&
                      Catch::Contains("is not after the start"));
  }
  SECTION("a slowdown factor above 1") {
    const auto e = fault_error(R"({"events": [{"kind": "gpu_slowdown", "rank": 3,
                                               "speed_factor": 1.5, "from_days": 3}]})");
    CHECK_THAT(
        e, Catch::Contains("/faults/events/0/speed_factor") && Catch::Contains("1.5 is above 1"));
  }
  SECTION("a misspelt key, with a suggestion") {
    const auto e = fault_error(R"({"events": [{"kind": "gpu_slowdown", "rank": 3,
                                               "speed_facter": 0.5, "from_days": 3}]})");
    CHECK_THAT(e, Catch::Contains("/faults/events/0/speed_facter") &&
                      Catch::Contains("did you mean \"speed_factor\""));
  }
  SECTION("an unknown fault kind lists the valid ones") {
    const auto e = fault_error(R"({"events": [{"kind": "gpu_melts", "rank": 3}]})");
    CHECK_THAT(e, Catch::Contains("/faults/events/0/kind") &&
                      Catch::Contains("gpu_slowdown, link_degraded, link_down, node_lost"));
  }
  SECTION("two start times") {
    const auto e = fault_error(R"({"events": [{"kind": "gpu_slowdown", "rank": 3,
                                   "speed_factor": 0.5, "from_days": 3, "from_h": 2}]})");
    CHECK_THAT(e, Catch::Contains("/faults/events/0/from_days") &&
                      Catch::Contains("\"from_h\" and \"from_days\" both give this time"));
  }
}

TEST_CASE("fault events become the step simulator's StepFaults") {
  const InputBundle b = input_with(R"({"faults": {"events": [
      {"kind": "gpu_slowdown", "rank": 234, "speed_factor": 0.5, "from_days": 3,
       "cause": "ECC down-clocking"},
      {"kind": "link_degraded", "link": "node3/nic5-leaf", "bandwidth_factor": 0.25,
       "from_h": 10, "until_h": 12},
      {"kind": "link_down", "link": "node3/nic4-leaf", "from_s": 100},
      {"kind": "node_lost", "node": 12, "at_days": 5}]}})",
                                   "scenarios/events.json");
  const StepFaults f = scripted_step_faults(b.faults.events);
  REQUIRE(f.slow_gpus.size() == 1);
  CHECK(f.slow_gpus[0].rank == 234);
  CHECK(f.slow_gpus[0].speed_factor == 0.5);
  CHECK(f.slow_gpus[0].from_s == 3 * 86400.0);
  CHECK(f.slow_gpus[0].cause == "ECC down-clocking");
  REQUIRE(f.links.size() == 2);
  CHECK(f.links[0].link == "node3/nic5-leaf");
  CHECK(f.links[0].bandwidth_factor == 0.25);
  CHECK(!f.links[0].down);
  CHECK(f.links[0].from_s == 36000.0);
  CHECK(f.links[0].until_s == 43200.0);
  CHECK(f.links[1].down);
  REQUIRE(f.lost_nodes.size() == 1);
  CHECK(f.lost_nodes[0].node == 12);
  CHECK(f.lost_nodes[0].at_s == 5 * 86400.0);

  const StepFaults at_11h = step_faults_at(b.faults.events, 11 * 3600.0);
  // At 11 h: the slowdown has not started; the degraded link and the down link are active.
  CHECK(at_11h.slow_gpus.empty());
  REQUIRE(at_11h.links.size() == 2);
  CHECK(at_11h.links[0].from_s == 0.0);
}

TEST_CASE("the checkpoint section derives save and load times from size and bandwidth") {
  const InputBundle b = input_with(R"({"checkpointing": {"interval": "young",
      "write_GBps": 125, "read_GBps": 250, "restart": {"reschedule_s": 600, "init_s": 90}}})",
                                   "scenarios/ckpt.json");
  const CheckpointConfig c = b.checkpointing.resolved_for(70e9);
  // 14 bytes per parameter (BF16 weights, FP32 master weights, two FP32 Adam moments).
  CHECK(c.size_bytes == Approx(980e9));
  CHECK(c.save_s == Approx(980.0 / 125));
  CHECK(c.load_s == Approx(980.0 / 250));
  CHECK(c.reschedule_s == 600);
  CHECK(c.init_s == 90);
  CHECK(c.policy == IntervalPolicy::young);
}

// The error loading these sections raises (the checkpoint resolved for a 70B model).
std::string section_error(const std::string& sections_json, const std::string& name) {
  try {
    input_with(sections_json, name).checkpointing.resolved_for(70e9);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("checkpoint section errors name the key") {
  SECTION("fixed interval without its length") {
    CHECK_THAT(section_error(R"({"checkpointing": {"interval": "fixed",
                                 "save_s": 10, "load_s": 10}})",
                             "scenarios/c1.json"),
               Catch::Contains("scenarios/c1.json:/checkpointing/interval_min"));
  }
  SECTION("async stall longer than the save") {
    CHECK_THAT(section_error(R"({"checkpointing": {"interval": "young", "mode": "async",
                                 "save_s": 10, "async_stall_s": 20, "load_s": 10}})",
                             "scenarios/c2.json"),
               Catch::Contains("/checkpointing/async_stall_s") &&
                   Catch::Contains("20 exceeds the full save time (10 s)"));
  }
  SECTION("async stall longer than the save its storage rate gives the model") {
    // 70e9 parameters x 14 bytes = 980 GB at 100 GB/s: 9.8 s.
    CHECK_THAT(section_error(R"({"checkpointing": {"interval": "young", "mode": "async",
                                 "write_GBps": 100, "async_stall_s": 20, "load_s": 10}})",
                             "scenarios/c4.json"),
               Catch::Contains("/checkpointing/async_stall_s") &&
                   Catch::Contains("exceeds the full save time (9.8 s)"));
  }
  SECTION("missing storage bandwidth") {
    CHECK_THAT(section_error(R"({"checkpointing": {"interval": "young"}})", "scenarios/c3.json"),
               Catch::Contains("/checkpointing/write_GBps"));
  }
}

TEST_CASE("the cost section needs a cited price and defaults to DeepSeek-V3's H800 rate") {
  const InputBundle none = input_with("{}", "scenarios/nocost.json");
  CHECK(none.cost.usd_per_gpu_hour == 2.0);
  CHECK_THAT(none.cost.source, Catch::Contains("DeepSeek-V3"));
  CHECK_THAT(section_error(R"({"cost": {"usd_per_gpu_hour": 2.5}})", "scenarios/cost.json"),
             Catch::Contains("scenarios/cost.json:/cost/source"));
}

TEST_CASE("campaign settings: a given step time needs its MFU") {
  CHECK_THAT(section_error(R"({"campaign": {"step_time_s": 5}})", "scenarios/s.json"),
             Catch::Contains("/campaign/mfu"));
  const InputBundle ok = input_with(R"({"campaign": {"step_time_s": 5, "mfu": 0.3,
                                        "trials": 10, "seed": 42}})",
                                    "scenarios/s.json");
  const CampaignSettings& c = ok.campaign;
  CHECK(*c.step_time_s == 5);
  CHECK(c.trials == 10);
  CHECK(c.seed == 42);
}

TEST_CASE("the built-in failure rates reproduce their published totals") {
  double llama_per_gpu_hour = 0;
  for (const auto& c : default_failure_causes("llama3")) {
    // Every Llama 3 cause is counted per GPU, per NIC (one per GPU) or per node (8 GPUs).
    llama_per_gpu_hour += c.rate_per_unit_hour / (c.unit == FailureUnit::node ? 8.0 : 1.0);
  }
  CHECK(llama_per_gpu_hour * 16384 * 54 * 24 == Approx(419));
  double rsc1_per_node_day = 0;
  for (const auto& c : default_failure_causes("rsc1")) {
    rsc1_per_node_day += c.rate_per_unit_hour * 24;
  }
  CHECK(rsc1_per_node_day * 1000 == Approx(6.50));
}
