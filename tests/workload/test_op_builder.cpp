// The pieces a stage program is built from: the op builder's factories, gradient units and
// buckets, parameter gathers, pipeline messages. Expected values are hand calculations.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/workload/fixtures.hpp"
#include "workload/grad_buckets.hpp"
#include "workload/op_builder.hpp"
#include "workload/param_gathers.hpp"
#include "workload/pass_builder.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::load;
using clustersim::test::small_scenario;

namespace {

models::OpCost kernels(double time_s, double flops) {
  models::OpCost c;
  c.time_s = time_s;
  c.flops = flops;
  return c;
}

GradUnit unit(const std::string& name, double params, Dtype dtype = Dtype::bf16) {
  GradUnit u;
  u.name = name;
  u.params = params;
  u.dtype = dtype;
  return u;
}

}  // namespace

TEST_CASE("A compute op adds its kernel time and FLOPs to the stage's totals") {
  StageProgram prog;
  OpBuilder ops(prog);
  const OpSite at{PassKind::backward, 3, 1, 5, 12};
  ops.compute(ComputeKind::backward, kernels(2e-3, 4e12), at);
  ops.compute(ComputeKind::optimizer, kernels(1e-3, 0), OpSite{PassKind::backward});
  REQUIRE(prog.ops.size() == 2);
  CHECK(prog.compute_s == Approx(3e-3));
  CHECK(prog.executed_flops == Approx(4e12));
  const Op& op = prog.ops.at(0);
  CHECK(op.kind == OpKind::compute);
  CHECK(op.compute == ComputeKind::backward);
  CHECK(op.pass == PassKind::backward);
  CHECK(op.time_s == 2e-3);
  CHECK(op.flops == 4e12);
  CHECK((op.micro_batch == 3 && op.chunk == 1 && op.virtual_stage == 5 && op.layer == 12));
  // Tied to no micro-batch, chunk, stage or layer: all -1.
  const Op& opt = prog.ops.at(1);
  CHECK((opt.micro_batch == -1 && opt.chunk == -1 && opt.virtual_stage == -1 && opt.layer == -1));
}

TEST_CASE("A forward send goes to the next virtual stage and a backward send to the previous") {
  StageProgram prog;
  OpBuilder ops(prog);
  ops.recv(1024, OpSite{PassKind::forward, 0, 1, 3});
  ops.send(1024, OpSite{PassKind::forward, 0, 1, 3});
  ops.send(1024, OpSite{PassKind::backward, 0, 1, 3});
  REQUIRE(prog.ops.size() == 3);
  CHECK(prog.ops.at(0).kind == OpKind::recv);
  CHECK(prog.ops.at(0).virtual_stage == 3);  // a receive names its own virtual stage
  CHECK(prog.ops.at(1).kind == OpKind::send);
  CHECK(prog.ops.at(1).virtual_stage == 4);
  CHECK(prog.ops.at(2).virtual_stage == 2);
  for (const auto& op : prog.ops) CHECK(op.bytes == 1024);
  // Messages are not compute.
  CHECK(prog.compute_s == 0);
}

TEST_CASE("A pass becomes compute ops for its kernels and collective ops for its collectives") {
  StageProgram prog;
  OpBuilder ops(prog);
  Segments pass(3);
  pass[0].cost = kernels(1e-3, 1e9);
  pass[1].is_collective = true;
  pass[1].collective = 7;
  pass[1].overlap_s = 5e-4;
  pass[2].cost = kernels(2e-3, 3e9);
  ops.pass(pass, ComputeKind::recompute, OpSite{PassKind::backward, 2, 0, 0, 4});
  REQUIRE(prog.ops.size() == 3);
  CHECK(prog.ops.at(0).kind == OpKind::compute);
  CHECK(prog.ops.at(0).compute == ComputeKind::recompute);
  CHECK(prog.ops.at(1).kind == OpKind::collective);
  CHECK(prog.ops.at(1).index == 7);
  CHECK(prog.ops.at(1).overlap_s == 5e-4);
  CHECK(prog.ops.at(2).kind == OpKind::compute);
  for (const auto& op : prog.ops) CHECK(op.layer == 4);
  CHECK(prog.compute_s == Approx(3e-3));
  CHECK(prog.executed_flops == Approx(4e9));
}

TEST_CASE("Bucket and gather ops carry their index, and a reduction wait carries none") {
  StageProgram prog;
  OpBuilder ops(prog);
  ops.grad_ready(4, OpSite{PassKind::backward});
  ops.gather_issue(2, OpSite{});
  ops.gather_wait(2, OpSite{});
  ops.grad_wait(OpSite{PassKind::backward});
  REQUIRE(prog.ops.size() == 4);
  CHECK((prog.ops.at(0).kind == OpKind::grad_ready && prog.ops.at(0).index == 4));
  CHECK((prog.ops.at(1).kind == OpKind::gather_issue && prog.ops.at(1).index == 2));
  CHECK((prog.ops.at(2).kind == OpKind::gather_wait && prog.ops.at(2).index == 2));
  CHECK((prog.ops.at(3).kind == OpKind::grad_wait && prog.ops.at(3).index == -1));
}

TEST_CASE("With sequence parallelism a pipeline message is b (S / cp) h / t 16-bit values") {
  // Small model: h = 1024, S = 1024, micro-batch b = 1, tp = 2 with sequence parallelism:
  // 1 x 1024 x 1024 x 2 B / 2 = 1 MiB per TP rank; with cp = 2 each rank holds half the sequence.
  const int cp = GENERATE(1, 2);
  nlohmann::json j = small_scenario(8 * cp, 2, 2, 2);
  j["parallelism"]["cp"] = cp;
  const Scenario s = load(j);
  const double expected = 1.0 * 1024 / cp * 1024 * 2 / 2;
  CHECK(pipeline_message_bytes(dims_of(s), false) == expected);
  const Workload w = build_workload(s, test::compute_model(s));
  int messages = 0;
  for (const auto& st : w.stages) {
    for (const auto& op : st.ops) {
      if (op.kind != OpKind::send && op.kind != OpKind::recv) continue;
      CHECK(op.bytes == expected);
      ++messages;
    }
  }
  // Two stages, 8 micro-batches: one send and one receive each way per micro-batch.
  CHECK(messages == 4 * 8);
}

TEST_CASE("Megatron-LM's pipeline scatter/gather sends 1/t of a message and all-gathers it") {
  // Small model, tp = 2 without sequence parallelism: a message is 1 x 1024 x 1024 x 2 B = 2 MiB.
  // Scattered, each TP rank sends 1 MiB, and the receiver all-gathers the 2 MiB over its TP
  // group (Narayanan et al. SC'21 section 4.1); without it every TP rank sends all 2 MiB.
  const bool scatter = GENERATE(false, true);
  nlohmann::json j = small_scenario(8, 2, 2, 2);
  j["parallelism"]["sequence_parallel"] = false;
  j["parallelism"]["pipeline_scatter_gather"] = scatter;
  const Scenario s = load(j);
  const double message = 1.0 * 1024 * 1024 * 2;
  const Workload w = build_workload(s, test::compute_model(s));
  int gathers = 0;
  for (const auto& st : w.stages) {
    bool after_recv = false;  // the op before was a receive
    for (const auto& op : st.ops) {
      if (op.kind == OpKind::send || op.kind == OpKind::recv) {
        CHECK(op.bytes == (scatter ? message / 2 : message));
      }
      const bool gather = op.kind == OpKind::collective &&
                          w.collectives.at(static_cast<std::size_t>(op.index)).label ==
                              "pipeline message all-gather";
      if (after_recv) CHECK(gather == scatter);
      if (gather) {
        CHECK(after_recv);
        CHECK(w.collectives.at(static_cast<std::size_t>(op.index)).bytes == message);
        ++gathers;
      }
      after_recv = op.kind == OpKind::recv;
    }
  }
  // Two stages, 8 micro-batches: one receive each way per micro-batch.
  CHECK(gathers == (scatter ? 2 * 8 : 0));
}

TEST_CASE("A virtual stage's gradient units run from the LM head down to the embedding") {
  UnitSizes sizes;
  sizes.layer = 100;
  sizes.embedding = 30;
  sizes.head = 20;
  sizes.embedding_dtype = Dtype::fp32;
  SECTION("one virtual stage holds everything") {
    const auto u = grad_units(sizes, 0, 1, 0, 2);
    REQUIRE(u.size() == 4);
    CHECK((u[0].name == "lm_head" && u[0].kind == UnitKind::head && u[0].params == 20));
    CHECK((u[1].name == "layer 1" && u[1].layer == 1));
    CHECK((u[2].name == "layer 0" && u[2].layer == 0));
    CHECK((u[3].name == "embedding" && u[3].dtype == Dtype::fp32));
  }
  SECTION("a middle virtual stage holds only its layers") {
    const auto u = grad_units(sizes, 1, 3, 5, 2);
    REQUIRE(u.size() == 2);
    CHECK(u[0].layer == 6);
    CHECK(u[1].layer == 5);
  }
}

TEST_CASE("Without ZeRO a bucket is all-reduced, with ZeRO reduce-scattered, at the wire width") {
  ReductionPlan plan;
  plan.dp_ranks = 8;
  const auto plain = reduction_calls(plan, 1e6, Dtype::fp16);
  REQUIRE(plain.size() == 1);
  CHECK(plain[0].kind == CollKind::all_reduce);
  CHECK(plain[0].bytes == 2e6);
  plan.reduce_scatter = true;
  const auto zero = reduction_calls(plan, 1e6, Dtype::fp32);
  REQUIRE(zero.size() == 1);
  CHECK(zero[0].kind == CollKind::reduce_scatter);
  CHECK(zero[0].bytes == 4e6);
  SECTION("1-bit Adam's compressed phase sends sign bits and one scale per rank, twice") {
    plan.compressed_phase = true;
    const auto calls = reduction_calls(plan, 8e6, Dtype::fp16);
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].kind == CollKind::all_to_all);
    CHECK(calls[1].kind == CollKind::all_gather);
    // 8e6 bits = 1e6 bytes, plus 8 FP32 scales.
    for (const auto& c : calls) CHECK(c.bytes == 1e6 + 8 * 4);
  }
}

TEST_CASE("A bucket is launched by the unit whose gradients fill it") {
  // 2 MB buckets of BF16 gradients hold 1e6 parameters.
  ReductionPlan plan;
  plan.bucket_bytes = 2e6;
  const Scenario s = load(small_scenario(8, 2, 2, 2));
  const auto compute = test::compute_model(s);
  std::vector<GradBucket> buckets;
  SECTION("two units share a bucket, the second spills into the next") {
    std::vector<GradUnit> units = {unit("A", 0.5e6), unit("B", 0.75e6)};
    pack_buckets(units, 0, plan, compute, buckets);
    REQUIRE(buckets.size() == 2);
    CHECK(buckets[0].params == 1e6);
    CHECK(buckets[0].label == "A .. B");
    CHECK(buckets[1].params == 0.25e6);
    CHECK(buckets[1].label == "B");
    CHECK(units[0].buckets.empty());
    CHECK(units[0].covering == std::vector<int>{0});
    CHECK(units[1].buckets == std::vector<int>{0, 1});
    CHECK(units[1].covering == std::vector<int>{0, 1});
  }
  SECTION("a unit larger than a bucket fills several") {
    std::vector<GradUnit> units = {unit("A", 2.5e6)};
    pack_buckets(units, 1, plan, compute, buckets);
    REQUIRE(buckets.size() == 3);
    CHECK(buckets[0].params == 1e6);
    CHECK(buckets[1].params == 1e6);
    CHECK(buckets[2].params == 0.5e6);
    for (const auto& b : buckets) CHECK(b.chunk == 1);
    CHECK(units[0].buckets == std::vector<int>{0, 1, 2});
  }
  SECTION("a change of gradient dtype closes the bucket") {
    std::vector<GradUnit> units = {unit("head", 0.1e6, Dtype::fp32), unit("layer", 0.1e6)};
    pack_buckets(units, 0, plan, compute, buckets);
    REQUIRE(buckets.size() == 2);
    CHECK(buckets[0].calls.at(0).bytes == 0.4e6);  // FP32: 4 B per gradient
    CHECK(buckets[1].calls.at(0).bytes == 0.2e6);
    CHECK(units[0].buckets == std::vector<int>{0});
    CHECK(units[1].buckets == std::vector<int>{1});
  }
}

TEST_CASE("ZeRO-1/2 gathers each data-parallel bucket's parameters as 16-bit weights") {
  // FP8 training keeps BF16 model weights: 2 B per gathered parameter. The tied-embedding
  // bucket belongs to the embedding group and has no gather.
  nlohmann::json j = small_scenario(8, 2, 2, 2);
  j["training"]["precision"] = "fp8";
  const Scenario s = load(j);
  std::vector<GradBucket> buckets(2);
  buckets[0].params = 3e6;
  buckets[0].label = "layers";
  buckets[1].params = 5e6;
  buckets[1].group = Group::embedding;
  std::vector<ParamGather> gathers;
  add_bucket_gathers(s, buckets, gathers);
  REQUIRE(gathers.size() == 1);
  CHECK(gathers[0].call.kind == CollKind::all_gather);
  CHECK(gathers[0].call.bytes == 6e6);
  CHECK(gathers[0].call.dtype == Dtype::bf16);
  CHECK(gathers[0].label == "layers parameters");
}
