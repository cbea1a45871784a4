// Seeded random variates for the campaign: std::mt19937_64 (whose output sequence the C++
// standard fixes) with the distributions written out here, because the standard leaves the
// output of std::*_distribution to each library. Same seed, same numbers, on every platform.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace clustersim::campaign {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  // Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Exponential with the given rate (events per unit); +inf when the rate is 0.
  double exponential(double rate) {
    if (!(rate > 0)) return std::numeric_limits<double>::infinity();
    return -std::log1p(-uniform()) / rate;
  }
  // Standard normal (Box-Muller, one variate per call).
  double normal() {
    constexpr double kTwoPi = 6.28318530717958647692;
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
  }
  // Index i chosen with probability weight(items[i]) / total.
  template <typename Item, typename Weight>
  std::size_t pick(const std::vector<Item>& items, double total, Weight weight) {
    double x = uniform() * total;
    for (std::size_t i = 0; i < items.size(); ++i) {
      x -= weight(items[i]);
      if (x < 0) return i;
    }
    return items.size() - 1;
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace clustersim::campaign
