#include "validation/compute_efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/errors.hpp"

namespace clustersim::validation {
namespace {

// One measured row with where it came from.
struct Row {
  const GemmMeasurement* m = nullptr;
  const GemmLog* log = nullptr;
  std::size_t index = 0;  // in the log's "results" array
  std::string pointer() const { return "/results/" + std::to_string(index); }
  double min_dim() const { return std::min({m->m, m->n, m->k}); }
};

std::string number(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

// "1 shape", "3 shapes".
std::string count(std::size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string shape_text(const GemmMeasurement& g) {
  std::string s = number(g.m) + "x" + number(g.n) + "x" + number(g.k);
  if (g.batch != 1) s += " (batch " + number(g.batch) + ")";
  return (g.name.empty() ? std::string() : g.name + " ") + s;
}

std::string provenance(const GemmLog& log) {
  std::string s = log.file;
  std::vector<std::string> parts;
  if (!log.device.empty()) parts.push_back(log.device);
  if (!log.date.empty()) parts.push_back("measured " + log.date);
  if (!log.cuda_version.empty()) parts.push_back("CUDA " + log.cuda_version);
  if (!log.driver_version.empty()) parts.push_back("driver " + log.driver_version);
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : " (") + parts[i];
  return parts.empty() ? s : s + ")";
}

// Files the rows came from, each once, in first-seen order.
std::string files_of(const std::vector<Row>& rows) {
  std::vector<std::string> files;
  for (const auto& r : rows)
    if (std::find(files.begin(), files.end(), r.log->file) == files.end())
      files.push_back(r.log->file);
  std::string s;
  for (std::size_t i = 0; i < files.size(); ++i) s += (i ? ", " : "") + files[i];
  return s;
}

// {"tflops", "peak_tflops", "source"} of a group of rows: total FLOPs over total time.
nlohmann::json aggregate(const std::vector<Row>& rows, double peak, const std::string& what) {
  double flops = 0, seconds = 0;
  for (const auto& r : rows) {
    flops += r.m->flops;
    seconds += r.m->time_us * 1e-6;
  }
  std::string shapes;
  constexpr std::size_t kShapesNamed = 4;
  for (std::size_t i = 0; i < rows.size() && i < kShapesNamed; ++i)
    shapes += (i ? ", " : "") + shape_text(*rows[i].m);
  if (rows.size() > kShapesNamed)
    shapes += " and " + std::to_string(rows.size() - kShapesNamed) + " more";
  const double tflops = flops / seconds / 1e12;
  return {{"tflops", tflops},
          {"peak_tflops", peak},
          {"source", what + ": " + count(rows.size(), "measured shape") + " (" + shapes +
                         "), total FLOPs / total time = " + number(tflops) + " TFLOPS, from " +
                         files_of(rows)}};
}

const char* kDtypeNames[] = {"bf16", "fp16", "fp8"};

// The measured rows by kind and dtype, each checked against its dtype's peak.
struct MeasuredRows {
  std::map<std::string, std::vector<Row>> gemm, attention;
  std::vector<std::string> devices;  // first-seen order

  std::string device() const {
    return devices.empty() ? std::string("(device not stated)") : devices.front();
  }
};

MeasuredRows measured_rows(const ComputeEfficiencyInputs& in) {
  MeasuredRows out;
  for (const auto& log : in.logs) {
    if (!log.device.empty() &&
        std::find(out.devices.begin(), out.devices.end(), log.device) == out.devices.end())
      out.devices.push_back(log.device);
    for (std::size_t i = 0; i < log.results.size(); ++i) {
      const Row row{&log.results[i], &log, i};
      const std::string dtype = to_string(row.m->dtype);
      const bool emitted =
          std::find(std::begin(kDtypeNames), std::end(kDtypeNames), dtype) != std::end(kDtypeNames);
      if (!emitted) continue;  // fp32/tf32: compute_cost has no curve for them
      const auto peak = in.peaks_tflops.find(row.m->dtype);
      if (peak == in.peaks_tflops.end())
        throw ConfigError(log.file, row.pointer() + "/dtype",
                          "no dense peak known for " + dtype +
                              ": give --gpu NAME or --peak-tflops " + dtype + "=TFLOPS");
      const double tflops = row.m->tflops();
      if (tflops > peak->second)
        throw ConfigError(log.file, row.pointer(),
                          "measured " + number(tflops) + " TFLOPS exceeds the " + dtype +
                              " dense peak " + number(peak->second) + " TFLOPS");
      (row.m->kind == "attention" ? out.attention : out.gemm)[dtype].push_back(row);
    }
  }
  return out;
}

// A section of the base file, for what the measurements do not cover.
const nlohmann::json& base_section(const ComputeEfficiencyInputs& in, const std::string& key) {
  if (!in.base.is_object() || !in.base.contains(key))
    throw ConfigError(in.base_file, "/" + key,
                      "the base file has no \"" + key +
                          "\" section for what the measurements "
                          "do not cover");
  return in.base.at(key);
}

// Points of a curve: the rows grouped by `axis` (ascending; std::map keeps the order
// deterministic), each group aggregated, with the axis value under `key`.
template <typename Axis>
nlohmann::json grouped_points(const std::vector<Row>& rows, double peak, Axis axis,
                              const std::string& key, const std::string& what) {
  std::map<double, std::vector<Row>> groups;
  for (const auto& r : rows) groups[axis(r)].push_back(r);
  nlohmann::json points = nlohmann::json::array();
  for (const auto& [value, group] : groups) {
    nlohmann::json p = aggregate(group, peak, what + number(value));
    p[key] = value;
    points.push_back(p);
  }
  return points;
}

// One GEMM curve per emitted dtype: measured, else the base file's.
void add_gemm_curves(ComputeEfficiencyResult& result, const ComputeEfficiencyInputs& in,
                     const MeasuredRows& measured) {
  nlohmann::json& doc = result.document;
  doc["gemm"] = nlohmann::json::object();
  for (const char* dtype : kDtypeNames) {
    const auto it = measured.gemm.find(dtype);
    if (it == measured.gemm.end()) {
      const nlohmann::json& g = base_section(in, "gemm");
      if (g.contains(dtype)) {
        doc["gemm"][dtype] = g.at(dtype);
        result.kept_parts.push_back(std::string("gemm/") + dtype);
      }
      continue;
    }
    const std::vector<Row>& rows = it->second;
    const double peak = in.peaks_tflops.at(rows.front().m->dtype);
    const nlohmann::json points = grouped_points(
        rows, peak, [](const Row& r) { return r.min_dim(); }, "min_dim", "min(m, n, k) = ");
    const Row* best = &rows.front();
    for (const auto& r : rows)
      if (r.m->tflops() > best->m->tflops()) best = &r;
    nlohmann::json curve;
    curve["series"] = std::string(dtype) + " GEMMs measured on " + measured.device() +
                      ", grouped by min(m, n, k); written by clustersim calibrate --compute-out";
    // Cubes alone stand for GEMMs of as many multiply-adds (models/compute_cost.hpp).
    const bool cubes = std::all_of(rows.begin(), rows.end(), [](const Row& r) {
      return r.m->m == r.m->n && r.m->n == r.m->k;
    });
    if (cubes) curve["read_at"] = "cube_side";
    curve["best_shape"] = aggregate({*best}, peak, "fastest measured shape");
    curve["points"] = points;
    doc["gemm"][dtype] = curve;
    result.measured_parts.push_back(std::string("gemm/") + dtype + " (" +
                                    count(rows.size(), "shape") + ", " +
                                    count(points.size(), "point") + ")");
  }
}

// The attention curves (bf16, fp16) when measured, else the base file's.
void add_attention(ComputeEfficiencyResult& result, const ComputeEfficiencyInputs& in,
                   const MeasuredRows& measured) {
  nlohmann::json& doc = result.document;
  const auto& attention_rows = measured.attention;
  if (!attention_rows.count("bf16") && !attention_rows.count("fp16")) {
    doc["attention"] = base_section(in, "attention");
    result.kept_parts.push_back("attention");
    return;
  }
  std::vector<Row> all;
  for (const auto& entry : attention_rows)
    all.insert(all.end(), entry.second.begin(), entry.second.end());
  doc["attention"] = {{"kernel", "as measured in " + files_of(all)}};
  for (const auto& [dtype, rows] : attention_rows) {
    if (dtype != "bf16" && dtype != "fp16") continue;
    // Grouped by sequence length (m = n for attention rows), ascending: the axis of the
    // attention curve in compute_cost.
    const double peak = in.peaks_tflops.at(rows.front().m->dtype);
    const nlohmann::json points = grouped_points(
        rows, peak, [](const Row& r) { return r.m->m; }, "seq_len",
        "attention, " + dtype + ", sequence length ");
    doc["attention"][dtype] = {
        {"series", dtype + " attention measured on " + measured.device() +
                       ", grouped by sequence length; written by clustersim calibrate "
                       "--compute-out"},
        {"points", points}};
    result.measured_parts.push_back("attention/" + dtype + " (" + count(rows.size(), "shape") +
                                    ", " + count(points.size(), "point") + ")");
  }
  if (!doc["attention"].contains("bf16")) {
    // compute_cost needs the bf16 figure; FP16 and BF16 share the tensor-core rate on Hopper
    // and Ampere (NVIDIA H100 and A100 datasheets), so an fp16-only measurement stands for it.
    doc["attention"]["bf16"] = doc["attention"]["fp16"];
    result.measured_parts.push_back("attention/bf16 (the fp16 measurement: same peak)");
  }
}

std::string description(const ComputeEfficiencyResult& result, const ComputeEfficiencyInputs& in) {
  std::string d =
      "Achieved fraction of dense peak for the kernels of a Transformer layer, read by "
      "models/compute_cost.hpp, written by clustersim calibrate --compute-out";
  if (!in.created.empty()) d += " on " + in.created;
  d += ". Measured: ";
  for (std::size_t i = 0; i < result.measured_parts.size(); ++i)
    d += (i ? ", " : "") + result.measured_parts[i];
  d += ", from ";
  for (std::size_t i = 0; i < in.logs.size(); ++i) d += (i ? "; " : "") + provenance(in.logs[i]);
  d += ". Efficiency = total FLOPs / total time / dense peak per smallest GEMM "
       "dimension; piecewise-linear in log2 of it, clamped at both ends, capped by the "
       "fastest shape.";
  if (!result.kept_parts.empty()) {
    d += " Copied from " + in.base_file + ": ";
    for (std::size_t i = 0; i < result.kept_parts.size(); ++i)
      d += (i ? ", " : "") + result.kept_parts[i];
    d += ".";
  }
  return d;
}

}  // namespace

ComputeEfficiencyResult compute_efficiency_from_gemm(const ComputeEfficiencyInputs& in) {
  const MeasuredRows measured = measured_rows(in);
  ComputeEfficiencyResult result;
  add_gemm_curves(result, in, measured);
  add_attention(result, in, measured);
  // HBM efficiency: GEMM sweeps do not measure it.
  nlohmann::json& doc = result.document;
  doc["memory"] = base_section(in, "memory");
  result.kept_parts.push_back("memory");
  doc["description"] = description(result, in);
  if (!doc["gemm"].contains("bf16") || !doc["gemm"].contains("fp8"))
    throw ConfigError(in.base_file, "/gemm",
                      "compute_cost needs bf16 and fp8 GEMM curves: neither the measurements nor "
                      "the base file give " +
                          std::string(doc["gemm"].contains("bf16") ? "fp8" : "bf16"));
  return result;
}

}  // namespace clustersim::validation
