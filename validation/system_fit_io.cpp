#include "validation/system_fit_io.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/json_reader.hpp"
#include "input/scenario_loader.hpp"
#include "models/compute_cost.hpp"

namespace clustersim::validation {

namespace {

// The file whose `system` block a run is predicted with: its GPU's calibration, or the file that
// calibration borrows its block from (system_from). A run is fitted where it is predicted, so
// the runs of a borrowing GPU join the lender's group and its folds.
std::string system_block_path(const std::string& calibration) {
  const std::filesystem::path own = std::filesystem::path(calibration).lexically_normal();
  const std::string lender = models::load_compute_calibration(calibration).system.borrowed_from;
  return lender.empty() ? own.string() : (own.parent_path() / lender).string();
}

}  // namespace

std::vector<FitRun> fit_runs_from_suite(const PublishedSuite& suite,
                                        std::vector<Scenario>& scenarios) {
  std::vector<FitRun> runs;
  std::map<std::string, std::string> groups;  // calibration file -> its group, each read once
  scenarios.clear();
  for (const auto& c : suite.cases) {
    Scenario sc = load_scenario(c.scenario_path);
    FitRun r;
    r.id = c.id;
    r.source = c.family;
    const std::string calibration = models::compute_calibration_path(sc.cluster.gpu);
    auto [group, added] = groups.try_emplace(calibration);
    if (added) group->second = system_block_path(calibration);
    r.group = group->second;
    r.implied_step_s = implied_step_time_s(c, sc);
    r.rate_metric = c.metric != Metric::step_time_s;
    runs.push_back(r);
    scenarios.push_back(std::move(sc));
  }
  return runs;
}

std::map<std::string, SystemValues> fit_start_values(const std::vector<FitRun>& runs,
                                                     const std::vector<SystemParameterId>& fit) {
  std::map<std::string, SystemValues> start;
  for (const auto& r : runs) {
    if (start.count(r.group)) continue;
    SystemValues v = models::load_compute_calibration(r.group).system.values;
    for (SystemParameterId id : fit) v[id] = system_parameter(id).nominal;
    start[r.group] = v;
  }
  return start;
}

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string describe_values(const SystemValues& v) {
  std::string out;
  for (const auto& [id, value] : v)
    out +=
        (out.empty() ? "" : ", ") + std::string(system_parameter(id).name) + " " + fixed(value, 3);
  return out;
}

struct FamilyErrors {
  int n = 0;
  double cv_abs = 0, cv_signed = 0, in_abs = 0, in_signed = 0;
};

void append_families(std::ostringstream& out, const SystemFitResult& fit) {
  std::map<std::string, FamilyErrors> fam;
  for (const auto& r : fit.runs) {
    FamilyErrors& f = fam[r.run.source];
    ++f.n;
    f.cv_abs += std::abs(r.cv_error_pct);
    f.cv_signed += r.cv_error_pct;
    f.in_abs += std::abs(r.in_sample_error_pct);
    f.in_signed += r.in_sample_error_pct;
  }
  out << "\nper source family (cross-validated | in-sample):\n"
      << "  family                         runs   MAPE  signed |   MAPE  signed\n";
  for (const auto& [name, f] : fam) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-30s %4d %5.1f%% %+6.1f%% | %5.1f%% %+6.1f%%\n",
                  name.c_str(), f.n, f.cv_abs / f.n, f.cv_signed / f.n, f.in_abs / f.n,
                  f.in_signed / f.n);
    out << line;
  }
}

}  // namespace

std::string format_system_fit(const SystemFitResult& fit,
                              const std::vector<SystemParameterId>& parameters) {
  std::ostringstream out;
  out << "system parameters fitted (leave-one-source-out cross-validated):\n";
  for (const auto& [group, cal] : fit.groups) {
    out << "\n" << group << " (" << cal.fitted_on.size() << " runs)\n";
    for (SystemParameterId id : parameters) {
      const auto& spec = system_parameter(id);
      const auto value = cal.find(id);
      if (!value) {
        out << "  " << spec.name << ": no effect on these runs, not fitted\n";
        continue;
      }
      out << "  " << spec.name << " = " << fixed(*value, 3) << "  (fitted; range "
          << fixed(spec.low, 2) << " .. " << fixed(spec.high, 2) << ", " << spec.unit << ")\n";
    }
    for (const auto& f : cal.folds)
      out << "  without " << f.held_out_source << ": " << describe_values(f.values) << "\n";
    if (cal.cross_validated_mape_pct && cal.in_sample_mape_pct)
      out << "  MAPE " << fixed(*cal.cross_validated_mape_pct, 1) << "% cross-validated, "
          << fixed(*cal.in_sample_mape_pct, 1) << "% in-sample\n";
  }
  out << "\n"
      << (fit.converged ? "converged after " : "NOT converged after ") << fit.linearisations
      << (fit.linearisations == 1 ? " linearisation" : " linearisations")
      << (fit.converged ? "" : " (raise --iterations)") << "\n";
  if (!fit.cross_validated_mape_pct) {
    out << "\nnot simulated at the fitted values (--skip-verify): `clustersim validate` reports "
           "the cross-validated and in-sample errors; "
        << fit.simulations << " simulations\n";
    return out.str();
  }
  append_families(out, fit);
  out << "\n  run                                          cross-val  in-sample\n";
  for (const auto& r : fit.runs) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-44s %+8.1f%% %+9.1f%%\n", r.run.id.c_str(),
                  r.cv_error_pct, r.in_sample_error_pct);
    out << line;
  }
  out << "\nall " << fit.runs.size() << " runs: MAPE " << fixed(*fit.cross_validated_mape_pct, 1)
      << "% cross-validated (" << fixed(*fit.in_sample_mape_pct, 1) << "% in-sample), "
      << fit.simulations << " simulations\n";
  return out.str();
}

void write_system_block(const std::string& calibration_file, const SystemCalibration& system,
                        const std::string& note) {
  std::ifstream in(calibration_file);
  if (!in) throw ConfigError(calibration_file, "", "cannot read the calibration file");
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
  const auto values_json = [](const SystemValues& v) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (const auto& [id, value] : v) o[system_parameter(id).name] = value;
    return o;
  };
  nlohmann::ordered_json block;
  block["description"] =
      "System parameters fitted to published end-to-end runs by `clustersim calibrate --runs` "
      "with leave-one-source-out cross-validation (core/system_calibration.hpp: meaning, unit "
      "and plausible range of each). Fitted values, not measurements.";
  block["parameters"] = values_json(system.values);
  nlohmann::ordered_json fit;
  fit["note"] = note;
  fit["fitted_on"] = system.fitted_on;
  if (system.in_sample_mape_pct)
    fit["in_sample_mape_pct"] = std::round(*system.in_sample_mape_pct * 100) / 100;
  if (system.cross_validated_mape_pct)
    fit["cross_validated_mape_pct"] = std::round(*system.cross_validated_mape_pct * 100) / 100;
  fit["folds"] = nlohmann::ordered_json::array();
  for (const auto& f : system.folds) {
    nlohmann::ordered_json fold;
    fold["held_out_source"] = f.held_out_source;
    fold["held_out_cases"] = f.held_out_cases;
    fold["parameters"] = values_json(f.values);
    fit["folds"].push_back(fold);
  }
  block["fit"] = fit;
  doc["system"] = block;
  const std::string text = doc.dump(2) + "\n";
  models::load_compute_calibration(JsonDocument::parse(text, calibration_file));
  write_file_atomically(calibration_file, text);
}

}  // namespace clustersim::validation
