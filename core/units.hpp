// Unit conversions, one definition each. Input files carry their units in key names
// (`hbm_GB`, `nic_Gbps`, `latency_us`, `grad_bucket_MiB`); the loaders convert them once, with
// these factors, into bytes, seconds, bytes per second and FLOP/s, and reports convert back.
#pragma once

namespace clustersim {

// Sizes, in bytes. Datasheets and storage rates are decimal (GB, TB); memory reports binary.
inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * kKiB;
inline constexpr double kGiB = 1024.0 * kMiB;
inline constexpr double kGB = 1e9;
inline constexpr double kTB = 1e12;
inline constexpr double kGbit = 1e9 / 8.0;  // bytes in a gigabit (network line rates)

// Times, in seconds.
inline constexpr double kUs = 1e-6;
inline constexpr double kSecondsPerMinute = 60;
inline constexpr double kSecondsPerHour = 3600;
inline constexpr double kSecondsPerDay = 86400;

// Rates.
inline constexpr double kTflops = 1e12;  // FLOP/s in a TFLOP/s

}  // namespace clustersim
