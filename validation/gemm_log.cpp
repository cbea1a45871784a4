#include "validation/gemm_log.hpp"

#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "core/json_reader.hpp"

namespace clustersim::validation {

Dtype dtype_from_name(const std::string& name, bool* ok) {
  static const std::vector<std::pair<std::string, Dtype>> names = {{"fp32", Dtype::fp32},
                                                                   {"tf32", Dtype::tf32},
                                                                   {"bf16", Dtype::bf16},
                                                                   {"fp16", Dtype::fp16},
                                                                   {"fp8", Dtype::fp8}};
  for (const auto& [n, d] : names)
    if (n == name) {
      if (ok) *ok = true;
      return d;
    }
  if (ok) *ok = false;
  return Dtype::bf16;
}

GemmLog parse_gemm_log(const std::string& text, const std::string& file) {
  const JsonDocument doc = JsonDocument::parse(text, file);
  const JsonNode root = doc.root();
  root.require_object();
  root.only_keys({"format", "tool", "device", "driver_version", "cuda_runtime_version",
                  "cuda_driver_version", "cublas_version", "date", "config", "source", "notes",
                  "results"});
  const std::string format = root.string_at("format");
  if (format != "clustersim-gemm-sweep/1" && format != "clustersim-attention-sweep/1")
    root.fail_at("format", "\"" + format +
                               "\" is not a known format (clustersim-gemm-sweep/1, "
                               "clustersim-attention-sweep/1)");
  GemmLog log;
  log.file = file;
  if (const auto device = root.find("device")) {
    if (device->is_string())
      log.device = device->as_string();
    else {
      device->require_object();
      log.device = device->string_at("name");
    }
  }
  log.driver_version = root.string_or("driver_version", "");
  log.cuda_version = root.string_or("cuda_runtime_version", "");
  log.date = root.string_or("date", "");
  log.source = root.string_or("source", "");
  for (const auto& r : root.at("results").items()) {
    r.require_object();
    r.only_keys({"name", "kind", "dtype", "m", "n", "k", "batch", "gemms", "flops", "time_us",
                 "tflops", "source", "causal", "heads", "impl", "notes"});
    GemmMeasurement g;
    g.name = r.string_or("name", "");
    g.kind = r.enum_or("kind", {"gemm", "attention"}, "gemm");
    bool ok = false;
    const std::string dtype = r.string_at("dtype");
    g.dtype = dtype_from_name(dtype, &ok);
    if (!ok) r.fail_at("dtype", "\"" + dtype + "\" is not one of fp32, tf32, bf16, fp16, fp8");
    g.m = r.positive_at("m");
    g.n = r.positive_at("n");
    g.k = r.positive_at("k");
    g.batch = r.positive_or("batch", 1);
    const double gemms = r.positive_or("gemms", 1);
    g.flops = r.has("flops") ? r.positive_at("flops") : 2.0 * g.m * g.n * g.k * g.batch * gemms;
    const bool has_time = r.has("time_us");
    const bool has_tflops = r.has("tflops");
    if (!has_time && !has_tflops) r.fail("needs \"time_us\" or \"tflops\"");
    if (has_time) {
      g.time_us = r.positive_at("time_us");
      if (has_tflops) {
        // Both given: they must agree (the file may have been edited by hand).
        const double t = r.positive_at("tflops");
        const double implied = g.flops / (g.time_us * 1e-6) / 1e12;
        if (std::abs(implied - t) > 0.01 * t + 0.05)
          r.fail_at("tflops", std::to_string(t) +
                                  " disagrees with flops / time_us = " + std::to_string(implied));
      }
    } else {
      g.time_us = g.flops / (r.positive_at("tflops") * 1e12) * 1e6;
    }
    g.source = r.string_or("source", log.source);
    log.results.push_back(std::move(g));
  }
  if (log.results.empty()) root.fail_at("results", "no results");
  return log;
}

GemmLog load_gemm_log(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot open the file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_gemm_log(buffer.str(), path);
}

}  // namespace clustersim::validation
