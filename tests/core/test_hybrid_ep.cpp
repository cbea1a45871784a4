// HybridEP's measured bandwidths and the GPUs a token reaches (core/hybrid_ep.hpp). Expected
// values are the figure's numbers (Megatron-Core's DeepSeek-V3 GB200 guide, section 2.5) and
// hand-written products.
#include <catch2/catch.hpp>

#include "core/hybrid_ep.hpp"

using namespace clustersim;

namespace {

GpuSpec gpu(GpuArch arch, double nvlink_GBps) {
  GpuSpec g;
  g.name = "test";
  g.architecture = arch;
  g.nvlink_Bps = nvlink_GBps * 1e9;
  return g;
}

}  // namespace

TEST_CASE("HybridEP runs at the figure's bandwidth for its SMs") {
  const GpuSpec gb200 = gpu(GpuArch::blackwell, 900);
  const auto at32 = hybrid_ep_rate(gb200, 32);
  REQUIRE(at32);
  CHECK(at32->dispatch_Bps == Approx(714.66e9));
  CHECK(at32->combine_Bps == Approx(657.72e9));
  CHECK_FALSE(at32->scaled);
  // Megatron-Core's default, 16 SMs, when the scenario gives none.
  CHECK(hybrid_ep_rate(gb200, 0)->dispatch_Bps == Approx(694.1e9));
  // Between measured points: linear (24 SMs, halfway from 16 to 32).
  CHECK(hybrid_ep_rate(gb200, 24)->combine_Bps == Approx((617.62 + 657.72) / 2 * 1e9));
  // Below the first point, proportional to the SMs; above the last, the last.
  CHECK(hybrid_ep_rate(gb200, 2)->dispatch_Bps == Approx(213.95e9 / 2));
  CHECK(hybrid_ep_rate(gb200, 64)->dispatch_Bps == Approx(714.66e9));
  // DGX H100's measurement; an H800's NVLink (200 GB/s a direction against 450) scales it.
  CHECK(hybrid_ep_rate(gpu(GpuArch::hopper, 450), 16)->dispatch_Bps == Approx(368.9e9));
  const auto h800 = hybrid_ep_rate(gpu(GpuArch::hopper, 200), 16);
  CHECK(h800->combine_Bps == Approx(368.87e9 * 200 / 450));
  CHECK(h800->scaled);
  CHECK_FALSE(hybrid_ep_rate(gpu(GpuArch::ampere, 300), 16));
}

TEST_CASE("A token reaches the GPUs holding at least one of its k experts") {
  // DeepSeek-V3 at EP 32 with 4 of 8 groups: 16 GPUs of 8 experts reachable, 8 experts drawn.
  const double none = (120.0 * 119 * 118 * 117 * 116 * 115 * 114 * 113) /
                      (128.0 * 127 * 126 * 125 * 124 * 123 * 122 * 121);
  CHECK(ranks_per_token(16, 8, 8) == Approx(16 * (1 - none)));
  // One expert per GPU: k distinct GPUs; one expert drawn: one GPU.
  CHECK(ranks_per_token(8, 1, 8) == Approx(8));
  CHECK(ranks_per_token(32, 8, 1) == Approx(1));
}
