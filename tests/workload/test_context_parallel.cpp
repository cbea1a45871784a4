// What context parallelism moves and adds to a layer, by implementation: Transformer Engine's
// ring (the default), the all-gather model and PyTorch's context_parallel (training.repeat_kv,
// parallelism.cp_implementation).
// Expected values are hand calculations from the tensors' shapes.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/workload/fixtures.hpp"
#include "workload/pass_builder.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::load;
using clustersim::test::small_scenario;

namespace {

// The small model (h = 1024, 8 heads of d = 128) with 2 K/V heads, cp = 2 over 8 GPUs, one
// sequence of S = 1024 tokens per micro-batch: T = 512 local tokens.
nlohmann::json gqa_cp2() {
  nlohmann::json j = small_scenario(8, 4, 1, 1);
  j["model"]["num_kv_heads"] = 2;
  j["parallelism"]["cp"] = 2;
  j["training"]["micro_batch"] = 1;
  j["training"]["global_batch"] = 4;
  return j;
}

// The same with the all-gather model.
nlohmann::json gqa_cp2_all_gather() {
  nlohmann::json j = gqa_cp2();
  j["parallelism"]["cp_implementation"] = "all_gather";
  return j;
}

// The CP segments of a layer's forward and backward pass, in order, with their collectives.
struct CpExchange {
  std::vector<Segment> segments;
  std::vector<Collective> collectives;
};

CpExchange cp_exchange(const Scenario& s) {
  const auto compute = test::compute_model(s);
  PassBuilder b(s, compute);
  CpExchange out;
  for (const Segments& pass : {b.layer_forward(), b.layer_backward()}) {
    for (const Segment& seg : pass) {
      if (seg.is_collective && b.collectives().at(seg.collective).group == Group::cp) {
        out.segments.push_back(seg);
        out.collectives.push_back(b.collectives().at(seg.collective));
      }
    }
  }
  return out;
}

std::vector<Collective> cp_collectives(const Scenario& s) {
  return cp_exchange(s).collectives;
}

models::OpCost pass_kernels(const Scenario& s, bool forward) {
  const auto compute = test::compute_model(s);
  PassBuilder b(s, compute);
  return total(forward ? b.layer_forward() : b.layer_backward());
}

constexpr double S = 1024, T = 512, d = 128, heads = 8, kv_heads = 2;

// What Transformer Engine's all-gather CP adds around the attention kernel, by hand from
// AttnFuncWithCPAndKVAllGather (v2.9), for `kv_heads_moved` K/V heads and cp ranks. Elements:
// K and V of the whole sequence, 2 x S x heads x 128; the local output (and dQ), S / cp x 8 x 128.
struct GatherExtras {
  double bytes;
  double kernels;
};
GatherExtras gather_extras(int cp, bool forward, double kv_heads_moved = kv_heads) {
  const double kv = 2 * S * kv_heads_moved * d;
  const double out = S / cp * heads * d;
  if (forward) {
    // K and V reordered (index_select: read and write 2 B), the two calls' outputs copied into
    // the output (read and write 2 B); a second attention call, two reorders, two copies.
    return {kv * 4 + out * 4, 1 + 2 + 2};
  }
  // dK and dV zeroed (write 2 B), K and V reordered (4 B), the two calls' dQ copied (4 B), each
  // call's dK and dV added over the keys it attended to (written by the call and added: 8 B),
  // chunks 0 .. r and 0 .. 2 cp - 1 - r, 2 cp + 1 of the 2 cp chunks; dK and dV reordered (4 B).
  // A second attention backward call and 2 + 2 + 2 + 4 + 2 kernels.
  const double attended = (2.0 * cp + 1) / (2.0 * cp);
  return {kv * 2 + kv * 4 + out * 4 + kv * attended * 8 + kv * 4, 1 + 12};
}

}  // namespace

TEST_CASE("The all-gather model gathers grouped K/V for each pass and reduce-scatters dK/dV") {
  const std::vector<Collective> c = cp_collectives(load(gqa_cp2_all_gather()));
  REQUIRE(c.size() == 3);
  // K and V of the whole sequence: 2 x S x 2 heads x 128 x 2 B = 1 MiB, gathered before the
  // forward attention and again before the backward (Transformer Engine saves only this rank's
  // chunk), dK and dV reduce-scattered in BF16 after it.
  CHECK(c[0].kind == CollKind::all_gather);
  CHECK(c[0].bytes == 2 * S * kv_heads * d * 2);
  CHECK(c[1].kind == CollKind::all_gather);
  CHECK(c[1].bytes == 2 * S * kv_heads * d * 2);
  CHECK(c[2].kind == CollKind::reduce_scatter);
  CHECK(c[2].bytes == 2 * S * kv_heads * d * 2);
  CHECK(c[2].dtype == Dtype::bf16);
  // None of them is hidden (the forward gather precedes the attention that needs it).
  for (const Segment& g : cp_exchange(load(gqa_cp2_all_gather())).segments) {
    CHECK(g.overlap_s == 0);
  }
}

TEST_CASE("repeat_kv makes context parallelism move query-head-wide K/V and adds its copy") {
  nlohmann::json j = gqa_cp2_all_gather();
  const Scenario grouped = load(j);
  j["training"]["repeat_kv"] = true;
  const Scenario repeated = load(j);
  const std::vector<Collective> c = cp_collectives(repeated);
  REQUIRE(c.size() == 3);
  CHECK(c[0].bytes == 2 * S * heads * d * 2);  // 4x the grouped heads' bytes
  CHECK(c[1].bytes == 2 * S * heads * d * 2);
  CHECK(c[2].bytes == 2 * S * heads * d * 2);
  // The forward adds the repeat copy (read 2 grouped, write 8 repeated head-rows of K and V,
  // 2 B each), the attention kernel's read of repeated K/V (2 x S x (8 - 2) x 128 x 2 B) and
  // the reorder of the gathered K/V's 6 more heads.
  const double copy = 2 * T * (kv_heads + heads) * d * 2;
  const double kernel = 2 * S * (heads - kv_heads) * d * 2;
  const double reorder =
      gather_extras(2, true, heads).bytes - gather_extras(2, true, kv_heads).bytes;
  CHECK(reorder == 2 * S * (heads - kv_heads) * d * 4);
  CHECK(pass_kernels(repeated, true).bytes - pass_kernels(grouped, true).bytes ==
        Approx(copy + kernel + reorder));
  SECTION("with as many K/V heads as query heads it changes nothing") {
    j["model"]["num_kv_heads"] = 8;
    const Scenario mha = load(j);
    j["training"]["repeat_kv"] = false;
    CHECK(pass_kernels(mha, true).bytes == Approx(pass_kernels(load(j), true).bytes));
  }
}

TEST_CASE("PyTorch's context parallelism gathers K/V again, rings FP32 dK/dV and copies") {
  nlohmann::json j = gqa_cp2();
  const Scenario gather = load(j);
  const int cp = GENERATE(2, 4);
  j["parallelism"]["cp"] = cp;
  j["parallelism"]["dp"] = 8 / cp;
  j["parallelism"]["cp_implementation"] = "torch";
  const Scenario torch = load(j);
  const std::vector<Collective> c = cp_collectives(torch);
  REQUIRE(c.size() == 3);
  const double kv = 2 * S * kv_heads * d * 2;  // the whole sequence's K and V in BF16
  CHECK((c[0].kind == CollKind::all_gather && c[0].bytes == kv));
  CHECK((c[1].kind == CollKind::all_gather && c[1].bytes == kv));  // again, for the backward
  // cp ring steps each pass one rank's chunk (1/cp of K and V) in FP32: the whole K/V at 4 B
  // per element leaves every rank, which a ring reduce-scatter of cp / (cp - 1) times it sends.
  CHECK(c[2].kind == CollKind::reduce_scatter);
  CHECK(c[2].dtype == Dtype::fp32);
  CHECK(c[2].bytes * (cp - 1) / cp == Approx(kv * 2));
  // Forward: the FP32 merge of cp - 1 steps (38 B per output element each) and the casts to
  // and from FP32 (12 B) over the local output, T x 8 heads x 128; T = S / cp; and the K/V
  // chunk (2 x T x 2 heads x 128) copied into the send buffer before each of cp - 1 steps (4 B).
  const double out = S / cp * heads * d;
  const double chunk = 2 * S / cp * kv_heads * d;
  const Scenario torch_all_gather = [&] {
    j["parallelism"]["cp_implementation"] = "all_gather";
    return load(j);
  }();
  CHECK(pass_kernels(torch, true).bytes - pass_kernels(torch_all_gather, true).bytes ==
        Approx(out * (38 * (cp - 1) + 12) + chunk * 4 * (cp - 1) - gather_extras(cp, true).bytes));
  // Backward: every one of the cp steps adds dQ (the local queries) and dK/dV (one chunk) into
  // FP32 (10 B per element), after a zero fill (4 B) and before the casts back (6 B); the K/V
  // chunk is copied before cp - 1 sends (4 B), the FP32 dK/dV before every one of the cp (8 B).
  const double grads = out + chunk;
  CHECK(pass_kernels(torch, false).bytes - pass_kernels(torch_all_gather, false).bytes ==
        Approx(grads * (10 * cp + 4 + 6) + chunk * (4 * (cp - 1) + 8 * cp) -
               gather_extras(cp, false).bytes));
  // Its exchanges are taken as exposed (docs/context-parallel.md#torch).
  for (const Segment& s : cp_exchange(torch).segments) CHECK(s.overlap_s == 0);
  CHECK(gather.parallelism.cp_implementation == CpImplementation::p2p);  // the default
}

TEST_CASE("Transformer Engine's ring hides its K/V hops behind the steps and merges each step") {
  const int cp = GENERATE(2, 4);
  nlohmann::json j = gqa_cp2();
  j["parallelism"]["cp"] = cp;
  j["parallelism"]["dp"] = 8 / cp;
  const Scenario ring = load(j);
  REQUIRE(ring.parallelism.cp_implementation == CpImplementation::p2p);
  j["parallelism"]["cp_implementation"] = "all_gather";
  const Scenario gather = load(j);

  // cp - 1 hops of one rank's chunk of K and V (S / cp x 2 heads x 128 x 2 B each): the bytes
  // of an all-gather of the whole sequence's; the backward passes K/V and dK/dV, twice that.
  const double kv = 2 * S * kv_heads * d * 2;
  const std::vector<Collective> c = cp_collectives(ring);
  REQUIRE(c.size() == 2);
  CHECK((c[0].kind == CollKind::all_gather && c[0].bytes == kv));
  CHECK((c[1].kind == CollKind::all_gather && c[1].bytes == 2 * kv));
  CHECK(c[1].dtype == Dtype::bf16);

  // Each hop travels while a step computes: cp - 1 of the cp steps' attention time.
  const auto compute = test::compute_model(ring);
  PassBuilder b(ring, compute);
  const std::vector<Segment> seg = cp_exchange(ring).segments;
  REQUIRE(seg.size() == 2);
  CHECK(seg[0].beside);
  CHECK(seg[0].overlap_s == Approx(b.attention_forward().time_s * (cp - 1) / cp));
  CHECK(seg[1].beside);
  CHECK(seg[1].overlap_s == Approx(b.attention_backward().time_s * (cp - 1) / cp));
  for (const Segment& g : cp_exchange(gather).segments) CHECK(g.overlap_s == 0);

  // Forward, per element of the local output (S / cp x 8 heads x 128): the first step's output
  // rescaled (4 B), each later step's written and merged into the running output (8 B); cp - 1
  // more attention calls and as many softmax-statistics corrections, cp merge kernels.
  const double out = S / cp * heads * d;
  const models::OpCost fwd_ring = pass_kernels(ring, true), fwd_gather = pass_kernels(gather, true);
  const GatherExtras fwd_extras = gather_extras(cp, true), bwd_extras = gather_extras(cp, false);
  CHECK(fwd_ring.bytes - fwd_gather.bytes == Approx(out * (4 + 8 * (cp - 1)) - fwd_extras.bytes));
  CHECK(fwd_ring.kernels - fwd_gather.kernels == Approx(2 * (cp - 1) + cp - fwd_extras.kernels));
  // Backward, per element of dQ (as many as the output) and of the K/V chunk's dK and dV
  // (2 x S / cp x 2 heads x 128): copied at the first step (4 B), added at each later one (8 B),
  // three kernels a step, and cp - 1 more attention backward calls.
  const double grads = out + 2 * S / cp * kv_heads * d;
  const models::OpCost bwd_ring = pass_kernels(ring, false);
  const models::OpCost bwd_gather = pass_kernels(gather, false);
  CHECK(bwd_ring.bytes - bwd_gather.bytes == Approx(grads * (4 + 8 * (cp - 1)) - bwd_extras.bytes));
  CHECK(bwd_ring.kernels - bwd_gather.kernels == Approx(3 * cp + (cp - 1) - bwd_extras.kernels));
}

TEST_CASE("A context-parallel implementation the loader does not know is refused at its path") {
  nlohmann::json j = gqa_cp2();
  j["parallelism"]["cp_implementation"] = "ring";
  CHECK_THROWS_WITH(load(j),
                    Catch::Contains("/parallelism/cp_implementation") && Catch::Contains("torch"));
}
