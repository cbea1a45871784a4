// Time of one GPU kernel: a roofline with measured efficiencies.
//
//   time = max(FLOPs / (peak(dtype) x efficiency(shape)), bytes / (HBM bandwidth x hbm_eff))
//          + kernel launch overhead
//
// Efficiencies come from a calibration file (validation/data/compute_efficiency.json) whose
// every point is a kernel microbenchmark (GEMM and attention; published, or measured on a GPU
// with validation/microbench), never a training MFU. GEMM efficiency is piecewise-linear in
// log2 of the smallest GEMM dimension, clamped to the first and last calibration points and
// capped by the best-shape efficiency. No SimGrid here.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "core/scenario.hpp"

namespace clustersim::models {

// C[m x n] = A[m x k] * B[k x n]; dimensions in elements.
struct GemmShape {
  double m = 0;
  double n = 0;
  double k = 0;
  double flops() const { return 2.0 * m * n * k; }  // one multiply-add = 2 FLOPs
  double min_dim() const;
  // Side of the cube m = n = k with as many multiply-adds: (m n k)^(1/3).
  double cube_side() const;
};

struct EfficiencyPoint {
  double min_dim = 0;     // smallest GEMM dimension of the benchmark, elements
  double efficiency = 0;  // achieved / dense peak, in (0, 1]
  std::string source;
};

// Which size of a GEMM a curve is read at; the calibration file's "read_at" says it, for how its
// points were measured. A series of large M = N by K is read at the smallest dimension (the
// default). A series of cubes m = n = k is read at the side of the cube with as many
// multiply-adds: read at the smallest dimension, a cube stands for GEMMs whose other two sides
// are far larger. On XLA's measured H100 table the cubes so read predict the non-cube shapes with
// every side at least 1024 45 % too slow, at the equal-work side within 3.7 %
// (docs/microbenchmarks.md#reading-a-gemm-curve).
enum class GemmCurveAxis { smallest_dimension, cube_side };
inline const NameTable<GemmCurveAxis> kGemmCurveAxisNames = {
    {GemmCurveAxis::smallest_dimension, "smallest_dimension"},
    {GemmCurveAxis::cube_side, "cube_side"}};

// What a calibration's HBM bandwidth (`memory.hbm_efficiency.measured`) was measured on.
enum class HbmMeasurement { stream_copy, element_wise_kernel };
inline const NameTable<HbmMeasurement> kHbmMeasurementNames = {
    {HbmMeasurement::stream_copy, "stream_copy"},
    {HbmMeasurement::element_wise_kernel, "element_wise_kernel"}};

// Who wrote a memory-bound kernel, which sets the share of the calibration's HBM rate it
// reaches (docs/system-calibration.md#whose-kernels).
enum class KernelSource {
  // A training framework's fused kernels (Transformer Engine, Apex, Megatron-LM's, DeepSpeed's,
  // torch.compile's): the calibration's measured share of the stream copy's rate
  // (memory.element_wise), else the fitted elementwise_hbm_fraction of it.
  framework,
  // PyTorch's own eager kernels: copies, fills and TensorIterator arithmetic (add, mul, casts,
  // pow, row reductions). The stream copy's rate (kPyTorchElementwiseOverCopy).
  pytorch,
};

// PyTorch's element-wise kernels against a stream copy on the same GPU: torch.add(x, y, out=z)
// moved 4.373 TB/s where z.copy_(x) moved 4.177 (H200 SXM, PyTorch 2.11, 1 GiB BF16 operands;
// validation/data/h200-2026-12-04/torch-probe-1.json `hbm`): 1.05, taken as 1.0, the copy's
// rate being the calibration's HBM ceiling. Its other kernels (casts, pow, reductions) are
// taken at the same rate, not measured one by one. Dimensionless.
inline constexpr double kPyTorchElementwiseOverCopy = 1.0;

// Time per kernel of a step replayed from a CUDA graph (training.cuda_graphs), seconds, in
// place of the per-kernel gap of kernels issued one by one: an H200 replays a graph of tiny
// kernels at 0.834 us per kernel, against 6.8 us per op issued by eager PyTorch
// (validation/data/h200-2026-12-04/torch-probe-1.json `launch`: graph_tiny_op_us,
// eager_tiny_op_us; PyTorch 2.11, CUDA 13.0). A kernel that does almost nothing, so it bounds the
// launch cost inside a graph from above. Measured on Hopper; taken for Blackwell too, for which
// no figure is at hand.
inline constexpr double kCudaGraphKernelS = 0.834e-6;

// Host time to issue one kernel from a Python training loop, seconds: an eager PyTorch
// Transformer block (hidden 2048, 2048 tokens, RMSNorm, fused QKV, RoPE, SDPA, SwiGLU; forward
// and backward through autograd, 8 layers) issued 699 kernels in a 15.92 ms span on an H200 while
// the GPU was busy 9.06 ms of it (validation/data/h200-2026-12-04/torch-probe-2.json
// `layer.small_h2048_seq2048`): the host, not the GPU, set the pace, at 15.92 ms / 699 = 22.8 us
// per kernel. The same block at hidden 4096 and 8192 tokens kept the GPU busy (395 kernels in
// 84.4 ms). One measurement, of PyTorch's own modules; taken for the frameworks built on it
// (Megatron-LM, Transformer Engine, DeepSpeed, torchtitan), whose Python per kernel differs.
inline constexpr double kHostPerKernelS = 22.8e-6;

// Efficiency of one dtype's GEMMs as a function of one size of the GEMM (`axis`).
struct GemmEfficiencyCurve {
  std::string series;                   // what was measured
  double best_shape_efficiency = 1;     // ceiling: the best shape measured on this dtype
  std::vector<EfficiencyPoint> points;  // strictly increasing min_dim, at least one
  GemmCurveAxis axis = GemmCurveAxis::smallest_dimension;
  // Piecewise-linear in log2(min_dim), clamped at both ends, capped by best_shape_efficiency.
  double at(double min_dim) const;
  // at() of the shape's size on this curve's axis.
  double of(const GemmShape& shape) const;
};

// Efficiency of the attention kernel as a function of the sequence length of one call
// (benchmarks such as FlashAttention-3's Figures 5-6 sweep it at a fixed number of tokens).
struct AttentionEfficiencyPoint {
  double seq_len = 0;     // tokens per sequence of the benchmark
  double efficiency = 0;  // achieved / dense peak, in (0, 1]
  std::string source;
};
struct AttentionEfficiencyCurve {
  std::vector<AttentionEfficiencyPoint> points;  // strictly increasing seq_len, at least one
  // Piecewise-linear in log2(seq_len), clamped at both ends; one point is a constant.
  double at(double seq_len) const;
};

// One fused attention kernel's figures.
struct AttentionFigures {
  std::string kernel;                                 // e.g. "cuDNN fused attention, ..."
  std::map<Dtype, AttentionEfficiencyCurve> forward;  // bf16, fp16 (fp8 runs bf16)
  // Backward kernel, when measured separately (FLOPs counted as 2.5x the forward's); absent:
  // the forward efficiency (e.g. a combined forward + backward benchmark).
  std::map<Dtype, AttentionEfficiencyCurve> backward;
};

struct ComputeCalibration {
  std::string file;                           // where it was loaded from
  std::map<Dtype, GemmEfficiencyCurve> gemm;  // bf16, fp16, fp8
  // The attention kernel a step uses: the calibration's own fused kernel (attention."kernel",
  // a scenario's "flash"), or one of other_attention once select_attention_kernel chose it.
  AttentionFigures attention;
  // Other fused kernels of the same figures (attention.other_kernels), by the name a scenario's
  // training.attention gives them ("flash2", "flash3").
  std::map<std::string, AttentionFigures> other_attention;
  double hbm_efficiency = 1;  // achieved / peak HBM bandwidth
  // What measured it: a stream copy, which the fitted elementwise_hbm_fraction scales down to
  // the framework's element-wise kernels, or one such kernel, which it does not.
  HbmMeasurement hbm_measured = HbmMeasurement::stream_copy;
  // The framework's element-wise kernels' rate over that stream copy's, where it was measured
  // (memory.element_wise); it then stands in for the fitted elementwise_hbm_fraction.
  std::optional<double> element_wise_share;
  // Parameters fitted to end-to-end runs (`system` block; empty = nominal, no fit).
  SystemCalibration system;
};

// Reads a calibration file. Throws ConfigError naming the file and JSON pointer on missing
// keys, unknown keys, efficiencies outside (0, 1] or points out of order.
ComputeCalibration load_compute_calibration(const std::string& path);
ComputeCalibration load_compute_calibration(const JsonDocument& document);
// Makes `kernel` (a training.attention name) the kernel cal.attention describes: "flash" keeps
// the calibration's own; another name takes its other_attention figures. False when the
// calibration has no figures for it (nothing changed).
bool select_attention_kernel(ComputeCalibration& cal, const std::string& kernel);
// data_root()/validation/data/compute_efficiency.json (H100/H800 microbenchmarks)
std::string default_compute_calibration_path();
// The calibration of `gpu`: its preset's compute_calibration, else the default.
std::string compute_calibration_path(const GpuSpec& gpu);

// One line for `run` and `check`: the system parameters in force on this GPU and whether they
// were fitted ("tensor_sustained_fraction 0.912, kernel_gap_us 6.3 (fitted to 35 runs, ...)"),
// or "nominal (no fit)" when the calibration has none.
std::string describe_system_parameters(const GpuSpec& gpu, const ComputeCalibration& calibration);
// How a step replayed from a CUDA graph launches its kernels, for run and check.
std::string describe_cuda_graph_launch();
// Host time to issue one kernel on `gpu`: its preset's host_us_per_kernel, else kHostPerKernelS.
double host_per_kernel_s(const GpuSpec& gpu);

// Cost of one kernel, seconds, with its parts.
struct OpCost {
  double time_s = 0;     // max(compute_s, memory_s) + launch_s
  double compute_s = 0;  // FLOPs / achieved FLOP/s
  double memory_s = 0;   // bytes / achieved HBM bandwidth
  double launch_s = 0;   // idle time between kernels: kernels x the per-kernel gap
  double host_s = 0;     // of launch_s, measured CPU time with the GPU idle (a host loop, a
                         // driver call): neither a slowed GPU nor NCCL's SMs stretch it
  double kernels = 0;    // kernel launches
  double flops = 0;
  double bytes = 0;
  bool memory_bound() const { return memory_s > compute_s; }
  OpCost& operator+=(const OpCost& other);
  OpCost& operator-=(const OpCost& other);
};

class ComputeCostModel {
 public:
  // Throws std::invalid_argument when the GPU lacks a peak or HBM bandwidth the model needs.
  ComputeCostModel(GpuSpec gpu, ComputeCalibration calibration);

  const GpuSpec& gpu() const { return gpu_; }
  const ComputeCalibration& calibration() const { return calibration_; }

  // Efficiency of a GEMM of this shape in `dtype` (bf16, fp16 or fp8); throws
  // std::invalid_argument for a dtype the calibration does not cover.
  double gemm_efficiency(const GemmShape& shape, Dtype dtype) const;
  // Efficiency of the attention kernel on sequences of seq_len tokens; fp8 maps to bf16
  // (attention stays in BF16).
  double attention_efficiency(Dtype dtype, double seq_len) const;
  // Efficiency of its backward kernel (the forward's when the calibration has none).
  double attention_backward_efficiency(Dtype dtype, double seq_len) const;
  // The dtype attention runs in for a given training precision.
  static Dtype attention_dtype(Dtype training_precision);
  // Achieved HBM bandwidth of element-wise kernels by `source`, bytes/s.
  double hbm_Bps(KernelSource source = KernelSource::framework) const;
  // Idle time per kernel on the compute stream, seconds: the fitted kernel_gap_us when the
  // system calibration (or the GPU's override) has one, else the GPU preset's kernel_launch_us.
  double kernel_gap_s() const { return kernel_gap_s_; }
  // Sustained fraction of the microbenchmark tensor-core rate (1 without a fit).
  double tensor_sustained_fraction() const { return tensor_fraction_; }
  // The same GPU with every kernel replayed from a CUDA graph: kCudaGraphKernelS per kernel
  // instead of the gap between queued kernels, and no host dispatch (host_per_kernel_s 0).
  ComputeCostModel replayed_from_cuda_graph() const;
  // Host time to issue one kernel: the GPU preset's host_us_per_kernel, else kHostPerKernelS;
  // 0 for a step replayed from a CUDA graph.
  double host_per_kernel_s() const { return host_per_kernel_s_; }

  // Time of `kernels` launches with no work (e.g. host-bound copy loops).
  OpCost launches(double kernels) const;
  // A GEMM: inputs in `dtype`, output in bf16 for fp8 (Transformer Engine) else in `dtype`.
  // `count` identical GEMMs, each paying its own launch.
  OpCost gemm(const GemmShape& shape, Dtype dtype, double count = 1) const;
  // The attention kernel executing `flops` (already halved for a causal mask by the caller)
  // and moving `bytes` through HBM, on sequences of seq_len tokens per call.
  OpCost attention(double flops, double bytes, Dtype dtype, double seq_len) const;
  // Its backward kernel executing `flops` and moving `bytes`.
  OpCost attention_backward(double flops, double bytes, Dtype dtype, double seq_len) const;
  // One batched GEMM kernel (cuBLAS strided batched): `batch` products of `shape`, one launch;
  // efficiency as for a single product of that shape.
  OpCost batched_gemm(const GemmShape& shape, Dtype dtype, double batch) const;
  // A memory-bound kernel (norm, activation, residual, optimizer update) moving `bytes`, at the
  // HBM rate of kernels from `source`.
  OpCost memory_op(double bytes, double flops = 0,
                   KernelSource source = KernelSource::framework) const;
  // One of PyTorch's own eager kernels moving `bytes` (KernelSource::pytorch).
  OpCost pytorch_op(double bytes) const { return memory_op(bytes, 0, KernelSource::pytorch); }
  // General roofline: `flops` at `flops_per_s` achieved, `bytes` at the achieved HBM rate.
  OpCost roofline(double flops, double flops_per_s, double bytes) const;

 private:
  // roofline() with `bytes` moved at `hbm_Bps`.
  OpCost roofline(double flops, double flops_per_s, double bytes, double hbm_Bps) const;
  GpuSpec gpu_;
  ComputeCalibration calibration_;
  double tensor_fraction_ = 1;
  double elementwise_fraction_ = 1;
  double kernel_gap_s_ = 0;
  double host_per_kernel_s_ = 0;
};

}  // namespace clustersim::models
