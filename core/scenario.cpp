#include "core/scenario.hpp"

#include <stdexcept>

namespace clustersim {

const char* to_string(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp8: return "fp8";
  }
  return "?";
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
  switch (k) {
    case FfnKind::gelu: return "gelu";
    case FfnKind::swiglu: return "swiglu";
    case FfnKind::squared_relu: return "squared_relu";
  }
  return "?";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

const char* to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::one_f_one_b: return "1f1b";
    case PipelineSchedule::interleaved: return "interleaved";
    case PipelineSchedule::gpipe: return "gpipe";
  }
  return "?";
}

const char* to_string(Compression c) {
  return c == Compression::none ? "none" : "onebit_adam";
}

const char* to_string(AttentionKernel k) {
  return k == AttentionKernel::flash ? "flash" : "unfused";
}

double GpuSpec::peak(Dtype d) const {
  const auto it = peak_flops.find(d);
  if (it == peak_flops.end()) {
    throw std::out_of_range("GPU " + name + " has no " + to_string(d) + " peak");
  }
  return it->second;
}

}  // namespace clustersim
