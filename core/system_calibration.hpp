// Parameters of a GPU generation and its software stack that no microbenchmark pins down, fitted
// to published end-to-end training runs with leave-one-source-out cross-validation
// (`clustersim calibrate --runs`, validation/system_fit.hpp). They live in the `system` block of
// a compute-calibration file (models/compute_cost.hpp), so every scenario whose GPU preset names
// that file uses them, and a user can fit them to their own measured runs.
//
// Each parameter is physically named, has a unit and a plausible range the fit is bounded to,
// and a nominal value that leaves the microbenchmark calibration exactly as measured. A file
// without a `system` block (or a parameter it does not list) uses the nominal values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim {

enum class SystemParameterId {
  // Sustained tensor-core rate during a training step over the rate the GEMM and attention
  // microbenchmarks measured: clocks held under the power cap over long kernel streams with
  // realistic data (a GEMM on random inputs draws more power than on constant ones and is
  // throttled sooner; Horace He, "Strangely, Matrix Multiplications on GPUs Run Faster When
  // Given 'Predictable' Data!", 2024: 8192^3 on an A100, 295 TFLOPS on zeros, 257 on randn).
  // Scales every GEMM and attention kernel's compute rate.
  tensor_sustained_fraction,
  // Idle time per kernel on the compute stream: launch latency and framework dispatch that the
  // host's run-ahead does not hide. Replaces the GPU preset's kernel_launch_us when given.
  kernel_gap_us,
  // Bandwidth the framework's element-wise kernels (norms, activations, casts, residuals,
  // optimizer) reach, over the stream-copy benchmark of the calibration's `memory` entry.
  elementwise_hbm_fraction,
  // Host time to issue one kernel from the training framework's Python loop, in place of the
  // eager PyTorch block the presets measured (models/compute_cost.hpp kHostPerKernelS):
  // Megatron-Core and Transformer Engine add Python logic, allocations and quantization
  // bookkeeping per kernel. It only moves passes whose kernels the GPU runs faster than the
  // host issues them (docs/system-calibration.md#host-dispatch). Replaces the GPU preset's
  // host_us_per_kernel when given.
  host_us_per_kernel,
};

struct SystemParameterSpec {
  SystemParameterId id;
  const char* name;  // key in calibration files and on the command line
  const char* unit;
  double nominal;  // leaves the microbenchmark calibration unchanged
  double low;      // plausible range the fit is bounded to
  double high;
  const char* meaning;
};

// Every parameter, in a fixed order.
const std::vector<SystemParameterSpec>& system_parameter_specs();
const SystemParameterSpec& system_parameter(SystemParameterId id);
std::optional<SystemParameterId> parse_system_parameter(std::string_view name);
// "tensor_sustained_fraction, kernel_gap_us, ..." (for error messages).
std::string system_parameter_names();

// Values by parameter; a parameter absent from the map takes its nominal value (kernel_gap_us:
// the GPU preset's kernel_launch_us; host_us_per_kernel: its host_us_per_kernel or the measured
// default).
using SystemValues = std::map<SystemParameterId, double>;

// The parameters fitted with one source's cases left out.
struct SystemFold {
  std::string held_out_source;
  std::vector<std::string> held_out_cases;
  SystemValues values;
};

struct SystemCalibration {
  SystemValues values;                 // fitted on every case of `fitted_on`
  std::vector<std::string> fitted_on;  // case ids
  std::vector<SystemFold> folds;       // leave-one-source-out fits
  std::string note;                    // how and when the fit was made
  // The calibration file this block was taken from (`system_from`); empty when it is the
  // file's own.
  std::string borrowed_from;
  // Over fitted_on at `values`, and each case at its fold's values; absent when the fit did not
  // simulate them (`calibrate --runs --skip-verify`: `clustersim validate` does).
  std::optional<double> in_sample_mape_pct;
  std::optional<double> cross_validated_mape_pct;
  bool empty() const { return values.empty(); }
  // The fitted value of `id`; nullopt when the fit did not include it.
  std::optional<double> find(SystemParameterId id) const;
  // The fold that held `source` out, or nullptr.
  const SystemFold* fold(const std::string& source) const;
  // The values fitted without `source` (the in-sample values when no fold held it out).
  const SystemValues& values_without(const std::string& source) const;
};

}  // namespace clustersim
