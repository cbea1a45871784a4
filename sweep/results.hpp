// Sweep results: one record per point, kept in JSON Lines (the source of truth) and CSV.
//
// Every record is appended as one complete line with a single write (core/atomic_file.hpp
// append_record), so a killed sweep leaves whole lines plus at most one torn last line, which
// readers ignore and a resuming sweep cuts off. A finished sweep rewrites both files sorted by
// point index (atomically), so the same sweep always ends with the same files.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clustersim::sweep {

// Status of one point.
//   ok          evaluated; metrics hold the results
//   invalid     the scenario does not load (reason: the loader's ConfigError message)
//   infeasible  valid but does not fit (reason: the memory verdict with the numbers)
//   failed      the evaluator crashed, timed out or printed nothing usable (retried on resume)
//   bounded     not simulated: a lower bound on its step time (metrics step_time_bound_s and
//               the bounds of the ranked metrics, *_bound) shows it cannot enter the top of any
//               ranked table (sweep_runner.hpp); simulated on resume with bounding off
inline constexpr const char* kStatusOk = "ok";
inline constexpr const char* kStatusInvalid = "invalid";
inline constexpr const char* kStatusInfeasible = "infeasible";
inline constexpr const char* kStatusFailed = "failed";
inline constexpr const char* kStatusBounded = "bounded";

struct SweepRecord {
  std::string key;        // fnv1a64 of the evaluator and the resolved scenario (sweep_spec.hpp)
  std::size_t index = 0;  // the point's position in its sweep
  std::string status;
  std::string reason;  // why a point is not ok ("" when ok)
  std::string label;   // e.g. "DP64 TP8 PP2 mb1"
  std::string series;  // the label without GPU count and dp (plots)
  nlohmann::json parameters = nlohmann::json::object();  // point_parameters()
  // Numbers: step_time_s, mfu, tokens_per_s, time_to_train_days, gpu_hours, cost_usd,
  // memory_per_gpu_GiB, hbm_GiB, ... (whatever the evaluator reports; absent when unknown).
  nlohmann::json metrics = nlohmann::json::object();
  // Step time by component, seconds per step (the evaluator's breakdown).
  nlohmann::json breakdown = nlohmann::json::object();
  std::vector<std::string> warnings;
  // Which clustersim build evaluated the point (a hash of its executable; "" = unknown). A
  // resumed sweep redoes points that another build evaluated, so that one results file never
  // mixes simulator versions.
  std::string build;

  bool done() const { return status != kStatusFailed; }  // not redone on resume
  // metrics[name] or `fallback` when absent or not a number.
  double metric(const std::string& name, double fallback = 0) const;
  bool has_metric(const std::string& name) const;
};

nlohmann::json to_json(const SweepRecord& record);
// Throws std::runtime_error when a required field is missing or has the wrong type.
SweepRecord record_from_json(const nlohmann::json& value);
// One JSON Lines record, ending in '\n'.
std::string to_json_line(const SweepRecord& record);

struct ResultsFile {
  std::vector<SweepRecord> records;  // in file order
  std::size_t torn_bytes = 0;        // bytes after the last newline (an interrupted append)
  std::size_t bad_lines = 0;         // complete lines that are not a record (skipped)
};

// Reads a JSON Lines results file; a missing file reads as empty. A last line without its
// newline is not a record; with `repair` the file is cut back to its last newline.
ResultsFile read_results(const std::string& path, bool repair);

// One record per key: a done record beats a failed one, a later one an earlier one. Sorted by
// (index, key).
std::vector<SweepRecord> latest_per_key(const std::vector<SweepRecord>& records);

// The optional parameter columns (sweep_spec.hpp optional_parameter_names()) that
// `parameters` has, in column order: the sweep's own axes among them.
std::vector<std::string> optional_columns(const nlohmann::json& parameters);

// CSV (RFC 4180 quoting), fixed columns: key, index, status, label, the parameters, the
// optional parameters some record has (optional_columns(), e.g. nic_Gbps and what_if only in a
// sweep with a nic_Gbps axis), the main metrics, the breakdown components as "breakdown.NAME"
// (union over `records`, sorted), reason.
std::string to_csv(const std::vector<SweepRecord>& records);
// The CSV header and one row with the columns fixed for appending (`optional` parameter
// columns as the sweep has them; no breakdown columns but a `breakdown` column
// "name=seconds;..."), used while a sweep runs.
std::string csv_append_header(const std::vector<std::string>& optional = {});
std::string csv_append_row(const SweepRecord& record,
                           const std::vector<std::string>& optional = {});

// Writes DIR/results.jsonl and DIR/results.csv atomically from `records`.
void write_results(const std::string& dir, const std::vector<SweepRecord>& records);

// Paths inside a results directory.
std::string jsonl_path(const std::string& dir);
std::string csv_path(const std::string& dir);

// A results argument: a directory (its results.jsonl) or a .jsonl file.
std::string results_file_of(const std::string& path);

}  // namespace clustersim::sweep
