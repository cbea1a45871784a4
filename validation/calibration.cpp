#include "validation/calibration.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/errors.hpp"

namespace clustersim::validation {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Relative residual below which differences are treated as measurement noise when choosing the
// number of regimes: nccl-tests prints times with 3–4 significant digits (util.cu getFloatStr),
// and repeated runs of one size differ by more than that. Without a floor the information
// criterion would split a clean line into segments that only fit rounding noise.
constexpr double kRelativeNoiseFloor = 0.005;
// µs per (byte / (GB/s)): S bytes at B GB/s take S / (B·1e9) s = S / (B·1e3) µs.
constexpr double kBytesPerGBpsToUs = 1e-3;

// Solves min Σ ((A p)_i − 1)² for the columns in `use` (others fixed at 0); rows are already
// divided by the measured value, so the residuals are relative.
Eigen::VectorXd solve_relative(const Eigen::MatrixXd& a, const std::vector<int>& use) {
  Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(use.size()));
  for (std::size_t j = 0; j < use.size(); ++j)
    sub.col(static_cast<Eigen::Index>(j)) = a.col(use[j]);
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(a.rows());
  const Eigen::VectorXd x = sub.colPivHouseholderQr().solve(ones);
  Eigen::VectorXd p = Eigen::VectorXd::Zero(a.cols());
  for (std::size_t j = 0; j < use.size(); ++j) p(use[j]) = x(static_cast<Eigen::Index>(j));
  return p;
}

// Non-negative relative least squares by trying every subset of columns (there are at most
// three), keeping the best fit whose coefficients are all >= 0.
Eigen::VectorXd solve_relative_nonneg(const Eigen::MatrixXd& a) {
  const int cols = static_cast<int>(a.cols());
  Eigen::VectorXd best = Eigen::VectorXd::Zero(cols);
  double best_sse = kInf;
  for (int mask = 1; mask < (1 << cols); ++mask) {
    std::vector<int> use;
    for (int j = 0; j < cols; ++j)
      if (mask & (1 << j)) use.push_back(j);
    if (static_cast<Eigen::Index>(use.size()) > a.rows()) continue;
    const Eigen::VectorXd p = solve_relative(a, use);
    if ((p.array() < 0).any() || !p.allFinite()) continue;
    const double sse = (a * p - Eigen::VectorXd::Ones(a.rows())).squaredNorm();
    if (sse < best_sse * (1 - 1e-12)) {
      best_sse = sse;
      best = p;
    }
  }
  return best;
}

double r_squared(const std::vector<double>& measured, const std::vector<double>& fitted) {
  if (measured.size() < 2) return 1.0;
  double mean = 0;
  for (double v : measured) mean += v;
  mean /= static_cast<double>(measured.size());
  double ss_tot = 0, ss_res = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    ss_tot += (measured[i] - mean) * (measured[i] - mean);
    ss_res += (measured[i] - fitted[i]) * (measured[i] - fitted[i]);
  }
  return ss_tot > 0 ? 1.0 - ss_res / ss_tot : (ss_res == 0 ? 1.0 : 0.0);
}

double relative_sse(const std::vector<SizeTime>& pts, std::size_t from, std::size_t to,
                    const AlphaBetaFit& fit, double factor) {
  double sse = 0;
  for (std::size_t i = from; i < to; ++i) {
    const double r = fit.time_us(pts[i].size_bytes, factor) / pts[i].time_us - 1.0;
    sse += r * r;
  }
  return sse;
}

std::vector<Residual> worst_of(std::vector<Residual> all, std::size_t keep) {
  std::stable_sort(all.begin(), all.end(), [](const Residual& a, const Residual& b) {
    return std::fabs(a.relative()) > std::fabs(b.relative());
  });
  if (all.size() > keep) all.resize(keep);
  return all;
}

std::string join_unique(const std::vector<std::string>& values) {
  std::vector<std::string> seen;
  for (const auto& v : values)
    if (!v.empty() && std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
  std::string out;
  for (const auto& v : seen) out += (out.empty() ? "" : ", ") + v;
  return out;
}

nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

double number_or_inf(const JsonNode& node, std::string_view key) {
  const auto v = node.find(key);
  if (!v || v->is_null()) return kInf;
  return v->as_positive();
}

nlohmann::json residuals_json(const std::vector<Residual>& worst, const char* size_key) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : worst)
    out.push_back({{size_key, r.size_bytes},
                   {"measured_us", r.measured_us},
                   {"fitted_us", r.fitted_us},
                   {"relative_error", r.relative()}});
  return out;
}

std::vector<Residual> residuals_from(const JsonNode& parent, const char* size_key) {
  std::vector<Residual> out;
  if (const auto list = parent.find("worst_residuals")) {
    for (const auto& r : list->items()) {
      r.only_keys({size_key, "measured_us", "fitted_us", "relative_error"});
      out.push_back({r.non_negative_at(size_key), r.positive_at("measured_us"),
                     r.non_negative_at("fitted_us")});
    }
  }
  return out;
}

std::string human_size(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  std::ostringstream s;
  s << (bytes == std::floor(bytes) ? bytes : std::round(bytes * 10) / 10) << " " << units[u];
  return s.str();
}

std::string fmt(double v, int digits) {
  if (!std::isfinite(v)) return "inf";
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

std::string table_name(const NcclTestsTable& t, const std::string& file) {
  return file + ", table at line " + std::to_string(t.header_line) + " (" + to_string(t.op) + ")";
}

}  // namespace

double RegimeFit::time_us(double size_bytes, double factor) const {
  if (regimes.empty()) return 0;
  for (const auto& r : regimes)
    if (size_bytes <= r.max_bytes) return r.time_us(size_bytes, factor);
  return regimes.back().time_us(size_bytes, factor);
}

AlphaBetaFit fit_alpha_beta(const std::vector<SizeTime>& points, double factor) {
  AlphaBetaFit fit;
  fit.points = static_cast<int>(points.size());
  if (points.empty()) return fit;
  Eigen::MatrixXd a(static_cast<Eigen::Index>(points.size()), 2);
  fit.min_bytes = points.front().size_bytes;
  fit.max_bytes = points.front().size_bytes;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double t = points[i].time_us;
    const double x = points[i].size_bytes * factor * kBytesPerGBpsToUs;
    a(static_cast<Eigen::Index>(i), 0) = 1.0 / t;
    a(static_cast<Eigen::Index>(i), 1) = x / t;
    fit.min_bytes = std::min(fit.min_bytes, points[i].size_bytes);
    fit.max_bytes = std::max(fit.max_bytes, points[i].size_bytes);
  }
  const Eigen::VectorXd p = solve_relative_nonneg(a);
  fit.latency_us = p(0);
  fit.busbw_GBps = p(1) > 0 ? 1.0 / p(1) : kInf;
  std::vector<double> measured, fitted;
  for (const auto& pt : points) {
    measured.push_back(pt.time_us);
    fitted.push_back(fit.time_us(pt.size_bytes, factor));
  }
  fit.r2 = r_squared(measured, fitted);
  return fit;
}

RegimeFit fit_regimes(std::vector<SizeTime> points, double factor, int max_regimes,
                      int min_points) {
  std::stable_sort(points.begin(), points.end(), [](const SizeTime& a, const SizeTime& b) {
    return a.size_bytes < b.size_bytes;
  });
  const std::size_t n = points.size();
  RegimeFit best;
  double best_bic = kInf;
  auto segment = [&](std::size_t from, std::size_t to) {
    return fit_alpha_beta(std::vector<SizeTime>(points.begin() + static_cast<long>(from),
                                                points.begin() + static_cast<long>(to)),
                          factor);
  };
  auto consider = [&](const std::vector<std::size_t>& cuts) {
    // cuts: segment boundaries including 0 and n
    RegimeFit candidate;
    double sse = 0;
    for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
      const AlphaBetaFit f = segment(cuts[s], cuts[s + 1]);
      sse += relative_sse(points, cuts[s], cuts[s + 1], f, factor);
      candidate.regimes.push_back(f);
    }
    const double segments = static_cast<double>(cuts.size() - 1);
    const double k = 3 * segments - 1;  // α, β per segment and the breakpoints
    const double nn = static_cast<double>(n);
    const double floor = kRelativeNoiseFloor * kRelativeNoiseFloor;
    const double bic = nn * std::log(std::max(sse / nn, floor)) + k * std::log(nn);
    if (bic < best_bic - 1e-9) {
      best_bic = bic;
      best = candidate;
    }
  };
  const std::size_t mp = static_cast<std::size_t>(std::max(1, min_points));
  consider({0, n});
  if (max_regimes >= 2)
    for (std::size_t c1 = mp; c1 + mp <= n; ++c1) consider({0, c1, n});
  if (max_regimes >= 3)
    for (std::size_t c1 = mp; c1 + 2 * mp <= n; ++c1)
      for (std::size_t c2 = c1 + mp; c2 + mp <= n; ++c2) consider({0, c1, c2, n});

  // Contiguous coverage: each regime ends where the next begins.
  std::vector<double> log_measured, log_fitted;
  std::vector<Residual> residuals;
  for (const auto& pt : points) {
    const double f = best.time_us(pt.size_bytes, factor);
    log_measured.push_back(std::log(pt.time_us));
    log_fitted.push_back(std::log(std::max(f, 1e-12)));
    residuals.push_back({pt.size_bytes, pt.time_us, f});
    best.max_abs_rel_residual = std::max(best.max_abs_rel_residual, std::fabs(f / pt.time_us - 1));
  }
  // R² in log space: times span six orders of magnitude, and a plain R² of time would only
  // measure the largest messages.
  best.r2 = r_squared(log_measured, log_fitted);
  best.worst = worst_of(residuals, 5);
  return best;
}

NetworkCalibration fit_network_table(const NcclTestsTable& table, const std::string& source) {
  NetworkCalibration cal;
  cal.op = table.op;
  cal.nranks = table.nranks;
  cal.nodes = std::max(1, table.nodes);
  cal.link_class = link_class_for(table.nodes);
  cal.source = source;
  bool any_out_of_place = false;
  for (const auto& row : table.rows) any_out_of_place |= row.out_of_place.present();
  cal.placement = any_out_of_place ? "out_of_place" : "in_place";
  for (const auto& row : table.rows) {
    const auto& m = any_out_of_place ? row.out_of_place : row.in_place;
    if (!m.time_us || *m.time_us <= 0 || row.size_bytes <= 0) continue;
    cal.points.push_back({row.size_bytes, *m.time_us});
  }
  if (cal.points.size() < 2)
    throw ConfigError(source, "",
                      "table at line " + std::to_string(table.header_line) + " (" +
                          to_string(table.op) +
                          "): fewer than 2 rows with a positive size and "
                          "time; nothing to fit");
  if (cal.nranks < 1) cal.nranks = 1;
  const double factor = busbw_factor(cal.op, cal.nranks);
  const RegimeFit fit = fit_regimes(cal.points, factor);
  cal.regimes = fit.regimes;
  // Make the regimes cover the measured range contiguously: [min of first, max of last].
  cal.r2 = fit.r2;
  cal.max_abs_rel_residual = fit.max_abs_rel_residual;
  cal.worst = fit.worst;
  for (const auto& r : cal.regimes)
    if (std::isfinite(r.busbw_GBps))
      cal.peak_busbw_GBps = std::max(cal.peak_busbw_GBps, r.busbw_GBps);
  std::vector<SizeTime> sorted = cal.points;
  std::stable_sort(sorted.begin(), sorted.end(), [](const SizeTime& a, const SizeTime& b) {
    return a.size_bytes < b.size_bytes;
  });
  cal.points = sorted;
  if (cal.peak_busbw_GBps > 0)
    for (const auto& pt : sorted) {
      const double busbw = pt.size_bytes * factor * kBytesPerGBpsToUs / pt.time_us;
      cal.bw_efficiency.emplace_back(pt.size_bytes, busbw / cal.peak_busbw_GBps);
    }
  return cal;
}

// ---- Compute -----------------------------------------------------------------------------

double ComputeModelFit::time_us(double flops, double bytes) const {
  double t = launch_us * 1e-6;
  if (std::isfinite(effective_tflops) && effective_tflops > 0)
    t += flops / (effective_tflops * 1e12);
  if (std::isfinite(effective_memory_GBps) && effective_memory_GBps > 0)
    t += bytes / (effective_memory_GBps * 1e9);
  return t * 1e6;
}

ComputeCalibration fit_compute(const std::vector<GemmLog>& logs,
                               const std::map<Dtype, double>& peaks_tflops) {
  ComputeCalibration out;
  std::map<Dtype, std::vector<GemmPoint>> by_dtype;
  for (const auto& log : logs)
    for (const auto& g : log.results) {
      GemmPoint p;
      p.name = g.name;
      p.kind = g.kind;
      p.dtype = g.dtype;
      p.m = g.m;
      p.n = g.n;
      p.k = g.k;
      p.batch = g.batch;
      p.flops = g.flops;
      p.time_us = g.time_us;
      p.tflops = g.tflops();
      if (const auto it = peaks_tflops.find(g.dtype); it != peaks_tflops.end())
        p.efficiency = p.tflops / it->second;
      p.source = g.source.empty() ? log.file : g.source;
      out.points.push_back(p);
      if (g.kind == "gemm") by_dtype[g.dtype].push_back(p);
    }
  for (const auto& [dtype, pts] : by_dtype) {
    if (pts.size() < 3) continue;
    const double element_bytes = bytes_per_element(dtype);
    Eigen::MatrixXd a(static_cast<Eigen::Index>(pts.size()), 3);
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const double t = pts[i].time_us * 1e-6;
      const double bytes = pts[i].batch *
                           (pts[i].m * pts[i].k + pts[i].k * pts[i].n + pts[i].m * pts[i].n) *
                           element_bytes;
      const auto r = static_cast<Eigen::Index>(i);
      a(r, 0) = 1.0 / t;
      a(r, 1) = pts[i].flops / t;
      a(r, 2) = bytes / t;
    }
    const Eigen::VectorXd p = solve_relative_nonneg(a);
    ComputeModelFit fit;
    fit.dtype = dtype;
    fit.points = static_cast<int>(pts.size());
    fit.launch_us = p(0) * 1e6;
    fit.effective_tflops = p(1) > 0 ? 1.0 / p(1) / 1e12 : kInf;
    fit.effective_memory_GBps = p(2) > 0 ? 1.0 / p(2) / 1e9 : kInf;
    if (const auto it = peaks_tflops.find(dtype); it != peaks_tflops.end()) {
      fit.peak_tflops = it->second;
      if (std::isfinite(fit.effective_tflops))
        fit.max_efficiency = fit.effective_tflops / it->second;
    }
    std::vector<double> lm, lf;
    std::vector<Residual> residuals;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const double bytes = pts[i].batch *
                           (pts[i].m * pts[i].k + pts[i].k * pts[i].n + pts[i].m * pts[i].n) *
                           element_bytes;
      const double f = fit.time_us(pts[i].flops, bytes);
      lm.push_back(std::log(pts[i].time_us));
      lf.push_back(std::log(std::max(f, 1e-12)));
      residuals.push_back({pts[i].flops, pts[i].time_us, f});
      fit.max_abs_rel_residual =
          std::max(fit.max_abs_rel_residual, std::fabs(f / pts[i].time_us - 1));
    }
    fit.r2 = r_squared(lm, lf);
    fit.worst = worst_of(residuals, 5);
    out.models.push_back(fit);
  }
  return out;
}

// ---- File --------------------------------------------------------------------------------

const NetworkCalibration* Calibration::find(const std::string& link_class, NcclTestsOp op,
                                            int nranks) const {
  return find_network_calibration(network, link_class, op, nranks);
}

nlohmann::json to_json(const Calibration& c) {
  nlohmann::json j;
  j["format"] = kCalibrationFormat;
  j["name"] = c.name;
  j["description"] = c.description;
  j["created"] = c.created;
  j["measured"] = {{"hardware", c.measured.hardware},
                   {"hosts", c.measured.hosts},
                   {"nccl_version", c.measured.nccl_version},
                   {"cuda_version", c.measured.cuda_version},
                   {"driver_version", c.measured.driver_version},
                   {"date", c.measured.measured_date},
                   {"sources", c.measured.sources}};
  nlohmann::json network = nlohmann::json::array();
  for (const auto& e : c.network) {
    nlohmann::json regimes = nlohmann::json::array();
    for (const auto& r : e.regimes)
      regimes.push_back({{"min_bytes", r.min_bytes},
                         {"max_bytes", r.max_bytes},
                         {"latency_us", r.latency_us},
                         {"busbw_GBps", finite_or_null(r.busbw_GBps)},
                         {"r2", r.r2},
                         {"points", r.points}});
    nlohmann::json eff = nlohmann::json::array();
    for (const auto& [s, f] : e.bw_efficiency)
      eff.push_back({{"size_bytes", s}, {"efficiency", f}});
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& p : e.points)
      pts.push_back({{"size_bytes", p.size_bytes}, {"time_us", p.time_us}});
    network.push_back({{"link_class", e.link_class},
                       {"op", to_string(e.op)},
                       {"nranks", e.nranks},
                       {"nodes", e.nodes},
                       {"placement", e.placement},
                       {"source", e.source},
                       {"busbw_factor", busbw_factor(e.op, e.nranks)},
                       {"regimes", regimes},
                       {"peak_busbw_GBps", e.peak_busbw_GBps},
                       {"bw_efficiency", eff},
                       {"r2_log_time", e.r2},
                       {"max_abs_rel_residual", e.max_abs_rel_residual},
                       {"worst_residuals", residuals_json(e.worst, "size_bytes")},
                       {"points", pts}});
  }
  j["network"] = network;
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : c.compute.points) {
    nlohmann::json pj = {{"name", p.name},     {"kind", p.kind},    {"dtype", to_string(p.dtype)},
                         {"m", p.m},           {"n", p.n},          {"k", p.k},
                         {"batch", p.batch},   {"flops", p.flops},  {"time_us", p.time_us},
                         {"tflops", p.tflops}, {"source", p.source}};
    pj["efficiency"] = p.efficiency ? nlohmann::json(*p.efficiency) : nlohmann::json(nullptr);
    points.push_back(pj);
  }
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : c.compute.models) {
    nlohmann::json mj = {{"dtype", to_string(m.dtype)},
                         {"launch_us", m.launch_us},
                         {"effective_tflops", finite_or_null(m.effective_tflops)},
                         {"effective_memory_GBps", finite_or_null(m.effective_memory_GBps)},
                         {"r2_log_time", m.r2},
                         {"max_abs_rel_residual", m.max_abs_rel_residual},
                         {"points", m.points},
                         {"worst_residuals", residuals_json(m.worst, "flops")}};
    mj["peak_tflops"] = m.peak_tflops ? nlohmann::json(*m.peak_tflops) : nlohmann::json(nullptr);
    mj["max_efficiency"] =
        m.max_efficiency ? nlohmann::json(*m.max_efficiency) : nlohmann::json(nullptr);
    models.push_back(mj);
  }
  j["compute"] = {{"gemm_points", points}, {"models", models}};
  return j;
}

Calibration calibration_from_json(const JsonNode& root) {
  root.require_object();
  root.only_keys({"format", "name", "description", "created", "measured", "network", "compute"});
  const std::string format = root.string_at("format");
  if (format != kCalibrationFormat)
    root.fail_at("format", "\"" + format + "\" is not " + kCalibrationFormat);
  Calibration c;
  c.name = root.string_or("name", "");
  c.description = root.string_or("description", "");
  c.created = root.string_or("created", "");
  if (const auto m = root.find("measured")) {
    m->only_keys(
        {"hardware", "hosts", "nccl_version", "cuda_version", "driver_version", "date", "sources"});
    if (const auto hw = m->find("hardware"))
      for (const auto& h : hw->items()) c.measured.hardware.push_back(h.as_string());
    c.measured.hosts = static_cast<int>(m->int_or("hosts", 0, 0, 1 << 24));
    c.measured.nccl_version = m->string_or("nccl_version", "");
    c.measured.cuda_version = m->string_or("cuda_version", "");
    c.measured.driver_version = m->string_or("driver_version", "");
    c.measured.measured_date = m->string_or("date", "");
    if (const auto src = m->find("sources"))
      for (const auto& s : src->items()) c.measured.sources.push_back(s.as_string());
  }
  if (const auto network = root.find("network")) {
    for (const auto& e : network->items()) {
      e.only_keys({"link_class", "op", "nranks", "nodes", "placement", "source", "busbw_factor",
                   "regimes", "peak_busbw_GBps", "bw_efficiency", "r2_log_time",
                   "max_abs_rel_residual", "worst_residuals", "points"});
      NetworkCalibration n;
      n.link_class = e.enum_at("link_class", {"intra_node", "inter_node"});
      const std::string op = e.string_at("op");
      n.op = nccl_tests_op_from_name(op);
      if (n.op == NcclTestsOp::unknown)
        e.fail_at("op", "\"" + op + "\" is not one of " + join_names(nccl_tests_op_names()));
      n.nranks = static_cast<int>(e.int_at("nranks", 1, 1 << 24));
      n.nodes = static_cast<int>(e.int_or("nodes", 1, 1, 1 << 24));
      n.placement = e.string_or("placement", "out_of_place");
      n.source = e.string_or("source", "");
      for (const auto& r : e.at("regimes").items()) {
        r.only_keys({"min_bytes", "max_bytes", "latency_us", "busbw_GBps", "r2", "points"});
        AlphaBetaFit f;
        f.min_bytes = r.non_negative_at("min_bytes");
        f.max_bytes = r.non_negative_at("max_bytes");
        if (f.max_bytes < f.min_bytes) r.fail_at("max_bytes", "smaller than min_bytes");
        f.latency_us = r.non_negative_at("latency_us");
        f.busbw_GBps = number_or_inf(r, "busbw_GBps");
        f.r2 = r.has("r2") ? r.at("r2").as_number() : 0.0;
        f.points = static_cast<int>(r.int_or("points", 0, 0, 1 << 24));
        n.regimes.push_back(f);
      }
      if (n.regimes.empty()) e.fail_at("regimes", "at least one regime is needed");
      n.peak_busbw_GBps = e.non_negative_or("peak_busbw_GBps", 0);
      if (const auto eff = e.find("bw_efficiency"))
        for (const auto& p : eff->items()) {
          p.only_keys({"size_bytes", "efficiency"});
          n.bw_efficiency.emplace_back(p.non_negative_at("size_bytes"),
                                       p.non_negative_at("efficiency"));
        }
      if (const auto pts = e.find("points"))
        for (const auto& p : pts->items()) {
          p.only_keys({"size_bytes", "time_us"});
          n.points.push_back({p.non_negative_at("size_bytes"), p.positive_at("time_us")});
        }
      n.r2 = e.has("r2_log_time") ? e.at("r2_log_time").as_number() : 0.0;
      n.max_abs_rel_residual = e.non_negative_or("max_abs_rel_residual", 0);
      n.worst = residuals_from(e, "size_bytes");
      c.network.push_back(std::move(n));
    }
  }
  if (const auto compute = root.find("compute")) {
    compute->only_keys({"gemm_points", "models"});
    if (const auto pts = compute->find("gemm_points"))
      for (const auto& p : pts->items()) {
        p.only_keys({"name", "kind", "dtype", "m", "n", "k", "batch", "flops", "time_us", "tflops",
                     "efficiency", "source"});
        GemmPoint g;
        g.name = p.string_or("name", "");
        g.kind = p.enum_or("kind", {"gemm", "attention"}, "gemm");
        bool ok = false;
        const std::string dtype = p.string_at("dtype");
        g.dtype = dtype_from_name(dtype, &ok);
        if (!ok) p.fail_at("dtype", "\"" + dtype + "\" is not one of fp32, tf32, bf16, fp16, fp8");
        g.m = p.positive_at("m");
        g.n = p.positive_at("n");
        g.k = p.positive_at("k");
        g.batch = p.positive_or("batch", 1);
        g.flops = p.positive_at("flops");
        g.time_us = p.positive_at("time_us");
        g.tflops = p.positive_or("tflops", g.flops / g.time_us / 1e6);
        if (const auto e = p.find("efficiency"); e && !e->is_null())
          g.efficiency = e->as_positive();
        g.source = p.string_or("source", "");
        c.compute.points.push_back(g);
      }
    if (const auto models = compute->find("models"))
      for (const auto& m : models->items()) {
        m.only_keys({"dtype", "launch_us", "effective_tflops", "effective_memory_GBps",
                     "peak_tflops", "max_efficiency", "r2_log_time", "max_abs_rel_residual",
                     "points", "worst_residuals"});
        ComputeModelFit f;
        bool ok = false;
        const std::string dtype = m.string_at("dtype");
        f.dtype = dtype_from_name(dtype, &ok);
        if (!ok) m.fail_at("dtype", "\"" + dtype + "\" is not one of fp32, tf32, bf16, fp16, fp8");
        f.launch_us = m.non_negative_at("launch_us");
        f.effective_tflops = number_or_inf(m, "effective_tflops");
        f.effective_memory_GBps = number_or_inf(m, "effective_memory_GBps");
        if (const auto v = m.find("peak_tflops"); v && !v->is_null())
          f.peak_tflops = v->as_positive();
        if (const auto v = m.find("max_efficiency"); v && !v->is_null())
          f.max_efficiency = v->as_positive();
        f.r2 = m.has("r2_log_time") ? m.at("r2_log_time").as_number() : 0.0;
        f.max_abs_rel_residual = m.non_negative_or("max_abs_rel_residual", 0);
        f.points = static_cast<int>(m.int_or("points", 0, 0, 1 << 24));
        f.worst = residuals_from(m, "flops");
        c.compute.models.push_back(f);
      }
  }
  return c;
}

Calibration load_calibration(const std::string& path) {
  const JsonDocument doc = JsonDocument::load(path);
  return calibration_from_json(doc.root());
}

std::vector<NetworkCalibration> load_network_calibration(const ClusterSpec& cluster) {
  if (cluster.calibration.empty()) return {};
  return load_calibration(cluster.calibration).network;
}

void write_calibration(const std::string& path, const Calibration& calibration) {
  write_file_atomically(path, to_json(calibration).dump(2) + "\n");
}

std::vector<std::string> untrusted_fit_reasons(const NetworkCalibration& fit) {
  std::vector<std::string> reasons;
  for (const auto& r : fit.regimes) {
    const std::string range = human_size(r.min_bytes) + " .. " + human_size(r.max_bytes);
    if (!std::isfinite(r.latency_us) || r.latency_us < 0)
      reasons.push_back(range + ": latency " + fmt(r.latency_us, 2) + " us");
    if (std::isnan(r.busbw_GBps) || r.busbw_GBps <= 0)
      reasons.push_back(range + ": busbw " + fmt(r.busbw_GBps, 1) + " GB/s");
  }
  if (!(fit.peak_busbw_GBps > 0) || !std::isfinite(fit.peak_busbw_GBps))
    reasons.push_back("busbw is infinite in every size regime (busbw factor " +
                      fmt(busbw_factor(fit.op, fit.nranks), 3) + " at " +
                      std::to_string(fit.nranks) + " ranks): the fit has no bandwidth term");
  if (!std::isfinite(fit.r2) || fit.r2 < kMinNetworkFitR2)
    reasons.push_back("R^2 (log time) " + fmt(fit.r2, 3) + " is below " + fmt(kMinNetworkFitR2, 2) +
                      ": the alpha-beta model does not describe "
                      "these times");
  return reasons;
}

namespace {

// Fits one table with its resolved rank and node counts, or says why it cannot.
void fit_table(Calibration& c, const NcclTestsTable& table, const std::string& file,
               const RankOverride& given) {
  const std::string name = table_name(table, file);
  const RankCount counts = resolve_rank_count(table, given);
  if (!counts.warning.empty()) c.notes.push_back(name + ": " + counts.warning);
  if (!counts.problem.empty()) {
    c.refusals.push_back(name + ": " + counts.problem);
    return;
  }
  NcclTestsTable resolved = table;
  resolved.nranks = counts.nranks;
  resolved.nodes = counts.nodes;
  c.notes.push_back(name + ": " + std::to_string(counts.nranks) + " ranks (from " + counts.source +
                    ") on " + std::to_string(counts.nodes) + " node" +
                    (counts.nodes == 1 ? "" : "s"));
  c.network.push_back(fit_network_table(resolved, file));
  c.measured.hosts = std::max(c.measured.hosts, counts.nodes);
  for (const auto& reason : untrusted_fit_reasons(c.network.back()))
    c.refusals.push_back(name + ": " + reason);
}

}  // namespace

Calibration calibrate(const std::vector<NcclTestsLog>& nccl_logs,
                      const std::vector<GemmLog>& gemm_logs,
                      const std::map<Dtype, double>& peaks_tflops, const RankOverride& given) {
  Calibration c;
  std::vector<std::string> hardware, nccl, cuda, driver, dates;
  for (const auto& log : nccl_logs) {
    for (const auto& d : log.provenance.devices) hardware.push_back(d);
    nccl.push_back(log.provenance.nccl_version);
    cuda.push_back(log.provenance.cuda_version);
    driver.push_back(log.provenance.driver_version);
    dates.push_back(log.provenance.date);
    c.measured.sources.push_back(log.file);
    for (const auto& t : log.tables) fit_table(c, t, log.file, given);
  }
  for (const auto& log : gemm_logs) {
    hardware.push_back(log.device);
    cuda.push_back(log.cuda_version);
    driver.push_back(log.driver_version);
    dates.push_back(log.date);
    c.measured.sources.push_back(log.source.empty() ? log.file
                                                    : log.file + " (" + log.source + ")");
  }
  for (const auto& h : hardware)
    if (!h.empty() && std::find(c.measured.hardware.begin(), c.measured.hardware.end(), h) ==
                          c.measured.hardware.end())
      c.measured.hardware.push_back(h);
  c.measured.nccl_version = join_unique(nccl);
  c.measured.cuda_version = join_unique(cuda);
  c.measured.driver_version = join_unique(driver);
  c.measured.measured_date = join_unique(dates);
  c.compute = fit_compute(gemm_logs, peaks_tflops);
  return c;
}

std::string describe_fit_quality(const Calibration& c) {
  std::ostringstream out;
  for (const auto& e : c.network) {
    out << to_string(e.op) << ", " << e.nranks << " ranks on " << e.nodes << " node"
        << (e.nodes == 1 ? "" : "s") << " (" << e.link_class << "), " << e.source << "\n";
    for (const auto& r : e.regimes)
      out << "    " << human_size(r.min_bytes) << " .. " << human_size(r.max_bytes) << ": latency "
          << fmt(r.latency_us, 2) << " us, busbw " << fmt(r.busbw_GBps, 1) << " GB/s (" << r.points
          << " points)\n";
    out << "    R^2 (log time) " << fmt(e.r2, 4) << ", worst residuals:";
    for (const auto& w : e.worst)
      out << " " << human_size(w.size_bytes) << " " << (w.relative() >= 0 ? "+" : "")
          << fmt(100 * w.relative(), 1) << "%";
    out << "\n";
  }
  for (const auto& m : c.compute.models) {
    out << "GEMM " << to_string(m.dtype) << ": launch " << fmt(m.launch_us, 2) << " us, effective "
        << fmt(m.effective_tflops, 1) << " TFLOP/s";
    if (m.max_efficiency) out << " (" << fmt(100 * *m.max_efficiency, 1) << "% of peak)";
    out << ", memory term " << fmt(m.effective_memory_GBps, 0) << " GB/s, " << m.points
        << " points, R^2 (log time) " << fmt(m.r2, 4) << ", worst:";
    for (const auto& w : m.worst)
      out << " " << fmt(w.size_bytes / 1e9, 1) << " GFLOP " << (w.relative() >= 0 ? "+" : "")
          << fmt(100 * w.relative(), 1) << "%";
    out << "\n";
  }
  if (c.network.empty() && c.compute.models.empty() && !c.compute.points.empty())
    out << "GEMM: " << c.compute.points.size()
        << " points recorded; fewer than 3 per dtype, no model fitted\n";
  return out.str();
}

}  // namespace clustersim::validation
