#include "core/scenario.hpp"

#include <stdexcept>

namespace clustersim {

const char* to_string(Dtype d) {
  return kDtypeNames.name(d);
}

double bytes_per_element(Dtype d) {
  switch (d) {
    case Dtype::fp32:
    case Dtype::tf32: return 4;
    case Dtype::bf16:
    case Dtype::fp16: return 2;
    case Dtype::fp8: return 1;
  }
  return 0;
}

const char* to_string(FfnKind k) {
  return kFfnNames.name(k);
}

const char* to_string(Recompute r) {
  return kRecomputeNames.name(r);
}

const char* to_string(PipelineSchedule s) {
  return kScheduleNames.name(s);
}

const char* to_string(Compression c) {
  return kCompressionNames.name(c);
}

const char* to_string(AttentionKernel k) {
  return kAttentionNames.name(k);
}

const char* to_string(KernelFusion f) {
  return kKernelFusionNames.name(f);
}

const char* to_string(CudaGraphs g) {
  return kCudaGraphsNames.name(g);
}

const char* to_string(Fp8Recipe r) {
  return kFp8RecipeNames.name(r);
}

const char* to_string(CrossEntropy c) {
  return kCrossEntropyNames.name(c);
}

const char* to_string(GradAccumulation g) {
  return kGradAccumulationNames.name(g);
}

const char* to_string(OptimizerKernels k) {
  return kOptimizerKernelsNames.name(k);
}

const char* to_string(MoeDispatcher d) {
  return kMoeDispatcherNames.name(d);
}

const char* to_string(MoeExpertGemm g) {
  return kMoeExpertGemmNames.name(g);
}

const char* to_string(FabricKind k) {
  return kFabricNames.name(k);
}

const char* to_string(Zero3Implementation z) {
  return kZero3ImplementationNames.name(z);
}

const char* to_string(TpOverlapImplementation t) {
  return kTpOverlapImplementationNames.name(t);
}

const char* to_string(CpImplementation c) {
  return kCpImplementationNames.name(c);
}

double GpuSpec::peak(Dtype d) const {
  const auto it = peak_flops.find(d);
  if (it == peak_flops.end()) {
    throw std::out_of_range("GPU " + name + " has no " + to_string(d) + " peak");
  }
  return it->second;
}

}  // namespace clustersim
