// The SMs that NCCL's kernels take from the compute they overlap (step/sm_share.cpp): the
// ledger and the work it stretches, by hand; a step with and without the GPU's SM count.
#include <catch2/catch.hpp>

#include "sim/event.hpp"
#include "sim/isolated.hpp"
#include "sim/simulation.hpp"
#include "step/replay.hpp"
#include "step/simulate_step.hpp"
#include "tests/test_clusters.hpp"
#include "tests/workload/fixtures.hpp"
#include "tools/step_inputs.hpp"
#include "topologies/cluster_graph.hpp"

using namespace clustersim;
using step::SmLedger;
using step::stretch;

TEST_CASE("Work beside an NCCL kernel runs on the SMs it leaves") {
  SmLedger sms;
  // 33 of 132 SMs held from 0.5 s to 1 s: compute runs at 99/132 = 0.75 there.
  sms.take(0.5, 33);
  sms.give_back(1.0, 33);
  CHECK(sms.share(0.25, 132) == 1);
  CHECK(sms.share(0.75, 132) == Approx(0.75));
  CHECK(sms.share(1.25, 132) == 1);
  CHECK(sms.share(0.75, 0) == 1);  // SM count unknown: nothing taken
  // 1 s of work from 0: 0.5 done by 0.5 s, 0.375 more by 1 s, the last 0.125 at full speed.
  CHECK(stretch(0, 1, {}, &sms, 132) == Approx(1.125));
  // Work inside the window: 0.3 s of it takes 0.4 s.
  CHECK(stretch(0.5, 0.3, {}, &sms, 132) == Approx(0.9));
  // A GPU at half speed from 0 as well: 0.25 done by 0.5 s, then 0.375 per s, then 0.5 per s.
  CHECK(stretch(0, 0.5, {{0.5, 0}}, &sms, 132) == Approx(1 + (0.5 - 0.25 - 0.1875) / 0.5));
  CHECK(stretch(0, 1, {}, nullptr, 132) == 1);
}

TEST_CASE("Calls of one communicator hold the SMs of the largest in flight") {
  SmLedger sms;
  sms.take(0, 16);
  sms.take(0, 24);  // a gather beside a reduction: not 40 SMs
  CHECK(sms.share(0.5, 132) == Approx(108.0 / 132));
  sms.give_back(1, 24);
  CHECK(sms.share(1.5, 132) == Approx(116.0 / 132));
  CHECK(sms.next_change(0.5) == 1);
  sms.give_back(2, 16);
  CHECK(sms.share(2.5, 132) == 1);
  CHECK(sms.next_change(2) == Approx(std::numeric_limits<double>::infinity()));
}

TEST_CASE("A signal wakes its waiters early and lets them time out otherwise", "[sim]") {
  const auto spec = test::test_cluster({.nodes = 1, .gpus_per_node = 2});
  const auto graph = topologies::ClusterGraph::build(spec, 2);
  const auto v = sim::run_isolated_numbers([&] {
    sim::Simulation sim(graph, sim::SimulationOptions{});
    sim::Signal signal;
    std::vector<double> out;
    sim.spawn(0, "waiter", [&] {
      out.push_back(signal.wait_until(10) ? 1 : 0);  // notified at 3
      out.push_back(sim.now());
      out.push_back(signal.wait_until(5) ? 1 : 0);  // nobody notifies: times out at 5
      out.push_back(sim.now());
      out.push_back(signal.wait_until(4) ? 1 : 0);  // in the past: at once
      out.push_back(sim.now());
    });
    sim.spawn(1, "notifier", [&] {
      sim.sleep_for(3);
      signal.notify();
    });
    sim.run();
    return out;
  });
  REQUIRE(v.size() == 6);
  CHECK(v[0] == 1);
  CHECK(v[1] == Approx(3));
  CHECK(v[2] == 0);
  CHECK(v[3] == Approx(5));
  CHECK(v[4] == 0);
  CHECK(v[5] == Approx(5));
}

namespace {

constexpr int kSms = 132;     // the H800 preset's SM count
constexpr int kChannels = 8;  // NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS

// Pure data parallelism over two H800 nodes, ring all-reduces of 8 channels overlapping the
// backward pass; `sm_count` false: the GPU file without one (NCCL takes no SMs).
Scenario dp_scenario(bool sm_count, bool overlap) {
  nlohmann::json j = test::small_scenario(16, 16, 1, 1);
  j["model"]["hidden_size"] = 4096;
  j["model"]["num_attention_heads"] = 32;
  j["model"]["num_kv_heads"] = 32;
  j["model"]["ffn_hidden_size"] = 16384;
  j["comm"]["nccl"] = {
      {"NCCL_ALGO", "Ring"}, {"NCCL_MIN_NCHANNELS", kChannels}, {"NCCL_MAX_NCHANNELS", kChannels}};
  j["training"]["overlap_grad_reduce"] = overlap;
  nlohmann::json cluster = test::scenario_json("topologies/clusters/h800-128x8-rail.json");
  nlohmann::json gpu = test::scenario_json("topologies/gpus/h800-sxm.json");
  if (!sm_count) {
    gpu.erase("sm_count");
    gpu["sources"].erase("sm_count");
  }
  cluster["gpu"] = gpu;
  j["cluster"] = cluster;
  return test::load(j);
}

// {step time, compute time, time NCCL's kernels were in flight on the stage's stream, compute
// time lost to NCCL's SMs, notes naming NCCL_MIN_NCHANNELS}, from a
// step simulated in a child process with its trace.
std::vector<double> run_traced(const Scenario& s) {
  return sim::run_isolated_numbers([&] {
    step::StepOptions o;
    o.record_trace = true;
    const auto r = step::simulate_step(s, cli::load_step_calibrations(s), o);
    REQUIRE(r.completed);
    double busy = 0;
    for (const auto& sl : r.trace) {
      if (sl.category == "dp-stream") busy += sl.end_s - sl.start_s;
    }
    double noted = 0;
    for (const auto& n : r.notes) noted += n.rfind("NCCL_MIN_NCHANNELS raises", 0) == 0;
    return std::vector<double>{r.step_time_s, r.breakdown.compute_s, busy, r.breakdown.nccl_sm_s,
                               noted};
  });
}

}  // namespace

TEST_CASE("Gradient reductions overlapping the backward pass slow it by at most C / (S - C)") {
  const auto with = run_traced(dp_scenario(true, true));
  const auto without = run_traced(dp_scenario(false, true));
  const double busy = with[2];
  REQUIRE(busy > 0);
  const double extra = with[1] - without[1];
  // Work lost while a call runs is at most busy x C / S, and is made up at (S - C) / S or more.
  CHECK(extra > 0);
  CHECK(extra <= busy * kChannels / (kSms - kChannels) * (1 + 1e-9));
  CHECK(with[0] >= without[0] * (1 - 1e-12));  // the stream may still set the end
  // The report names the loss: the kernels' nominal time plus it is the compute time.
  CHECK(with[3] == Approx(extra).epsilon(1e-9));
  CHECK(without[3] == 0);
  // The scenario raised the channels with NCCL_MIN_NCHANNELS: the report says what it cost
  // when that is at least 5% of the step, once.
  INFO("share of the step lost to NCCL's SMs: " << with[3] / with[0]);
  CHECK(with[4] == (with[3] >= 0.05 * with[0] ? 1 : 0));
  CHECK(without[4] == 0);
}

TEST_CASE("Without overlap no compute runs beside NCCL and the SM count changes nothing") {
  const auto with = run_traced(dp_scenario(true, false));
  const auto without = run_traced(dp_scenario(false, false));
  CHECK(with[0] == Approx(without[0]).epsilon(1e-12));
  CHECK(with[1] == Approx(without[1]).epsilon(1e-12));
}

TEST_CASE("A scenario that raised NCCL's channels is told what their SMs cost it") {
  // The seed's 64-GPU pure data-parallel step sets NCCL_MIN_NCHANNELS=128 (64 after NCCL's cap,
  // of the H800's 132 SMs) and overlaps its ZeRO-3 gathers and reductions with compute.
  nlohmann::json j = test::scenario_json("scenarios/seed-dp-64.json");
  const auto raised = run_traced(test::load(j));
  REQUIRE(raised[3] >= 0.05 * raised[0]);
  CHECK(raised[4] == 1);
  j["comm"]["nccl"].erase("NCCL_MIN_NCHANNELS");
  const auto automatic = run_traced(test::load(j));
  CHECK(automatic[3] < raised[3]);
  CHECK(automatic[4] == 0);
}

// One H800 node of tensor parallelism 8 with sequence parallelism, no data parallelism; with
// tp_async_backward each column-parallel linear's backward runs its re-gather and its
// input-gradient reduce-scatter beside a GEMM.
namespace {
Scenario tp_scenario(bool sm_count, bool async_backward) {
  Scenario s = dp_scenario(sm_count, false);
  nlohmann::json j = test::small_scenario(8, 1, 8, 1);
  s.parallelism = test::load(j).parallelism;
  s.gpus = 8;
  s.training.global_batch = 8;
  s.training.tp_async_backward = async_backward;
  // A host that keeps ahead of the GPU: the small GEMMs of one node at TP 8 would otherwise wait
  // for the host's dispatch, which hides what they lose to the collectives' SMs.
  s.cluster.gpu.system_override = SystemValues{{SystemParameterId::host_us_per_kernel, 0.0}};
  return s;
}
}  // namespace

TEST_CASE("A GEMM beside a tensor-parallel collective loses the SMs its kernel holds") {
  const auto with = run_traced(tp_scenario(true, true));
  const auto without = run_traced(tp_scenario(false, true));
  // The GEMMs beside the backward's collectives take longer; the loss is named, and it is the
  // whole difference in compute (nothing else overlaps an NCCL kernel without data parallelism).
  CHECK(with[3] > 0);
  CHECK(without[3] == 0);
  CHECK(with[1] - without[1] == Approx(with[3]).epsilon(1e-9));
  CHECK(with[0] > without[0]);
  // Collectives waited for before the compute that needs them run beside no GEMM.
  CHECK(run_traced(tp_scenario(true, false))[3] == 0);
}

TEST_CASE("Host work beside an NCCL kernel is not slowed by the SMs it holds") {
  // DeepSpeed 2021's ZeRO-3 submits one cudaMemcpyAsync per rank while its all-gather runs
  // (workload/param_gathers.cpp): CPU time with the GPU idle, which NCCL's SMs cannot slow.
  // Without gradient overlap nothing else runs beside an NCCL kernel, so the GPU's SM count
  // changes nothing and no time is lost to it.
  auto scenario = [](bool sm_count) {
    Scenario s = dp_scenario(sm_count, false);
    s.parallelism.zero_stage = 3;
    s.parallelism.zero3_implementation = Zero3Implementation::deepspeed_2021;
    return s;
  };
  const auto with = run_traced(scenario(true));
  const auto without = run_traced(scenario(false));
  REQUIRE(with[2] > 0);  // the gathers' kernels were in flight
  CHECK(with[3] == 0);
  CHECK(with[0] == Approx(without[0]).epsilon(1e-12));
  CHECK(with[1] == Approx(without[1]).epsilon(1e-12));
}
