// Fitting simulator parameters to microbenchmark measurements, and the calibration file that
// holds the result (what ClusterSpec::calibration points at).
//
// Network model fitted per (collective, ranks, nodes) table of nccl-tests results:
//   time_us(S) = latency_us + S · busbw_factor / (busbw_GBps · 1e3)
// (S in bytes; busbw_factor as nccl-tests defines it, doc/PERFORMANCE.md), piecewise over
// message-size regimes. NCCL switches protocol with size (LL for small messages, LL128 for
// medium, Simple for large; src/graph/tuning.cc), which shows in the measurements as segments
// with different latency and bandwidth; the number of segments (1–3) and their boundaries are
// chosen from the data by the Bayesian information criterion, each segment fitted by weighted
// least squares (Eigen) on relative residuals so that 8-byte and 8-GiB points count alike.
// The bandwidth efficiency curve is measured busbw / asymptotic busbw per size.
//
// Compute model fitted per dtype to GEMM timings:
//   time_s = launch_s + flops / effective_flops + bytes / effective_Bps
// (least squares on relative residuals, coefficients kept non-negative); efficiency(shape) is
// flops / (peak × time), reported per measured point and from the fitted model.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/json_reader.hpp"
#include "core/scenario.hpp"
#include "validation/gemm_log.hpp"
#include "validation/nccl_tests_log.hpp"
#include "validation/rank_count.hpp"

namespace clustersim::validation {

// ---- Network -----------------------------------------------------------------------------

// The fit types (SizeTime, AlphaBetaFit, Residual, NetworkCalibration) are plain data in
// core/calibration.hpp, where the NCCL planner reads them.
using clustersim::AlphaBetaFit;
using clustersim::link_class_for;
using clustersim::NetworkCalibration;
using clustersim::Residual;
using clustersim::SizeTime;

struct RegimeFit {
  std::vector<AlphaBetaFit> regimes;  // ascending sizes, contiguous
  double r2 = 0;                      // of time over all points (log-space: see .cpp)
  double max_abs_rel_residual = 0;
  std::vector<Residual> worst;  // largest relative residuals first (up to 5)
  double time_us(double size_bytes, double factor) const;
};

// Weighted least-squares α–β fit of one segment. Points must be non-empty with time > 0.
AlphaBetaFit fit_alpha_beta(const std::vector<SizeTime>& points, double factor);
// Segmented fit with at most `max_regimes` segments of at least `min_points` points each.
RegimeFit fit_regimes(std::vector<SizeTime> points, double factor, int max_regimes = 3,
                      int min_points = 4);

// Fits one nccl-tests table (out-of-place times where measured, else in-place).
// Throws ConfigError if the table has fewer than 2 usable rows.
NetworkCalibration fit_network_table(const NcclTestsTable& table, const std::string& source);

// The lowest R^2 (of log time, over all points) of a network fit that calibrate accepts.
// R^2 = 1 - (residual variance) / (variance of ln time). Over an nccl-tests sweep ln time has a
// standard deviation of 2 to 3 (2.2 in the shipped GCP A3 Mega table, 136 us to 48 ms; 3.1 in
// the DGX H100 one), so R^2 = 0.95 still allows residuals of sqrt(0.05) x 2 = 0.45 in ln time,
// a factor of about 1.6 on a typical point: the loosest fit that still models the table. The
// shipped tables fit with R^2 0.986 and 0.999; the one-rank reading of the GCP table with its
// "#  Rank" lines trimmed gave -1.14. A fit below the floor means the alpha-beta model does not
// describe the table (a wrong rank count, runs mixed in one table, a mangled transcription).
inline constexpr double kMinNetworkFitR2 = 0.95;

// Why a fitted network entry cannot be trusted: a latency or bandwidth that is negative or not
// finite, no regime with a finite bus bandwidth (times that do not grow with size, or a
// bus-bandwidth factor of 0), R^2 not finite or below kMinNetworkFitR2. Empty when it can be.
std::vector<std::string> untrusted_fit_reasons(const NetworkCalibration& fit);

// ---- Compute -----------------------------------------------------------------------------

struct GemmPoint {
  std::string name;
  std::string kind;
  Dtype dtype = Dtype::bf16;
  double m = 0, n = 0, k = 0, batch = 1;
  double flops = 0;
  double time_us = 0;
  double tflops = 0;
  std::optional<double> efficiency;  // tflops / peak when the peak is known
  std::string source;
};

struct ComputeModelFit {
  Dtype dtype = Dtype::bf16;
  double launch_us = 0;              // fixed cost per call
  double effective_tflops = 0;       // large-GEMM throughput limit (+inf if unresolved)
  double effective_memory_GBps = 0;  // operand-traffic term (+inf if unresolved)
  std::optional<double> peak_tflops;
  std::optional<double> max_efficiency;  // effective_tflops / peak
  double r2 = 0;
  double max_abs_rel_residual = 0;
  int points = 0;
  std::vector<Residual> worst;  // size_bytes holds the FLOPs of the point
  // Predicted time of one GEMM of `flops` FLOPs moving `bytes` bytes.
  double time_us(double flops, double bytes) const;
};

struct ComputeCalibration {
  std::vector<GemmPoint> points;
  std::vector<ComputeModelFit> models;  // one per dtype with >= 3 points
};

// `peaks` maps dtype -> dense peak TFLOP/s (from a GPU preset or the command line); dtypes
// without a peak get achieved TFLOP/s only.
ComputeCalibration fit_compute(const std::vector<GemmLog>& logs,
                               const std::map<Dtype, double>& peaks_tflops);

// ---- The calibration file ----------------------------------------------------------------

struct CalibrationProvenance {
  std::vector<std::string> hardware;  // distinct device names
  int hosts = 0;                      // largest host count among the network logs
  std::string nccl_version;
  std::string cuda_version;
  std::string driver_version;
  std::string measured_date;         // as the logs say ("" if they do not)
  std::vector<std::string> sources;  // input files and citations
};

struct Calibration {
  std::string name;
  std::string description;
  std::string created;  // when the file was written (ISO 8601), or as given
  CalibrationProvenance measured;
  std::vector<NetworkCalibration> network;
  ComputeCalibration compute;

  // Not written to the file: how each network entry's rank count was found, overrides the log
  // contradicts, and why a table could not be fitted or its fit cannot be trusted (calibrate
  // refuses to write a calibration with any).
  std::vector<std::string> notes;
  std::vector<std::string> refusals;

  // The entry for (link class, op) with the rank count closest to `nranks`; nullptr if none.
  const NetworkCalibration* find(const std::string& link_class, NcclTestsOp op, int nranks) const;
};

// Format tag of the calibration file.
inline constexpr const char* kCalibrationFormat = "clustersim-calibration/1";

nlohmann::json to_json(const Calibration& calibration);
// Strict reading (unknown keys rejected, ConfigError with file and pointer).
Calibration calibration_from_json(const JsonNode& root);
Calibration load_calibration(const std::string& path);
// The network part of the calibration file the cluster names (ClusterSpec::calibration), for
// the NCCL planner; empty when it names none. Throws ConfigError like load_calibration.
std::vector<NetworkCalibration> load_network_calibration(const ClusterSpec& cluster);
// Atomic write (core/atomic_file.hpp).
void write_calibration(const std::string& path, const Calibration& calibration);

// Builds a calibration from parsed logs: one network entry per table, the compute fit, and
// the provenance merged from every log. Each table's rank and node counts are resolved with
// `given` (rank_count.hpp); a table whose counts stay unknown is not fitted, and it and every
// untrusted fit are listed in `refusals`.
Calibration calibrate(const std::vector<NcclTestsLog>& nccl_logs,
                      const std::vector<GemmLog>& gemm_logs,
                      const std::map<Dtype, double>& peaks_tflops, const RankOverride& given = {});

// Human-readable fit quality: one line per entry with R², regimes and worst residuals.
std::string describe_fit_quality(const Calibration& calibration);

}  // namespace clustersim::validation
