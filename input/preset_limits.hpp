// Ranges of the presets' figures: the model's shape, the GPU and the cluster. The loaders
// (input/presets.cpp, input/model_blocks.cpp) check them through the key tables of
// input/input_keys.cpp, which `clustersim schema` also prints.
#pragma once

#include <cstdint>

namespace clustersim::input {

// Ranges of the hardware figures, in SI units. They are far wider than any real part (the
// slowest link meant here is PCIe 1.0 x1, 0.25 GB/s per direction; an H100's HBM3 moves
// 3.35 TB/s; the densest 2024 GPU peaks near 5 PFLOP/s in FP8), wide enough for idealised
// parts (a bandwidth of 1 EB/s makes a memory-bound kernel free); what they exclude is a typo
// or a generated value that would make a step's durations overflow a double or drive a flow's
// rate below SimGrid's solver precision, where it never finishes.
inline constexpr double kMinBandwidth_Bps = 1e6;   // 1 MB/s
inline constexpr double kMaxBandwidth_Bps = 1e18;  // 1 EB/s
inline constexpr double kMinPeakFlops = 1e9;       // 1 GFLOP/s
inline constexpr double kMaxPeakFlops = 1e18;      // 1 EFLOP/s
inline constexpr double kMinMemoryBytes = 1e6;     // 1 MB
inline constexpr double kMaxMemoryBytes = 1e15;    // 1 PB
inline constexpr double kMaxLatency_s = 1.0;       // latencies and launch overheads, each
inline constexpr double kMaxPowerW = 1e5;          // 100 kW per GPU
// A leaf switch with more downlinks than this does not exist: the largest single-chip switch
// radix is 512 ports (Broadcom Tomahawk 5, 512 x 100GbE); the limit also bounds the spine
// count (one per oversubscribed downlink) and so the leaf-spine links the graph builds.
inline constexpr int kMaxLeafDownlinks = 512;
// A leaf with one uplink per thousand downlinks is the most oversubscribed fabric accepted.
inline constexpr double kMaxOversubscription = 1000;

// Widths and counts of the model: far beyond any model, small enough that products of them
// stay exact in a double.
inline constexpr std::int64_t kMaxExperts = 1 << 16;
inline constexpr std::int64_t kMaxWidth = 1 << 26;
inline constexpr std::int64_t kMaxLayers = 100000;
// Capacity beyond this many times the mean is no capacity limit at all for any real model.
inline constexpr double kMaxCapacityFactor = 1000;
inline constexpr int kMaxMtpLayers = 64;

}  // namespace clustersim::input
