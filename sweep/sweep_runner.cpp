#include "sweep/sweep_runner.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_set>

#include "core/atomic_file.hpp"
#include "input/scenario_loader.hpp"

namespace clustersim::sweep {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr double kBarRedrawS = 0.1;  // at most ten redraws a second
constexpr int kBarWidth = 28;        // characters

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long total = std::lround(s);
  char buf[32];
  if (total >= 3600) {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", total / 3600, (total / 60) % 60);
  } else if (total >= 60) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", total / 60, total % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lds", total);
  }
  return buf;
}

// The exclusive lock on a results directory, held for the lifetime of the object.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& dir) {
    const std::string path = dir + "/.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot create " + path);
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw std::runtime_error("another sweep is writing to " + dir);
    }
  }
  ~DirectoryLock() { ::close(fd_); }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

class Progress {
 public:
  Progress(std::ostream* os, bool bar, std::size_t total, std::size_t done)
      : os_(os), bar_(bar), total_(total), done_(done), first_done_(done) {}

  void record(const std::string& status) {
    ++done_;
    ++counts_[status];
    draw(false);
  }
  void tick() { draw(false); }
  void finish() {
    draw(true);
    if (os_ && bar_) *os_ << "\n" << std::flush;
  }

 private:
  void draw(bool force) {
    if (!os_) return;
    const double now = seconds_since(start_);
    const double fraction = total_ ? static_cast<double>(done_) / total_ : 1.0;
    if (bar_) {
      if (!force && now - last_draw_ < kBarRedrawS) return;
      last_draw_ = now;
      const int filled = static_cast<int>(fraction * kBarWidth);
      std::string line = "\r[" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') +
                         "] " + std::to_string(done_) + "/" + std::to_string(total_) + " " +
                         counts_text();
      const std::size_t fresh = done_ - first_done_;
      if (fresh > 0 && done_ < total_) {
        line += " ETA " + duration_text(now / fresh * (total_ - done_));
      }
      *os_ << line << "\x1b[K" << std::flush;
      return;
    }
    // Without a terminal: one line per tenth of the sweep (batch logs stay short).
    const int decile = static_cast<int>(fraction * 10);
    if (decile > last_decile_ || (force && done_ == total_ && last_decile_ < 10)) {
      last_decile_ = decile;
      *os_ << "sweep: " << done_ << "/" << total_ << " points " << counts_text() << " after "
           << duration_text(now) << "\n"
           << std::flush;
    }
  }

  std::string counts_text() const {
    std::string out;
    for (const char* s : {kStatusOk, kStatusInvalid, kStatusInfeasible, kStatusFailed}) {
      const auto it = counts_.find(s);
      if (!out.empty()) out += ' ';
      out += s;
      out += ' ';
      out += std::to_string(it == counts_.end() ? 0 : it->second);
    }
    return out;
  }

  std::ostream* os_;
  bool bar_;
  std::size_t total_;
  std::size_t done_;
  std::size_t first_done_;
  std::map<std::string, std::size_t> counts_;
  Clock::time_point start_ = Clock::now();
  double last_draw_ = -1;
  int last_decile_ = -1;
};

SweepRecord record_for(const SweepPoint& point, const std::string& key, const std::string& build) {
  SweepRecord r;
  r.key = key;
  r.build = build;
  r.index = point.index;
  r.label = point.label;
  r.series = point.series;
  r.parameters = point_parameters(point.scenario);
  return r;
}

std::string point_document_name(const SweepSpec& spec, const SweepPoint& point) {
  return spec.file + "[point " + std::to_string(point.index) + "]";
}

}  // namespace

std::string executable_fingerprint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return fnv1a64_hex(bytes.str());
}

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  auto number = [&](const std::string& s) {
    std::size_t used = 0;
    long v = -1;
    try {
      v = std::stol(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || s.empty()) {
      throw std::invalid_argument("shard \"" + text + "\" is not I/N (e.g. 3/8)");
    }
    return v;
  };
  if (slash == std::string::npos) {
    throw std::invalid_argument("shard \"" + text + "\" is not I/N (e.g. 3/8)");
  }
  const long i = number(text.substr(0, slash));
  const long n = number(text.substr(slash + 1));
  if (n < 1 || i < 1 || i > n || n > 1000000) {
    throw std::invalid_argument("shard \"" + text + "\" needs 1 <= I <= N");
  }
  return {static_cast<int>(i), static_cast<int>(n)};
}

int shard_of(std::size_t index, int shards) {
  // splitmix64's finaliser (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number
  // generators"): consecutive indices land on unrelated shards, so points that are expensive
  // on a regular stride (every fourth: ZeRO-3) spread evenly over the shards.
  std::uint64_t z = static_cast<std::uint64_t>(index) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<int>(z % static_cast<std::uint64_t>(shards)) + 1;
}

std::vector<SweepPoint> shard_points(std::vector<SweepPoint> points, int shard, int shards) {
  if (shards == 1) return points;
  std::vector<SweepPoint> out;
  for (auto& p : points) {
    if (shard_of(p.index, shards) == shard) out.push_back(std::move(p));
  }
  return out;
}

std::optional<SweepRecord> screen_point(const SweepSpec& spec, const SweepPoint& point,
                                        const std::string& key, const FeasibilityCheck& feasible,
                                        std::optional<Scenario>& scenario,
                                        const std::string& build) {
  SweepRecord r = record_for(point, key, build);
  if (!point.error.empty()) {
    r.status = kStatusInvalid;
    r.reason = point.error;
    return r;
  }
  try {
    scenario =
        load_scenario(JsonDocument::parse(point.scenario.dump(), point_document_name(spec, point)));
  } catch (const ConfigError& e) {
    r.status = kStatusInvalid;
    r.reason = e.what();
    return r;
  }
  if (feasible) {
    if (auto verdict = feasible(*scenario)) {
      r.status = verdict->status.empty() ? kStatusInfeasible : verdict->status;
      r.reason = verdict->reason;
      r.metrics = verdict->metrics;
      r.breakdown = verdict->breakdown;
      r.warnings = scenario->warnings;
      return r;
    }
  }
  return std::nullopt;
}

SweepOutcome run_sweep(const SweepSpec& spec, const SweepOptions& options,
                       const FeasibilityCheck& feasible) {
  const auto start = Clock::now();
  SweepOutcome outcome;
  const std::string& dir = options.out_dir;
  fs::create_directories(dir);
  DirectoryLock lock(dir);

  std::vector<SweepPoint> all = enumerate_points(spec);
  outcome.points_total = all.size();
  const std::vector<SweepPoint> points =
      shard_points(std::move(all), options.shard, options.shards);
  outcome.points_in_shard = points.size();
  std::vector<std::string> keys;
  keys.reserve(points.size());
  for (const auto& p : points) keys.push_back(point_key(p.scenario, options.evaluator));

  // Resume: keep every complete record, cut off a torn last line, rebuild the CSV from the
  // JSON Lines (it may have missed the last append when the sweep was killed in between).
  const ResultsFile existing = read_results(jsonl_path(dir), true);
  if (existing.torn_bytes > 0 && options.progress) {
    *options.progress << "sweep: cut off an incomplete last line (" << existing.torn_bytes
                      << " bytes) of " << jsonl_path(dir) << "\n";
  }
  std::unordered_set<std::string> done;
  for (const auto& r : existing.records) {
    if (r.done() && (options.build.empty() || r.build == options.build)) done.insert(r.key);
  }
  {
    std::string csv = csv_append_header();
    for (const auto& r : latest_per_key(existing.records)) csv += csv_append_row(r);
    write_file_atomically(csv_path(dir), csv);
  }
  json meta = json::object();
  meta["sweep"] = spec.name;
  meta["file"] = spec.file;
  meta["description"] = spec.description;
  meta["base"] = spec.base_file;
  meta["evaluator"] = options.evaluator;
  meta["shard"] = options.shard;
  meta["shards"] = options.shards;
  meta["points_total"] = outcome.points_total;
  meta["points_in_shard"] = outcome.points_in_shard;
  meta["varying"] = spec.varying;
  meta["usd_per_gpu_hour"] = spec.ranking.usd_per_gpu_hour;
  meta["top"] = spec.ranking.top;
  meta["base_parameters"] = point_parameters(spec.base);
  write_file_atomically(dir + "/sweep.json", meta.dump(2) + "\n");

  for (const auto& k : keys) outcome.already_done += done.count(k);
  {
    std::unordered_set<std::string> stale;
    for (const auto& r : existing.records) {
      if (r.done() && !done.count(r.key)) stale.insert(r.key);
    }
    const std::unordered_set<std::string> mine(keys.begin(), keys.end());
    for (const auto& k : stale) outcome.other_build += mine.count(k);
    if (outcome.other_build > 0 && options.progress) {
      *options.progress << "sweep: " << outcome.other_build
                        << " points were evaluated by another clustersim build; evaluating them "
                           "again\n";
    }
  }
  Progress progress(options.progress, options.progress_bar, points.size(), outcome.already_done);

  const std::string work = dir + "/.points";
  fs::create_directories(work);
  auto append = [&](const SweepRecord& r) {
    append_record(jsonl_path(dir), to_json_line(r));
    append_record(csv_path(dir), csv_append_row(r));
    progress.record(r.status);
  };

  struct Pending {
    Scenario scenario;
    std::string file;
  };
  std::map<std::size_t, Pending> pending;
  std::size_t cursor = 0;
  auto next = [&]() -> std::optional<std::pair<std::size_t, ProcessJob>> {
    while (cursor < points.size()) {
      if (options.stop && *options.stop) return std::nullopt;
      const std::size_t i = cursor++;
      if (done.count(keys[i])) continue;
      std::optional<Scenario> scenario;
      if (auto r = screen_point(spec, points[i], keys[i], feasible, scenario, options.build)) {
        append(*r);
        continue;
      }
      const std::string file = work + "/" + keys[i] + ".json";
      write_file_atomically(file, points[i].scenario.dump(2) + "\n");
      std::error_code ec;
      fs::remove(work + "/" + keys[i] + ".out.json", ec);  // left by an interrupted run
      ProcessJob job;
      job.argv = evaluator_argv(options.executable, options.evaluator, file,
                                work + "/" + keys[i] + ".out.json");
      job.delay_ms = options.test_delay_ms;
      pending[i] = Pending{std::move(*scenario), file};
      return std::make_pair(i, std::move(job));
    }
    return std::nullopt;
  };
  auto finished = [&](std::size_t i, ProcessResult&& result) {
    Pending p = std::move(pending.at(i));
    pending.erase(i);
    const std::string out_file = work + "/" + keys[i] + ".out.json";
    const Evaluation e = interpret_child(result, out_file);
    SweepRecord r = record_for(points[i], keys[i], options.build);
    r.status = e.status;
    r.reason = e.reason;
    r.metrics = e.metrics;
    r.breakdown = e.breakdown;
    r.warnings = p.scenario.warnings;
    for (const auto& w : e.warnings) {
      if (std::find(r.warnings.begin(), r.warnings.end(), w) == r.warnings.end()) {
        r.warnings.push_back(w);
      }
    }
    if (r.status == kStatusOk) {
      add_derived_metrics(r.metrics, p.scenario, spec.ranking.usd_per_gpu_hour);
    }
    append(r);
    ++outcome.evaluated;
    std::error_code ec;
    fs::remove(p.file, ec);
    fs::remove(out_file, ec);
  };
  PoolOptions pool;
  pool.parallel = options.jobs;
  pool.timeout_s = options.point_timeout_s;
  pool.stop = options.stop;
  pool.tick = [&] { progress.tick(); };
  outcome.interrupted =
      !run_processes(next, finished, pool) || (options.stop != nullptr && *options.stop != 0);
  progress.finish();

  std::vector<SweepRecord> records = latest_per_key(read_results(jsonl_path(dir), false).records);
  if (!outcome.interrupted) {
    write_results(dir, records);
    std::error_code ec;
    fs::remove_all(work, ec);
  }
  const std::unordered_set<std::string> mine(keys.begin(), keys.end());
  for (auto& r : records) {
    if (!mine.count(r.key)) continue;
    if (r.status == kStatusOk) ++outcome.ok;
    if (r.status == kStatusInvalid) ++outcome.invalid;
    if (r.status == kStatusInfeasible) ++outcome.infeasible;
    if (r.status == kStatusFailed) ++outcome.failed;
    outcome.records.push_back(std::move(r));
  }
  outcome.wall_s = seconds_since(start);
  return outcome;
}

std::optional<json> reference_parameters(const std::string& dir) {
  const fs::path meta_file = fs::path(dir) / "sweep.json";
  if (!fs::exists(meta_file)) return std::nullopt;
  try {
    const json meta = JsonDocument::load(meta_file.string()).root().raw();
    if (meta.contains("base_parameters")) return meta["base_parameters"];
    // Results of an older build: resolve the base scenario of the sweep file it names.
    const std::string spec_file = meta.value("file", std::string());
    if (!spec_file.empty() && fs::exists(spec_file)) {
      return point_parameters(load_sweep_spec(spec_file).base);
    }
  } catch (const std::exception&) {
    // A missing or unreadable description only drops the base scenario's line.
  }
  return std::nullopt;
}

std::vector<SweepRecord> merge_results(const std::string& out_dir,
                                       const std::vector<std::string>& parts) {
  std::vector<SweepRecord> all;
  for (const auto& part : parts) {
    const std::string file = results_file_of(part);
    if (!fs::exists(file)) throw std::runtime_error("no results at " + file);
    ResultsFile r = read_results(file, false);
    all.insert(all.end(), std::make_move_iterator(r.records.begin()),
               std::make_move_iterator(r.records.end()));
  }
  std::vector<SweepRecord> merged = latest_per_key(all);
  fs::create_directories(out_dir);
  write_results(out_dir, merged);
  // Keep the sweep's description (ranking options) next to the merged results.
  for (const auto& part : parts) {
    const fs::path meta = fs::path(part) / "sweep.json";
    if (fs::is_directory(part) && fs::exists(meta)) {
      json m = json::parse(JsonDocument::load(meta.string()).root().raw().dump());
      m["shard"] = 1;
      m["shards"] = 1;
      m["merged_from"] = parts;
      m["points_in_shard"] = merged.size();
      write_file_atomically(out_dir + "/sweep.json", m.dump(2) + "\n");
      break;
    }
  }
  return merged;
}

}  // namespace clustersim::sweep
