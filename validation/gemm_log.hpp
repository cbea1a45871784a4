// Reading the JSON that validation/microbench/gemm_sweep and attention_sweep write (and the
// published GEMM figures transcribed into the same format under validation/data/gemm/).
//
// Format "clustersim-gemm-sweep/1":
//   {"format": "clustersim-gemm-sweep/1",
//    "device": {"name": "NVIDIA H100 80GB HBM3", ...},       (optional extra keys kept as text)
//    "driver_version": "535.104.05", "cuda_runtime_version": "12.2", "date": "2025-...",
//    "config": {...},                                           (how the shapes were chosen)
//    "source": "citation, for transcriptions",                  (optional)
//    "results": [{"name": "qkv_fwd", "kind": "gemm"|"attention", "dtype": "bf16"|"fp8"|...,
//                 "m", "n", "k", "batch" (default 1), "time_us" and/or "tflops",
//                 "source" (optional, per point)}]}
// For attention rows m = n = sequence length, k = head dim, batch = micro-batch × heads; FLOPs
// are given by "flops" when the row carries them (causal masking halves them), else 2·m·n·k·batch
// per GEMM as the row's "gemms" (default 1) says.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/scenario.hpp"

namespace clustersim::validation {

struct GemmMeasurement {
  std::string name;
  std::string kind = "gemm";  // "gemm" or "attention"
  Dtype dtype = Dtype::bf16;
  double m = 0, n = 0, k = 0, batch = 1;
  double flops = 0;    // FLOPs of one timed call
  double time_us = 0;  // one call
  std::string source;  // citation of a transcribed point
  double tflops() const { return flops / (time_us * 1e-6) / 1e12; }
  // Bytes a GEMM must move at least once: A, B and C, each element `element_bytes` wide.
  double min_bytes(double element_bytes) const {
    return batch * (m * k + k * n + m * n) * element_bytes;
  }
};

struct GemmLog {
  std::string file;
  std::string device;
  std::string driver_version;
  std::string cuda_version;
  std::string date;
  std::string source;
  std::vector<GemmMeasurement> results;
};

// Parses one file; throws ConfigError naming the file and JSON pointer.
GemmLog parse_gemm_log(const std::string& text, const std::string& file);
GemmLog load_gemm_log(const std::string& path);

// Dtype names as the files spell them ("bf16", "fp8", "fp16", "tf32", "fp32").
Dtype dtype_from_name(const std::string& name, bool* ok);

}  // namespace clustersim::validation
