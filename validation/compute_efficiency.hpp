// From measured GEMM (and attention) timings to the compute-efficiency file the step simulator
// reads (validation/data/compute_efficiency.json, format of models/compute_cost.hpp), so that a
// user's own measurement can replace the published defaults:
//
//   clustersim calibrate --gemm sweep.json --gpu h100-sxm --compute-out my_efficiency.json
//   (then StepOptions::compute_calibration / the scenario's compute calibration = that file)
//
// What is written, per dtype with GEMM rows (bf16, fp16, fp8):
//   points      one per distinct smallest dimension min(m, n, k) among the measured shapes,
//               in increasing order; its efficiency is the group's total FLOPs over its total
//               time, over the dense peak: sum(flops) / sum(time) / peak. With one shape per
//               smallest dimension that is that shape's own FLOP/s; with several it weights
//               each shape by its time, the way a training step spends it.
//   best_shape  the single fastest measured shape (the ceiling compute_cost applies).
// Attention rows (kind "attention", bf16/fp16) give the attention figure the same way.
// Everything the measurements do not cover (other dtypes, attention without attention rows,
// the HBM efficiency, which GEMM sweeps do not measure) is copied from a base file, normally
// the shipped defaults, and the description says which parts came from where.
//
// Efficiency = FLOPs / (peak x measured time): the measured time is the kernel's, as
// validation/microbench/gemm_sweep measures it (back-to-back launches averaged over events), and
// compute_cost adds the GPU's kernel launch overhead on top.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/scenario.hpp"
#include "validation/gemm_log.hpp"

namespace clustersim::validation {

struct ComputeEfficiencyInputs {
  std::vector<GemmLog> logs;
  std::map<Dtype, double> peaks_tflops;  // dense peak per dtype, TFLOP/s
  nlohmann::json base;                   // a compute_efficiency.json document
  std::string base_file;                 // where `base` came from (cited in the output)
  std::string created;                   // recorded in the description
};

struct ComputeEfficiencyResult {
  nlohmann::json document;                  // the file to write
  std::vector<std::string> measured_parts;  // e.g. "gemm/bf16 (12 shapes, 5 points)"
  std::vector<std::string> kept_parts;      // copied from the base file, e.g. "memory"
};

// Builds the document. Throws ConfigError naming the log file and JSON pointer when a measured
// row has no known peak for its dtype or exceeds the peak, and when `base` lacks a section the
// measurements do not replace.
ComputeEfficiencyResult compute_efficiency_from_gemm(const ComputeEfficiencyInputs& inputs);

}  // namespace clustersim::validation
