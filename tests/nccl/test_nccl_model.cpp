// NCCL's cost model (NVIDIA/nccl v2.30.7-1 src/graph/tuning.cc). Expected values are worked out
// by hand from the constants of tuning.cc (as docs/nccl.md#cost-model lists
// them) and written out term by term, never taken from the model's own output.
#include <catch2/catch.hpp>

#include "nccl/nccl_model.hpp"

using namespace clustersim;
using namespace clustersim::nccl;

namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// 128 nodes x 8 GPUs, Hopper, Intel CPUs; ring and tree graphs of 8 channels at 20 GB/s per
// channel inside and across nodes; no NVLS (so only Ring and Tree compete).
NcclCommInfo seed_comm() {
  NcclCommInfo c;
  c.n_ranks = 1024;
  c.n_nodes = 128;
  c.arch = GpuArch::hopper;
  c.cpu = CpuVendor::intel;
  c.ring = NcclGraphInfo{8, 20.0, 20.0, 0.0, true};
  c.tree = c.ring;
  c.comm_channels = 16;
  c.nvls_supported = false;
  return c;
}

const NcclCandidate& candidate(const NcclDecision& d, NcclAlgo a, NcclProto p) {
  for (const auto& c : d.candidates) {
    if (c.algo == a && c.proto == p) return c;
  }
  FAIL("no candidate");
  return d.candidates.front();
}

}  // namespace

TEST_CASE("The worked example of docs/nccl.md: ring latency 9.66 ms, tree 260 us at 1024 ranks",
          "[nccl]") {
  const NcclModel m(seed_comm(), NcclSettings{});
  // Ring AllReduce Simple: base 8.4 + (nsteps - nInter) * intraLat + nInter * interLat with
  // nsteps = 2 * 1023 = 2046, nInter = 2 * 127 = 254, intraLat = max(NVLINK 3.4, 3 * 1.0 net
  // overhead) = 3.4, interLat = NET 14.
  const double ring_us = 8.4 + (2046 - 254) * 3.4 + 254 * 14.0;
  CHECK(ring_us == Approx(9657.2));
  CHECK(m.latency_us(NcclCollective::all_reduce, NcclAlgo::ring, NcclProto::simple) ==
        Approx(ring_us));
  // Tree AllReduce Simple: 8.4 + 2 * ((8 - 1) * NVLINK 4.0 + log2(128) * NET 14).
  const double tree_us = 8.4 + 2 * (7 * 4.0 + 7 * 14.0);
  CHECK(tree_us == Approx(260.4));
  CHECK(m.latency_us(NcclCollective::all_reduce, NcclAlgo::tree, NcclProto::simple) ==
        Approx(tree_us));

  // Bandwidths: ring busBw = 8 x 20 = 160 GB/s, algo = 160 * 1024 / 2046; tree busBw =
  // min(0.92 * 160, 8 * perChMaxTreeBw(>=4 nodes) 36.0) = 147.2, algo = 147.2 / 2.
  const double ring_bw = 160.0 * 1024 / 2046;
  const double tree_bw = 147.2 * 0.5;
  CHECK(m.bandwidth_GBps(NcclCollective::all_reduce, NcclAlgo::ring, NcclProto::simple) ==
        Approx(ring_bw));
  CHECK(m.bandwidth_GBps(NcclCollective::all_reduce, NcclAlgo::tree, NcclProto::simple) ==
        Approx(tree_bw));

  // 16 GiB: ring latency gets the 1.4x plateau factor (16 GiB / (16 ch * 1024) >= 64 B); the
  // tree correction factor stops at log2(nBytes/64) = 22, so none at 2^28.
  const double bytes = 16 * GiB;
  const double ring_t = (1.4 * ring_us + bytes / (1000 * ring_bw)) * 1e-6;
  const double tree_t = (tree_us + bytes / (1000 * tree_bw)) * 1e-6;
  CHECK(m.time_s(NcclCollective::all_reduce, NcclAlgo::ring, NcclProto::simple, bytes) ==
        Approx(ring_t));
  CHECK(m.time_s(NcclCollective::all_reduce, NcclAlgo::tree, NcclProto::simple, bytes) ==
        Approx(tree_t));
}

TEST_CASE("At 1024 ranks NCCL's model picks Tree for small messages and Ring for large ones",
          "[nccl]") {
  const NcclModel m(seed_comm(), NcclSettings{});

  SECTION("64 KiB: Tree LL") {
    const NcclDecision d = m.decide(NcclCollective::all_reduce, 65536);
    CHECK(d.algo == NcclAlgo::tree);
    CHECK(d.proto == NcclProto::ll);
    // Tree LL: latency 6.8 + 2 * (7 * NVLINK 0.6 + 7 * NET 5.0) = 85.2 us; busBw =
    // min(147.2 / 3.8, llMaxBw(Intel, >=3 nodes) 20.4) = 20.4, algo 10.2, times the tree
    // correction factor LL[log2(65536 / 64) = 10] = 0.6.
    const double t_us = 85.2 + 65536 / (1000 * 20.4 * 0.5 * 0.6);
    CHECK(d.time_s == Approx(t_us * 1e-6));
    CHECK(d.candidates.size() == 21);
    CHECK(candidate(d, NcclAlgo::ring, NcclProto::simple).enabled);
    CHECK_FALSE(candidate(d, NcclAlgo::nvls_tree, NcclProto::simple).enabled);
  }
  SECTION("16 GiB: Ring Simple") {
    const NcclDecision d = m.decide(NcclCollective::all_reduce, 16 * GiB);
    CHECK(d.algo == NcclAlgo::ring);
    CHECK(d.proto == NcclProto::simple);
    CHECK(d.n_channels == 16);  // large: no shrinking
    CHECK(d.n_threads == 512 + 32);
  }
  SECTION("Ring overtakes Tree where the extra ring latency is paid back") {
    // 1.4 * 9657.2 - 260.4 us = bytes * (1/73.6 - 1/80.08) / 1000  ->  about 12.06e9 bytes.
    const double crossover = (1.4 * 9657.2 - 260.4) * 1000 / (1 / 73.6 - 1 / (160.0 * 1024 / 2046));
    CHECK(crossover == Approx(12.06e9).epsilon(0.01));
    CHECK(m.decide(NcclCollective::all_reduce, 0.9 * crossover).algo == NcclAlgo::tree);
    CHECK(m.decide(NcclCollective::all_reduce, 1.1 * crossover).algo == NcclAlgo::ring);
  }
}

TEST_CASE(
    "With NVLS on the seed cluster, small messages go to Tree or NVLSTree and large ones to "
    "NVLSTree",
    "[nccl]") {
  NcclHardware hw;
  hw.nvlink_Bps_per_gpu = 200e9;
  hw.net_Bps_per_gpu = 50e9;
  hw.nics_per_node = 8;
  hw.gpus_per_node = 8;
  const NcclModel m(derive_comm_info(hw, 1024, 128, NcclSettings{}), NcclSettings{});
  CHECK(m.comm().nvls_supported);
  for (double bytes : {1024.0, 65536.0, 1048576.0}) {
    const auto algo = m.decide(NcclCollective::all_reduce, bytes).algo;
    CHECK((algo == NcclAlgo::tree || algo == NcclAlgo::nvls_tree));
  }
  // NVLSTree per channel: min(24 * 0.85 * 7/8 * 2 = 35.7, bwInter 48, cap 45.5) = 35.7 over 8
  // channels = 285.6 GB/s bus bandwidth, above the ring's 5 x 40 = 200: NVLSTree at every size.
  CHECK(m.decide(NcclCollective::all_reduce, 64 * GiB).algo == NcclAlgo::nvls_tree);
}

TEST_CASE("NCCL_ALGO=Ring forces the ring", "[nccl]") {
  NcclSettings s;
  s.algos = {NcclAlgo::ring};
  const NcclModel m(seed_comm(), s);
  for (double bytes : {8.0, 65536.0, 1048576.0, 1 * GiB}) {
    const NcclDecision d = m.decide(NcclCollective::all_reduce, bytes);
    CHECK(d.algo == NcclAlgo::ring);
  }
  const NcclDecision d = m.decide(NcclCollective::all_reduce, 65536);
  CHECK_FALSE(candidate(d, NcclAlgo::tree, NcclProto::ll).enabled);
  CHECK(candidate(d, NcclAlgo::tree, NcclProto::ll).why_disabled.find("NCCL_ALGO") !=
        std::string::npos);

  SECTION("and NCCL_PROTO=Simple on top leaves only Ring Simple") {
    s.protos = {NcclProto::simple};
    const NcclModel only(seed_comm(), s);
    const NcclDecision e = only.decide(NcclCollective::all_reduce, 65536);
    CHECK(e.algo == NcclAlgo::ring);
    CHECK(e.proto == NcclProto::simple);
  }
  SECTION("an algorithm that cannot run the collective leaves nothing") {
    NcclSettings t;
    t.algos = {NcclAlgo::tree};
    const NcclModel tree_only(seed_comm(), t);
    CHECK_THROWS_WITH(tree_only.decide(NcclCollective::all_gather, 65536),
                      Catch::Contains("No algorithm/protocol"));
  }
}

TEST_CASE("Per-channel bandwidth caps bound LL128 and Tree", "[nccl]") {
  SECTION("Ring LL128 on one node: min(0.92 busBw, nCh * 36.7)") {
    NcclCommInfo c;
    c.n_ranks = 8;
    c.n_nodes = 1;
    c.ring = NcclGraphInfo{8, 40.0, 40.0, 0.0, true};
    c.tree = c.ring;
    const NcclModel m(c, NcclSettings{});
    // busBw 320: 0.92 * 320 = 294.4 > 8 * 36.7 = 293.6 -> capped; algo = 293.6 * 8 / 14.
    CHECK(m.bandwidth_GBps(NcclCollective::all_reduce, NcclAlgo::ring, NcclProto::ll128) ==
          Approx(293.6 * 8 / 14));
    // Ring LL: min(llMaxBw(Hopper, one node) 141.0, 0.5 * 320) = 141, algo 141 * 8 / 14.
    CHECK(m.bandwidth_GBps(NcclCollective::all_reduce, NcclAlgo::ring, NcclProto::ll) ==
          Approx(141.0 * 8 / 14));
    // Tree on one node: min(0.92 * 320, 8 * perChMaxTreeBw(1 node) 38.7 = 309.6) = 294.4.
    CHECK(m.bandwidth_GBps(NcclCollective::all_reduce, NcclAlgo::tree, NcclProto::simple) ==
          Approx(294.4 * 0.5));
  }
  SECTION("Tree across >= 4 nodes: perChMaxTreeBw 36.0 binds at 48 GB/s per channel") {
    NcclCommInfo c = seed_comm();
    c.ring = NcclGraphInfo{8, 48.0, 48.0, 0.0, true};
    c.tree = c.ring;
    const NcclModel m(c, NcclSettings{});
    // min(0.92 * 384 = 353.3, 8 * 36.0 = 288) = 288, algo 144.
    CHECK(m.bandwidth_GBps(NcclCollective::all_reduce, NcclAlgo::tree, NcclProto::simple) ==
          Approx(144.0));
    // Tree LL128 then: min(288 * 120/128 = 270, 8 * perChMaxTreeLL128Bw 29.0 = 232) = 232.
    CHECK(m.bandwidth_GBps(NcclCollective::all_reduce, NcclAlgo::tree, NcclProto::ll128) ==
          Approx(116.0));
  }
}

TEST_CASE("Small messages shrink the channel count", "[nccl]") {
  const NcclModel m(seed_comm(), NcclSettings{});
  // Tree LL: 512 threads x threshold 8 = 4096 bytes per channel. 4 KiB -> 1 channel; 32 KiB ->
  // 8 channels; 64 KiB -> all 16.
  const NcclDecision small = m.decide(NcclCollective::all_reduce, 4096);
  REQUIRE(small.algo == NcclAlgo::tree);
  REQUIRE(small.proto == NcclProto::ll);
  CHECK(small.n_channels == 1);
  CHECK(small.n_threads == 640);  // Tree always uses NCCL_MAX_NTHREADS
  CHECK(m.decide(NcclCollective::all_reduce, 32768).n_channels == 8);
  CHECK(m.decide(NcclCollective::all_reduce, 65536).n_channels == 16);
}

TEST_CASE("LL128 is on by default only on NVLink with GPUDirect paths", "[nccl]") {
  NcclCommInfo c = seed_comm();
  c.ll128_paths_ok = false;
  const NcclModel off(c, NcclSettings{});
  const NcclDecision d = off.decide(NcclCollective::all_reduce, 1048576);
  CHECK_FALSE(candidate(d, NcclAlgo::ring, NcclProto::ll128).enabled);
  CHECK_FALSE(candidate(d, NcclAlgo::tree, NcclProto::ll128).enabled);
  NcclSettings forced;
  forced.protos = {NcclProto::ll128};
  const NcclModel on(c, forced);
  CHECK(on.decide(NcclCollective::all_reduce, 1048576).proto == NcclProto::ll128);
}

TEST_CASE("FP8 rings over more than 8 ranks are penalised 1024x", "[nccl]") {
  const NcclModel m(seed_comm(), NcclSettings{});
  const double bytes = 16 * GiB;
  const double bf16 =
      m.time_s(NcclCollective::all_reduce, NcclAlgo::ring, NcclProto::simple, bytes);
  const double fp8 =
      m.time_s(NcclCollective::all_reduce, NcclAlgo::ring, NcclProto::simple, bytes, Dtype::fp8);
  CHECK(fp8 == Approx(1024 * bf16));
  CHECK(m.decide(NcclCollective::all_reduce, bytes, Dtype::fp8).algo == NcclAlgo::tree);
}

TEST_CASE("On one node the ring model is the alpha-beta closed form plus NCCL's base latency",
          "[nccl]") {
  NcclCommInfo c;
  c.n_ranks = 8;
  c.n_nodes = 1;
  c.ring = NcclGraphInfo{8, 20.0, 20.0, 0.0, true};
  c.tree = c.ring;
  const NcclModel m(c, NcclSettings{});
  const double bytes = 256.0 * 1024 * 1024;
  // base 8.4 us + 2(n-1) steps of NVLINK 3.4 us + 2(n-1)/n * S / busBw(160 GB/s).
  const double expected = 8.4e-6 + ring_allreduce_alpha_beta_s(bytes, 8, 160e9, 3.4e-6);
  CHECK(m.time_s(NcclCollective::all_reduce, NcclAlgo::ring, NcclProto::simple, bytes) ==
        Approx(expected));
  CHECK(ring_allreduce_alpha_beta_s(1e9, 8, 100e9, 5e-6) == Approx(2 * 7.0 / 8 * 0.01 + 14 * 5e-6));
  CHECK(ring_allreduce_alpha_beta_s(1e9, 1, 100e9, 5e-6) == 0);
}

TEST_CASE("All-gather and reduce-scatter use ring steps n-1 and no tree", "[nccl]") {
  const NcclModel m(seed_comm(), NcclSettings{});
  // Ring AllGather Simple: 8.4 + (1023 - 127) * 3.4 + 127 * 14.
  CHECK(m.latency_us(NcclCollective::all_gather, NcclAlgo::ring, NcclProto::simple) ==
        Approx(8.4 + 896 * 3.4 + 127 * 14.0));
  CHECK(m.bandwidth_GBps(NcclCollective::all_gather, NcclAlgo::ring, NcclProto::simple) ==
        Approx(160.0 * 1024 / 1023));
  CHECK(m.bandwidth_GBps(NcclCollective::reduce_scatter, NcclAlgo::tree, NcclProto::simple) == 0);
  CHECK(m.decide(NcclCollective::reduce_scatter, 1 * GiB).algo == NcclAlgo::ring);
}

TEST_CASE("The topology search approximation reproduces NCCL's channel arithmetic", "[nccl]") {
  NcclHardware hw;
  hw.nvlink_Bps_per_gpu = 200e9;  // H800
  hw.net_Bps_per_gpu = 50e9;      // one 400 Gb/s NIC per GPU
  hw.nics_per_node = 8;
  hw.gpus_per_node = 8;
  SECTION("one node: 4 x 50 GB/s found, duplicated to 8 x 25; 16 comm channels") {
    const NcclCommInfo c = derive_comm_info(hw, 8, 1, NcclSettings{});
    CHECK(c.ring.n_channels == 8);
    CHECK(c.ring.bw_intra_GBps == Approx(25.0));
    CHECK(c.comm_channels == 16);
    // NVLS: 8 heads; NVLink budget 200 * 8 / 7 = 228.6 GB/s -> 28.6 per head -> 24 from the
    // sm90 intra speeds; bwInter then rises 30, 40, 50 (first >= 2 x 24).
    CHECK(c.nvls.n_channels == 8);
    CHECK(c.nvls.bw_intra_GBps == Approx(24.0));
    CHECK(c.nvls.bw_inter_GBps == Approx(50.0));
    CHECK(c.nvls_supported);
  }
  SECTION("128 nodes: 5 x 40 GB/s within 200 GB/s of NVLink, not duplicated") {
    const NcclCommInfo c = derive_comm_info(hw, 1024, 128, NcclSettings{});
    CHECK(c.ring.n_channels == 5);
    CHECK(c.ring.bw_inter_GBps == Approx(40.0));
    CHECK(c.comm_channels == 10);
  }
  SECTION("NCCL_MIN/MAX_NCHANNELS and NCCL_NVLS_ENABLE") {
    NcclSettings s;
    s.max_channels = 4;
    CHECK(derive_comm_info(hw, 8, 1, s).comm_channels == 4);
    s = NcclSettings{};
    s.min_channels = 32;
    CHECK(derive_comm_info(hw, 8, 1, s).comm_channels == 32);
    s = NcclSettings{};
    s.nvls_enable = false;
    CHECK_FALSE(derive_comm_info(hw, 8, 1, s).nvls_supported);
  }
  SECTION("bad shapes are rejected") {
    CHECK_THROWS_AS(derive_comm_info(hw, 10, 3, NcclSettings{}), std::invalid_argument);
  }
}

TEST_CASE("Point-to-point estimates and a single rank", "[nccl]") {
  NcclCommInfo c = seed_comm();
  c.nvlink_GBps_per_gpu = 200;
  c.net_GBps_per_gpu = 50;
  const NcclModel m(c, NcclSettings{});
  const NcclDecision d = m.decide(NcclCollective::send_recv, 1e9);
  CHECK(d.p2p);
  // 8.4 + NET 14 us + 1e9 B / 50 GB/s.
  CHECK(d.time_s == Approx((8.4 + 14.0) * 1e-6 + 1e9 / 50e9));

  NcclCommInfo one;
  one.n_ranks = 1;
  one.n_nodes = 1;
  const NcclModel solo(one, NcclSettings{});
  const NcclDecision s = solo.decide(NcclCollective::all_reduce, 1e6);
  CHECK(s.time_s == 0);
  CHECK(s.algo == NcclAlgo::ring);
}
