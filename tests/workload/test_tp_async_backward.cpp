// The backward's tensor-parallel collectives launched beside the column-parallel GEMMs
// (training.tp_async_backward) or pipelined with them (training.tp_comm_overlap, by Transformer
// Engine's userbuffers or PyTorch's micro-pipelined TP): which collectives a layer's backward
// has, in order, and which GEMM each runs beside. Expected values are the GEMM shapes of the
// layer written out by hand.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/workload/fixtures.hpp"
#include "workload/pass_builder.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::load;
using clustersim::test::small_scenario;

namespace {

// The small model (h = 1024, f = 4096, 8 heads, multi-head attention) on tp = 2, dp = 1, eight
// sequences of 1024 tokens per micro-batch: T = 8192 tokens.
nlohmann::json tp2(bool sequence_parallel, bool async) {
  nlohmann::json j = small_scenario(2, 1, 2, 1);
  j["parallelism"]["sequence_parallel"] = sequence_parallel;
  j["training"]["micro_batch"] = 8;
  j["training"]["tp_async_backward"] = async;
  return j;
}

struct TpCall {
  CollKind kind;
  double bytes;
  double beside_s;  // the GEMM it runs beside, 0 = none
  bool beside;
};

// The TP collectives of a layer's backward (or forward), in order.
std::vector<TpCall> layer_tp_calls(const Scenario& s, bool forward = false) {
  const auto compute = test::compute_model(s);
  PassBuilder b(s, compute);
  std::vector<TpCall> out;
  for (const Segment& seg : forward ? b.layer_forward() : b.layer_backward()) {
    if (!seg.is_collective) continue;
    const Collective& c = b.collectives().at(seg.collective);
    if (c.group == Group::tp) out.push_back({c.kind, c.bytes, seg.overlap_s, seg.beside});
  }
  return out;
}

// Healthy-GPU time of the m x n x k GEMM in the scenario's precision.
double gemm_s(const Scenario& s, double m, double n, double k) {
  return test::compute_model(s).gemm({m, n, k}, s.training.precision).time_s;
}

constexpr double T = 8192, h = 1024, f = 4096, t = 2, kBf16 = 2;

}  // namespace

TEST_CASE(
    "With sequence parallelism the async backward re-gathers each column input beside its "
    "input gradient and reduce-scatters beside the weight gradient") {
  const Scenario s = load(tp2(true, true));
  // MLP first (backward order), then attention. The first linear's forward was [T x h] x
  // [h x f/t] (QKV's [T x h] x [h x 3h/t]): its input gradient is [T x f/t] x [f/t x h], its
  // weight gradient [h x T] x [T x f/t].
  const double fc1_dgrad = gemm_s(s, T, h, f / t);
  const double fc1_wgrad = gemm_s(s, h, f / t, T);
  const double qkv_dgrad = gemm_s(s, T, h, 3 * h / t);
  const double qkv_wgrad = gemm_s(s, h, 3 * h / t, T);
  const std::vector<TpCall> c = layer_tp_calls(s);
  REQUIRE(c.size() == 6);
  const double activation = T * h * kBf16;  // 16 MiB, every call of the layer
  for (const TpCall& x : c) CHECK(x.bytes == activation);
  // The gradient of the second linear's forward reduce-scatter: alone, as before.
  CHECK(c[0].kind == CollKind::all_gather);
  CHECK_FALSE(c[0].beside);
  CHECK(c[0].beside_s == 0);
  CHECK(c[1].kind == CollKind::all_gather);
  CHECK(c[1].beside);
  CHECK(c[1].beside_s == Approx(fc1_dgrad));
  CHECK(c[2].kind == CollKind::reduce_scatter);
  CHECK(c[2].beside);
  CHECK(c[2].beside_s == Approx(fc1_wgrad));
  CHECK(c[3].kind == CollKind::all_gather);
  CHECK_FALSE(c[3].beside);
  CHECK(c[4].kind == CollKind::all_gather);
  CHECK(c[4].beside_s == Approx(qkv_dgrad));
  CHECK(c[5].kind == CollKind::reduce_scatter);
  CHECK(c[5].beside_s == Approx(qkv_wgrad));
}

TEST_CASE("Without the async backward the layer's backward has its four TP calls, each alone") {
  const std::vector<TpCall> c = layer_tp_calls(load(tp2(true, false)));
  REQUIRE(c.size() == 4);
  for (const TpCall& x : c) {
    CHECK_FALSE(x.beside);
    CHECK(x.beside_s == 0);
  }
}

TEST_CASE(
    "Without sequence parallelism the async backward all-reduces beside the weight "
    "gradient and gathers nothing") {
  const Scenario s = load(tp2(false, true));
  const std::vector<TpCall> c = layer_tp_calls(s);
  REQUIRE(c.size() == 2);
  CHECK(c[0].kind == CollKind::all_reduce);
  CHECK(c[0].beside_s == Approx(gemm_s(s, h, f / t, T)));
  CHECK(c[1].kind == CollKind::all_reduce);
  CHECK(c[1].beside_s == Approx(gemm_s(s, h, 3 * h / t, T)));
  for (const TpCall& x : c) CHECK(x.beside);
}

TEST_CASE("Userbuffers take precedence over the async backward") {
  nlohmann::json j = tp2(true, true);
  j["training"]["tp_comm_overlap"] = true;
  const std::vector<TpCall> c = layer_tp_calls(load(j));
  REQUIRE(c.size() == 4);
  for (const TpCall& x : c) CHECK_FALSE(x.beside);
}

TEST_CASE("A TP collective beside a whole GEMM exposes only what the GEMM cannot hide") {
  // No SMs taken: the pair ends at max(comm, gemm).
  CHECK(beside_gemm(3.0, 1.0, 0).exposed_s == Approx(2.0));
  CHECK(beside_gemm(3.0, 1.0, 0).gemm_slowdown_s == 0);
  CHECK(beside_gemm(1.0, 3.0, 0).exposed_s == 0);
  CHECK(beside_gemm(2.0, 0.0, 0).exposed_s == 2.0);
}

TEST_CASE("The GEMM beside a TP collective runs on the SMs its kernel leaves") {
  // A quarter of the SMs held: the GEMM runs at 0.75 while the collective lasts.
  // comm 1, gemm 3: 0.75 of GEMM work done in the first second, 2.25 after: 3.25 in all.
  const BesideGemm hidden = beside_gemm(1.0, 3.0, 0.25);
  CHECK(hidden.gemm_slowdown_s == Approx(0.25));
  CHECK(hidden.exposed_s == 0);
  // comm 3, gemm 2: the GEMM ends inside the collective, at 2 / 0.75 = 8/3 s; the collective
  // lasts 1/3 s longer. The pair takes the collective's 3 s either way.
  const BesideGemm exposed = beside_gemm(3.0, 2.0, 0.25);
  CHECK(exposed.gemm_slowdown_s == Approx(2.0 / 3.0));
  CHECK(exposed.exposed_s == Approx(1.0 / 3.0));
  CHECK(2.0 + exposed.gemm_slowdown_s + exposed.exposed_s == Approx(3.0));
}

TEST_CASE("Under FP8 the sequence-parallel gathers carry FP8, the reduce-scatters BF16") {
  // Transformer Engine and torchao quantize a column-parallel linear's input before the
  // sequence-parallel all-gather: T x h elements of 1 byte, in the forward and in the backward's
  // re-gather. Both also cast a row-parallel linear's output gradient before the backward's
  // gather (fp8_gradient_gather, default); a Float8Linear under PyTorch's plain RowwiseParallel
  // casts it in its matmul, after a BF16 gather. The reduce-scatters keep 2 bytes.
  nlohmann::json j = tp2(true, true);
  j["training"]["precision"] = "fp8";
  const double fp8 = T * h * 1, bf16 = T * h * kBf16;
  double gradient = fp8;
  SECTION("Transformer Engine") {}
  SECTION("cast after the gather: gradients in BF16") {
    j["training"]["fp8_gradient_gather"] = false;
    gradient = bf16;
  }
  const Scenario s = load(j);
  const std::vector<TpCall> c = layer_tp_calls(s);
  REQUIRE(c.size() == 6);
  // Backward order: gradient gather, re-gather, reduce-scatter (MLP), then the same (attention).
  for (int i : {0, 3}) CHECK(c[static_cast<std::size_t>(i)].bytes == gradient);
  for (int i : {1, 4}) CHECK(c[static_cast<std::size_t>(i)].bytes == fp8);
  for (int i : {2, 5}) CHECK(c[static_cast<std::size_t>(i)].bytes == bf16);

  std::vector<double> forward;
  for (const TpCall& x : layer_tp_calls(s, true)) forward.push_back(x.bytes);
  // All-gather before QKV, reduce-scatter after the output projection, the same for the MLP.
  CHECK(forward == std::vector<double>{fp8, bf16, fp8, bf16});
}

TEST_CASE("fp8_gradient_gather needs FP8 training") {
  nlohmann::json j = tp2(true, true);
  j["training"]["fp8_gradient_gather"] = false;
  CHECK_THROWS_WITH(load(j), Catch::Contains("/training/fp8_gradient_gather"));
}

namespace {

// tp2(true, false) with TP communication pipelined by `implementation`, the MLP `ffn`.
Scenario overlapped(const std::string& implementation, const std::string& ffn) {
  nlohmann::json j = tp2(true, false);
  j["model"]["ffn"] = ffn;
  j["training"]["tp_comm_overlap"] = true;
  j["training"]["tp_comm_overlap_implementation"] = implementation;
  return load(j);
}

}  // namespace

TEST_CASE(
    "PyTorch's async TP pipelines every TP collective but the backward's reduce-scatters of "
    "summed input gradients") {
  // Backward order: the output gradient's gather before fc2's input-gradient GEMM, the
  // reduce-scatter of fc1's input gradient, the same pair for the output projection and QKV.
  // fc2's input gradient is [T x h] x [h x f/t], the output projection's [T x h] x [h x h/t];
  // fc1's is [T x f/t] x [f/t x h], QKV's [T x 3h/t] x [3h/t x h].
  const Scenario ub = overlapped("userbuffers", "gelu");
  const double fc2_dgrad = gemm_s(ub, T, f / t, h);
  const double proj_dgrad = gemm_s(ub, T, h / t, h);
  const double fc1_dgrad = gemm_s(ub, T, h, f / t);
  const double qkv_dgrad = gemm_s(ub, T, h, 3 * h / t);
  const std::vector<TpCall> u = layer_tp_calls(ub);
  REQUIRE(u.size() == 4);
  CHECK(u[0].beside_s == Approx(fc2_dgrad));
  CHECK(u[1].beside_s == Approx(fc1_dgrad));
  CHECK(u[2].beside_s == Approx(proj_dgrad));
  CHECK(u[3].beside_s == Approx(qkv_dgrad));

  // PyTorch fuses a reduce-scatter only with the one matmul whose output it reduces. With Q, K
  // and V as separate linears the attention's input gradient is their sum, so its
  // reduce-scatter runs alone; a GELU MLP's single fc1 keeps its own.
  const std::vector<TpCall> g = layer_tp_calls(overlapped("torch", "gelu"));
  REQUIRE(g.size() == 4);
  CHECK(g[0].beside_s == Approx(fc2_dgrad));
  CHECK(g[1].beside_s == Approx(fc1_dgrad));
  CHECK(g[2].beside_s == Approx(proj_dgrad));
  CHECK(g[3].beside_s == 0);
  // A gated MLP's gate and up projections sum theirs as well.
  const std::vector<TpCall> w = layer_tp_calls(overlapped("torch", "swiglu"));
  REQUIRE(w.size() == 4);
  CHECK(w[0].beside_s > 0);
  CHECK(w[1].beside_s == 0);
  CHECK(w[2].beside_s > 0);
  CHECK(w[3].beside_s == 0);
  for (const TpCall& x : w) CHECK_FALSE(x.beside);

  // The forward's gathers and reduce-scatters are each one matmul's: all pipelined.
  const Scenario torch = overlapped("torch", "swiglu");
  const Scenario te = overlapped("userbuffers", "swiglu");
  const std::vector<TpCall> tf = layer_tp_calls(torch, true), uf = layer_tp_calls(te, true);
  REQUIRE(tf.size() == 4);
  REQUIRE(uf.size() == 4);
  for (std::size_t i = 0; i < tf.size(); ++i) {
    CHECK(tf[i].beside_s > 0);
    CHECK(tf[i].beside_s == Approx(uf[i].beside_s));
  }
}

TEST_CASE("The TP overlap implementation needs the overlap, and SMs belong to userbuffers") {
  nlohmann::json j = tp2(true, false);
  j["training"]["tp_comm_overlap_implementation"] = "torch";
  CHECK_THROWS_WITH(load(j), Catch::Contains("/training/tp_comm_overlap_implementation"));
  j["training"]["tp_comm_overlap"] = true;
  CHECK_NOTHROW(load(j));
  j["training"]["tp_comm_overlap_sms"] = {{"proj_fprop", 8}};
  CHECK_THROWS_WITH(load(j), Catch::Contains("/training/tp_comm_overlap_sms"));
  j["training"]["tp_comm_overlap_implementation"] = "megatron";
  CHECK_THROWS_WITH(load(j), Catch::Contains("/training/tp_comm_overlap_implementation"));
}
