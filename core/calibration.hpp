// A cluster's network calibration as plain data: α–β fits of measured nccl-tests tables, one per
// (link class, collective, rank count). Written by `clustersim calibrate`, read from the file a
// cluster preset names (ClusterSpec::calibration), and handed to the NCCL planner
// (nccl/planner.hpp), which takes the fitted latency and bandwidth instead of NCCL's cost model for
// the collectives measured. Fitting and the file format live in validation/calibration.hpp. No I/O
// here.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace clustersim {

// The collective an nccl-tests binary measures (all_reduce_perf, all_gather_perf, ...).
enum class NcclTestsOp {
  all_reduce,
  all_gather,
  reduce_scatter,
  alltoall,
  sendrecv,
  broadcast,
  reduce,
  unknown
};

// nccl-tests' bus-bandwidth factor: busbw = algbw × factor (doc/PERFORMANCE.md):
// 2(n−1)/n for AllReduce, (n−1)/n for ReduceScatter, AllGather and AlltoAll, 1 for Broadcast,
// Reduce and SendRecv. Precondition: nranks >= 1; op != unknown.
double busbw_factor(NcclTestsOp op, int nranks);

struct SizeTime {
  double size_bytes = 0;
  double time_us = 0;
};

// One linear segment of the α–β model: time_us(S) = latency_us + S · factor / (busbw_GBps · 1e3).
struct AlphaBetaFit {
  double min_bytes = 0, max_bytes = 0;  // sizes covered (inclusive)
  double latency_us = 0;                // α
  double busbw_GBps = 0;                // β; +infinity when the segment shows no size effect
  double r2 = 0;                        // of time, within the segment
  int points = 0;
  // `factor`: the collective's bus-bandwidth factor (busbw_factor).
  double time_us(double size_bytes, double factor) const;
};

struct Residual {
  double size_bytes = 0;
  double measured_us = 0;
  double fitted_us = 0;
  double relative() const { return (fitted_us - measured_us) / measured_us; }
};

// "intra_node" when all ranks share a host, "inter_node" otherwise.
std::string link_class_for(int nodes);

// The fit of one nccl-tests table.
struct NetworkCalibration {
  std::string link_class;  // "intra_node" | "inter_node"
  NcclTestsOp op = NcclTestsOp::all_reduce;
  int nranks = 0;
  int nodes = 0;
  std::string placement;              // "in_place" | "out_of_place": which measurement was fitted
  std::string source;                 // file (and citation, for transcriptions)
  std::vector<AlphaBetaFit> regimes;  // ascending sizes, contiguous
  double peak_busbw_GBps = 0;         // largest finite β
  // Measured busbw / peak_busbw per size (the bandwidth efficiency curve), ascending sizes.
  std::vector<std::pair<double, double>> bw_efficiency;
  std::vector<SizeTime> points;  // the measurements the fit used
  double r2 = 0;
  double max_abs_rel_residual = 0;
  std::vector<Residual> worst;
  // The regime covering `size_bytes` (the first whose max_bytes >= size, else the last);
  // nullptr when there is none.
  const AlphaBetaFit* regime_for(double size_bytes) const;
  double time_us(double size_bytes) const;  // the fitted model at one size
};

// The entry of `entries` for (link class, op) with the rank count closest to `nranks` (the
// first of equals); nullptr if none.
const NetworkCalibration* find_network_calibration(const std::vector<NetworkCalibration>& entries,
                                                   const std::string& link_class, NcclTestsOp op,
                                                   int nranks);

}  // namespace clustersim
