// PassBuilder's FP8 operands: the quantization of each 16-bit GEMM input by the scenario's
// scaling recipe (training.fp8_recipe) and, under MXFP8, the rearrangement of the block scales
// before every GEMM and the block-scaled kernels' own rate (workload/kernel_traffic.hpp;
// docs/mxfp8.md).
#include <algorithm>

#include "workload/kernel_traffic.hpp"
#include "workload/pass_builder.hpp"

namespace clustersim::workload {

using namespace kernel_traffic;
using models::GemmShape;
using models::OpCost;

bool PassBuilder::mxfp8() const {
  return d_.precision == Dtype::fp8 && s_.training.fp8_recipe == Fp8Recipe::mxfp8;
}

bool PassBuilder::fp8_any_layout() const {
  return s_.cluster.gpu.architecture == GpuArch::blackwell;
}

bool PassBuilder::fp8_gradient_gathered() const {
  return gathered_gradient_dtype() == Dtype::fp8;
}

// Per-tensor recipes: the cast (with its transpose where the GEMMs need one), or for an operand
// sequence parallelism gathers, the row-wise cast of this rank's shard and the transpose of the
// gathered operand (kernel_traffic.hpp kFp8TransposeBytes). Current scaling adds the amax pass
// over what is cast. MXFP8 quantizes the whole operand as before (Transformer Engine quantizes an
// MXFP8 shard in its norm and gathers one usage at a time, which is not followed).
OpCost PassBuilder::fp8_cast(double elements, bool after_norm, bool gathered) const {
  if (d_.precision != Dtype::fp8) return {};
  if (mxfp8()) return c_.memory_op(kMxfp8QuantizeBytes * elements);
  const bool shard = gathered && d_.sp && d_.t > 1;
  const double cast = shard ? elements / d_.t : elements;
  OpCost c =
      c_.memory_op((fp8_any_layout() || shard ? kFp8CastBytes : kFp8CastTransposeBytes) * cast);
  if (shard && !fp8_any_layout()) c += c_.memory_op(kFp8TransposeBytes * elements);
  if (s_.training.fp8_recipe == Fp8Recipe::current) {
    // Only Transformer Engine's norms (fused kernels) take the amax as they write; PyTorch's
    // norm (torchtitan's RMSNorm, eager or compiled) leaves it to a pass of its own.
    if (after_norm && s_.training.kernel_fusion == KernelFusion::fused) {
      c += c_.launches(kCurrentScalingAfterNormKernels);
    } else {
      c += c_.memory_op(kCurrentScalingAmaxBytes * cast);
      c += c_.launches(kCurrentScalingSmallKernels);
    }
  }
  return c;
}

// Under MXFP8 a GEMM (or a grouped GEMM of `count` products) of shape g first swizzles the scales
// of its m x k and k x n operands: one kernel per operand.
OpCost PassBuilder::mxfp8_swizzle(const GemmShape& g, double count) const {
  if (!mxfp8()) return {};
  OpCost c = c_.memory_op(kMxfp8SwizzleBytes * g.m * g.k * count);
  c += c_.memory_op(kMxfp8SwizzleBytes * g.k * g.n * count);
  return c;
}

// A GEMM's cost with its compute time stretched by kMxfp8GemmTimeRatio under MXFP8.
OpCost PassBuilder::block_scaled(OpCost gemm) const {
  if (!mxfp8()) return gemm;
  const double before = std::max(gemm.compute_s, gemm.memory_s);
  gemm.compute_s *= kMxfp8GemmTimeRatio;
  gemm.time_s += std::max(gemm.compute_s, gemm.memory_s) - before;
  return gemm;
}

OpCost PassBuilder::linear_gemm(const GemmShape& g) const {
  OpCost c = mxfp8_swizzle(g);
  c += block_scaled(c_.gemm(g, d_.precision));
  return c;
}

}  // namespace clustersim::workload
