#include "core/calibration.hpp"

#include <cmath>
#include <cstdlib>

namespace clustersim {

namespace {

// µs per (byte / (GB/s)): S bytes at B GB/s take S / (B·1e9) s = S / (B·1e3) µs.
constexpr double kBytesPerGBpsToUs = 1e-3;

}  // namespace

double busbw_factor(NcclTestsOp op, int nranks) {
  const double n = nranks;
  switch (op) {
    case NcclTestsOp::all_reduce: return 2.0 * (n - 1) / n;
    case NcclTestsOp::all_gather:
    case NcclTestsOp::reduce_scatter:
    case NcclTestsOp::alltoall: return (n - 1) / n;
    case NcclTestsOp::sendrecv:
    case NcclTestsOp::broadcast:
    case NcclTestsOp::reduce: return 1.0;
    case NcclTestsOp::unknown: break;
  }
  return 1.0;
}

double AlphaBetaFit::time_us(double size_bytes, double factor) const {
  const double transfer = std::isfinite(busbw_GBps) && busbw_GBps > 0
                              ? size_bytes * factor * kBytesPerGBpsToUs / busbw_GBps
                              : 0.0;
  return latency_us + transfer;
}

std::string link_class_for(int nodes) {
  return nodes > 1 ? "inter_node" : "intra_node";
}

const AlphaBetaFit* NetworkCalibration::regime_for(double size_bytes) const {
  if (regimes.empty()) return nullptr;
  for (const auto& r : regimes)
    if (size_bytes <= r.max_bytes) return &r;
  return &regimes.back();
}

double NetworkCalibration::time_us(double size_bytes) const {
  const AlphaBetaFit* r = regime_for(size_bytes);
  return r ? r->time_us(size_bytes, busbw_factor(op, nranks)) : 0.0;
}

const NetworkCalibration* find_network_calibration(const std::vector<NetworkCalibration>& entries,
                                                   const std::string& link_class, NcclTestsOp op,
                                                   int nranks) {
  const NetworkCalibration* best = nullptr;
  for (const auto& e : entries) {
    if (e.link_class != link_class || e.op != op) continue;
    if (!best || std::abs(e.nranks - nranks) < std::abs(best->nranks - nranks)) best = &e;
  }
  return best;
}

}  // namespace clustersim
