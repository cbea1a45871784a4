#include "sweep/results.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/atomic_file.hpp"
#include "sweep/sweep_spec.hpp"

namespace clustersim::sweep {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> kParameterColumns = {"gpus",
                                                    "dp",
                                                    "tp",
                                                    "pp",
                                                    "vpp",
                                                    "cp",
                                                    "micro_batch",
                                                    "global_batch",
                                                    "zero_stage",
                                                    "recompute",
                                                    "sequence_parallel",
                                                    "grad_dtype",
                                                    "compression",
                                                    "nics_per_node",
                                                    "oversubscription",
                                                    "cluster",
                                                    "model"};

const std::vector<std::string> kMetricColumns = {
    "step_time_s",        "mfu",       "tokens_per_s",
    "time_to_train_days", "gpu_hours", "cost_usd",
    "memory_per_gpu_GiB", "hbm_GiB",   "step_time_bound_s"};

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_value(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_field(v.get<std::string>());
  return csv_field(v.dump());
}

std::string row_start(const SweepRecord& r, const std::vector<std::string>& optional) {
  std::string row = csv_field(r.key) + "," + std::to_string(r.index) + "," + csv_field(r.status) +
                    "," + csv_field(r.label);
  for (const auto* columns : {&kParameterColumns, &optional}) {
    for (const auto& c : *columns) {
      row += ',';
      row += csv_value(r.parameters.contains(c) ? r.parameters.at(c) : json());
    }
  }
  for (const auto& c : kMetricColumns) {
    row += ',';
    row += csv_value(r.metrics.contains(c) ? r.metrics.at(c) : json());
  }
  return row;
}

std::string header_start(const std::vector<std::string>& optional) {
  std::string h = "key,index,status,label";
  for (const auto& c : kParameterColumns) h += "," + c;
  for (const auto& c : optional) h += "," + c;
  for (const auto& c : kMetricColumns) h += "," + c;
  return h;
}

}  // namespace

double SweepRecord::metric(const std::string& name, double fallback) const {
  const auto it = metrics.find(name);
  return (it != metrics.end() && it->is_number()) ? it->get<double>() : fallback;
}

bool SweepRecord::has_metric(const std::string& name) const {
  const auto it = metrics.find(name);
  return it != metrics.end() && it->is_number();
}

json to_json(const SweepRecord& r) {
  json j = json::object();
  j["key"] = r.key;
  j["index"] = r.index;
  j["status"] = r.status;
  j["reason"] = r.reason;
  j["label"] = r.label;
  j["series"] = r.series;
  j["parameters"] = r.parameters;
  j["metrics"] = r.metrics;
  j["breakdown"] = r.breakdown;
  j["warnings"] = r.warnings;
  j["build"] = r.build;
  return j;
}

SweepRecord record_from_json(const json& j) {
  if (!j.is_object()) throw std::runtime_error("a record is not a JSON object");
  auto need = [&](const char* key) -> const json& {
    if (!j.contains(key)) throw std::runtime_error(std::string("record without \"") + key + "\"");
    return j.at(key);
  };
  SweepRecord r;
  try {
    r.key = need("key").get<std::string>();
    r.index = need("index").get<std::size_t>();
    r.status = need("status").get<std::string>();
    r.reason = j.value("reason", std::string());
    r.label = j.value("label", std::string());
    r.series = j.value("series", std::string());
    r.parameters = j.value("parameters", json::object());
    r.metrics = j.value("metrics", json::object());
    r.breakdown = j.value("breakdown", json::object());
    r.warnings = j.value("warnings", std::vector<std::string>());
    r.build = j.value("build", std::string());
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed record: ") + e.what());
  }
  if (r.key.empty()) throw std::runtime_error("record with an empty key");
  return r;
}

std::string to_json_line(const SweepRecord& record) {
  // Replacement of invalid UTF-8 keeps a stray byte in an evaluator's message from making the
  // whole record unwritable.
  return to_json(record).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

ResultsFile read_results(const std::string& path, bool repair) {
  ResultsFile out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  in.close();
  const std::size_t last_newline = text.rfind('\n');
  const std::size_t complete = last_newline == std::string::npos ? 0 : last_newline + 1;
  out.torn_bytes = text.size() - complete;
  std::size_t start = 0;
  while (start < complete) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    try {
      out.records.push_back(record_from_json(json::parse(line)));
    } catch (const std::exception&) {
      ++out.bad_lines;
    }
  }
  if (repair && out.torn_bytes > 0) fs::resize_file(path, complete);
  return out;
}

std::vector<SweepRecord> latest_per_key(const std::vector<SweepRecord>& records) {
  std::map<std::string, SweepRecord> by_key;
  for (const auto& r : records) {
    const auto it = by_key.find(r.key);
    if (it == by_key.end() || r.done() || !it->second.done()) by_key[r.key] = r;
  }
  std::vector<SweepRecord> out;
  out.reserve(by_key.size());
  for (auto& [key, r] : by_key) out.push_back(std::move(r));
  std::stable_sort(out.begin(), out.end(), [](const SweepRecord& a, const SweepRecord& b) {
    return a.index != b.index ? a.index < b.index : a.key < b.key;
  });
  return out;
}

std::vector<std::string> optional_columns(const json& parameters) {
  std::vector<std::string> out;
  for (const auto& name : optional_parameter_names()) {
    if (parameters.is_object() && parameters.contains(name)) out.push_back(name);
  }
  return out;
}

std::string to_csv(const std::vector<SweepRecord>& records) {
  std::set<std::string> components;
  json present = json::object();
  for (const auto& r : records) {
    for (const auto& [name, value] : r.breakdown.items()) components.insert(name);
    for (const auto& [name, value] : r.parameters.items()) present[name] = true;
  }
  const std::vector<std::string> optional = optional_columns(present);
  std::string out = header_start(optional);
  for (const auto& c : components) {
    out += ',';
    out += csv_field("breakdown." + c);
  }
  out += ",reason\n";
  for (const auto& r : records) {
    out += row_start(r, optional);
    for (const auto& c : components) {
      out += ',';
      out += csv_value(r.breakdown.contains(c) ? r.breakdown.at(c) : json());
    }
    out += ',';
    out += csv_field(r.reason);
    out += '\n';
  }
  return out;
}

std::string csv_append_header(const std::vector<std::string>& optional) {
  return header_start(optional) + ",breakdown,reason\n";
}

std::string csv_append_row(const SweepRecord& r, const std::vector<std::string>& optional) {
  std::string parts;
  for (const auto& [name, value] : r.breakdown.items()) {
    parts += (parts.empty() ? "" : ";") + name + "=" + value.dump();
  }
  return row_start(r, optional) + "," + csv_field(parts) + "," + csv_field(r.reason) + "\n";
}

std::string jsonl_path(const std::string& dir) {
  return dir + "/results.jsonl";
}
std::string csv_path(const std::string& dir) {
  return dir + "/results.csv";
}

void write_results(const std::string& dir, const std::vector<SweepRecord>& records) {
  std::string lines;
  for (const auto& r : records) lines += to_json_line(r);
  write_file_atomically(jsonl_path(dir), lines);
  write_file_atomically(csv_path(dir), to_csv(records));
}

std::string results_file_of(const std::string& path) {
  if (fs::is_directory(path)) return jsonl_path(path);
  return path;
}

}  // namespace clustersim::sweep
