// FP8 parameters (training.fp8_param_gather): what the parameter all-gathers move, what FSDP2's
// copy-out reads and writes, what stays 16-bit, and what the memory model keeps resident.
// Expected values are the dtypes' byte counts: 1 B per FP8 element, 2 B per BF16 one.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "models/memory.hpp"
#include "tests/workload/fixtures.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::error_pointer;
using clustersim::test::load;
using clustersim::test::small_scenario;

namespace {

// The small model on 8 GPUs of data parallelism, FP8 linears, ZeRO at `stage`.
nlohmann::json fp8_zero(int stage, bool fp8_params) {
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  j["parallelism"]["zero_stage"] = stage;
  j["training"]["precision"] = "fp8";
  j["training"]["fp8_param_gather"] = fp8_params;
  return j;
}

std::vector<ParamGather> gathers_of(const nlohmann::json& j) {
  const Scenario s = load(j);
  return build_workload(s, test::compute_model(s)).stages.at(0).gathers;
}

// The bytes of the gradient reductions (a ZeRO-1 bucket also lists its parameters' all-gather).
double reduced_bytes(const nlohmann::json& j) {
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  double bytes = 0;
  for (const auto& b : w.stages.at(0).buckets) {
    for (const auto& call : b.calls) {
      if (call.kind != CollKind::all_gather) bytes += call.bytes;
    }
  }
  return bytes;
}

// The compute ops of kind gather_copy in program order, and whether each follows a gather_wait
// (FSDP2's copy-out) or not (its copy-in before a reduction).
struct Copies {
  std::vector<double> out_s, in_s;
};

Copies fsdp2_copies(const nlohmann::json& j) {
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  Copies c;
  const std::vector<Op> ops = w.stages.at(0).ops.to_vector();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != OpKind::compute || ops[i].compute != ComputeKind::gather_copy) continue;
    const bool after_wait = i > 0 && ops[i - 1].kind == OpKind::gather_wait;
    (after_wait ? c.out_s : c.in_s).push_back(ops[i].time_s);
  }
  return c;
}

}  // namespace

TEST_CASE("FP8 parameters are all-gathered at one byte per element") {
  for (int stage : {1, 3}) {
    const std::vector<ParamGather> bf16 = gathers_of(fp8_zero(stage, false));
    const std::vector<ParamGather> fp8 = gathers_of(fp8_zero(stage, true));
    REQUIRE(fp8.size() == bf16.size());
    REQUIRE_FALSE(fp8.empty());
    for (std::size_t i = 0; i < fp8.size(); ++i) {
      CHECK(fp8[i].call.dtype == Dtype::fp8);
      CHECK(fp8[i].call.bytes == Approx(fp8[i].params));
      CHECK(bf16[i].call.bytes == Approx(2 * bf16[i].params));
    }
    // The gradients stay in comm.grad_dtype: the reductions move the same bytes.
    CHECK(reduced_bytes(fp8_zero(stage, true)) == Approx(reduced_bytes(fp8_zero(stage, false))));
  }
}

TEST_CASE("FSDP2 copies FP8 parameters out at half the bytes, gradients in as before") {
  nlohmann::json bf16 = fp8_zero(3, false);
  bf16["parallelism"]["zero3_implementation"] = "fsdp2";
  nlohmann::json fp8 = bf16;
  fp8["training"]["fp8_param_gather"] = true;
  const Copies a = fsdp2_copies(bf16);
  const Copies b = fsdp2_copies(fp8);
  REQUIRE(a.out_s.size() == b.out_s.size());
  REQUIRE_FALSE(a.out_s.empty());
  const Scenario s = load(fp8);
  const double launch = test::compute_model(s).kernel_gap_s();
  for (std::size_t i = 0; i < a.out_s.size(); ++i) {
    // Each copy-out reads and writes the gathered bytes once: 2 x 2 B, then 2 x 1 B per element.
    CHECK(b.out_s[i] - launch == Approx((a.out_s[i] - launch) / 2));
  }
  // The copy-in reads the 16-bit gradient and writes the reduce dtype's, with or without.
  CHECK(b.in_s == a.in_s);
}

TEST_CASE("FP8 parameters keep one byte per weight resident, not BF16 plus an FP8 copy") {
  // ZeRO-1: the weights are resident whole; FP8 training counts 2 B + 1 B per parameter, FP8
  // parameters 1 B.
  const models::StageMemory with = models::estimate_memory(load(fp8_zero(1, true))).worst();
  const models::StageMemory without = models::estimate_memory(load(fp8_zero(1, false))).worst();
  CHECK(without.weights_bytes / without.parameters == Approx(3.0));
  CHECK(with.weights_bytes / with.parameters == Approx(1.0));
  CHECK(with.gradients_bytes == Approx(without.gradients_bytes));
  CHECK(with.optimizer_bytes == Approx(without.optimizer_bytes));
}

TEST_CASE("FP8 parameters need FP8 training and a ZeRO stage that gathers parameters") {
  nlohmann::json j = fp8_zero(1, true);
  j["training"]["precision"] = "bf16";
  CHECK(error_pointer(j) == "/training/fp8_param_gather");
  CHECK(error_pointer(fp8_zero(0, true)) == "/training/fp8_param_gather");
  nlohmann::json ds = fp8_zero(3, true);
  ds["parallelism"]["zero3_implementation"] = "deepspeed-2021";
  CHECK(error_pointer(ds) == "/training/fp8_param_gather");
  CHECK(error_pointer(fp8_zero(2, true)).empty());
}
