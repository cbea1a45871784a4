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
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/atomic_file.hpp"
#include "core/progress.hpp"
#include "input/scenario_loader.hpp"
#include "sweep/bounding.hpp"
#include "sweep/hardware_axes.hpp"

namespace clustersim::sweep {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
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

// The sweep's progress: core's reporter (core/progress.hpp) with the points by status as its
// detail. No stream: quiet.
class Progress {
 public:
  Progress(std::ostream* os, ProgressStyle style, std::size_t total, std::size_t done)
      : reporter_(os ? *os : std::cerr, os ? style : ProgressStyle::quiet, "sweep", "points", total,
                  done) {
    reporter_.set_detail(counts_text());
  }

  void record(const std::string& status) {
    ++counts_[status];
    reporter_.set_detail(counts_text());
    reporter_.advance();
  }
  void tick() { reporter_.tick(); }
  void finish() { reporter_.finish(); }

 private:
  std::string counts_text() const {
    std::string out;
    for (const char* s :
         {kStatusOk, kStatusInvalid, kStatusInfeasible, kStatusFailed, kStatusBounded}) {
      const auto it = counts_.find(s);
      if (s == kStatusBounded && it == counts_.end()) continue;
      if (!out.empty()) out += ' ';
      out += s;
      out += ' ';
      out += std::to_string(it == counts_.end() ? 0 : it->second);
    }
    return out;
  }

  std::map<std::string, std::size_t> counts_;
  ProgressReporter reporter_;
};

SweepRecord record_for(const SweepPoint& point, const std::string& key, const std::string& build) {
  SweepRecord r;
  r.key = key;
  r.build = build;
  r.index = point.index;
  r.label = point.label;
  r.series = point.series;
  r.parameters = point.parameters.is_object() ? point.parameters : point_parameters(point.scenario);
  for (const auto& note : point.what_if) {
    r.warnings.push_back(std::string(kWhatIfPrefix) + ": " + note);
  }
  return r;
}

// Adds `more` to the record's warnings, each once.
void add_warnings(SweepRecord& r, const std::vector<std::string>& more) {
  for (const auto& w : more) {
    if (std::find(r.warnings.begin(), r.warnings.end(), w) == r.warnings.end()) {
      r.warnings.push_back(w);
    }
  }
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
      add_warnings(r, scenario->warnings);
      return r;
    }
  }
  return std::nullopt;
}

namespace {

// The records an earlier run left in `dir`, a torn last line cut off; the CSV is rebuilt from
// them (it may have missed the last append when the sweep was killed in between).
ResultsFile resume(const std::string& dir, const SweepOptions& options,
                   const std::vector<std::string>& optional) {
  ResultsFile existing = read_results(jsonl_path(dir), true);
  if (existing.torn_bytes > 0 && options.progress) {
    *options.progress << "sweep: cut off an incomplete last line (" << existing.torn_bytes
                      << " bytes) of " << jsonl_path(dir) << "\n";
  }
  std::string csv = csv_append_header(optional);
  for (const auto& r : latest_per_key(existing.records)) csv += csv_append_row(r, optional);
  write_file_atomically(csv_path(dir), csv);
  return existing;
}

// Keys of the complete records that count as done: with a build given, only that build's.
std::unordered_set<std::string> done_keys(const ResultsFile& existing,
                                          const SweepOptions& options) {
  std::unordered_set<std::string> done;
  for (const auto& r : existing.records) {
    if (r.status == kStatusBounded && !options.bound) continue;  // simulated on request
    if (r.done() && (options.build.empty() || r.build == options.build)) done.insert(r.key);
  }
  return done;
}

// Points of this shard recorded complete by another build (so evaluated again).
std::size_t other_build_count(const ResultsFile& existing,
                              const std::unordered_set<std::string>& done,
                              const std::vector<std::string>& keys) {
  std::unordered_set<std::string> stale;
  for (const auto& r : existing.records) {
    if (r.done() && !done.count(r.key)) stale.insert(r.key);
  }
  const std::unordered_set<std::string> mine(keys.begin(), keys.end());
  std::size_t n = 0;
  for (const auto& k : stale) n += mine.count(k);
  return n;
}

// Removes the records of points that are not in the sweep any more (an edited base scenario or
// axis gives its points new keys); returns how many.
std::size_t drop_stale(std::vector<SweepRecord>& records,
                       const std::unordered_map<std::string, RunSize>& sweep_keys) {
  const auto stale = [&](const SweepRecord& r) { return !sweep_keys.count(r.key); };
  const auto n = std::count_if(records.begin(), records.end(), stale);
  records.erase(std::remove_if(records.begin(), records.end(), stale), records.end());
  return static_cast<std::size_t>(n);
}

// A record's time to train, GPU-hours and cost from its point's current tokens and the current
// price: a result reused after a token or price edit (neither is in the key) is up to date.
void refresh_derived_metrics(std::vector<SweepRecord>& records,
                             const std::unordered_map<std::string, RunSize>& sweep_keys,
                             double usd_per_gpu_hour) {
  for (auto& r : records) {
    if (r.status == kStatusOk)
      add_derived_metrics(r.metrics, sweep_keys.at(r.key), usd_per_gpu_hour);
  }
}

// DIR/sweep.json: what the sweep is, for merge, plots and summaries.
void write_sweep_meta(const SweepSpec& spec, const SweepOptions& options,
                      const SweepOutcome& outcome) {
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
  meta["base_parameters"] = sweep_parameters(spec, spec.base);
  write_file_atomically(options.out_dir + "/sweep.json", meta.dump(2) + "\n");
}

// Screens the points of a shard in order and evaluates the rest in child processes,
// appending each record as it is decided.
class PointRunner {
 public:
  PointRunner(const SweepSpec& spec, const SweepOptions& options, const FeasibilityCheck& feasible,
              const BoundCheck& bound, const std::vector<SweepPoint>& points,
              const std::vector<std::string>& keys, const std::unordered_set<std::string>& done,
              Progress& progress)
      : spec_(spec),
        options_(options),
        feasible_(feasible),
        bound_(bound),
        bounding_(bound && options.bound && spec.ranking.top_given && options.evaluator == "run"),
        thresholds_(spec.ranking.top),
        points_(points),
        keys_(keys),
        done_(done),
        progress_(progress),
        dir_(options.out_dir),
        work_(options.out_dir + "/.points"),
        optional_(optional_columns(sweep_parameters(spec, spec.base))) {}

  // The ok records an earlier run left (a ranked sweep's thresholds start from them).
  void already_ok(const std::vector<SweepRecord>& records);
  // False when the pool stopped early.
  bool run();
  std::size_t evaluated() const { return evaluated_; }
  const std::string& work_dir() const { return work_; }

 private:
  std::optional<std::pair<std::size_t, ProcessJob>> next();
  std::optional<std::pair<std::size_t, ProcessJob>> next_by_bound();
  bool screen_all();
  std::pair<std::size_t, ProcessJob> job(std::size_t i, Scenario&& scenario);
  void finished(std::size_t i, ProcessResult&& result);
  void append(const SweepRecord& r);
  std::string out_file(std::size_t i) const { return work_ + "/" + keys_[i] + ".out.json"; }

  struct Pending {
    Scenario scenario;
    std::string file;
  };
  const SweepSpec& spec_;
  const SweepOptions& options_;
  const FeasibilityCheck& feasible_;
  const BoundCheck& bound_;
  const bool bounding_;
  TopThresholds thresholds_;
  // A ranked sweep's points to evaluate, by bound (lowest first, then index), and what they
  // would be at their bound.
  struct Candidate {
    std::size_t i = 0;
    double bound_s = 0;  // 0: none
    nlohmann::json best_case;
    std::optional<Scenario> scenario;
  };
  std::vector<Candidate> candidates_;
  const std::vector<SweepPoint>& points_;
  const std::vector<std::string>& keys_;
  const std::unordered_set<std::string>& done_;
  Progress& progress_;
  const std::string dir_, work_;
  const std::vector<std::string> optional_;  // the CSV's optional parameter columns
  std::map<std::size_t, Pending> pending_;
  std::size_t cursor_ = 0;
  std::size_t evaluated_ = 0;
};

void PointRunner::already_ok(const std::vector<SweepRecord>& records) {
  const std::unordered_set<std::string> mine(keys_.begin(), keys_.end());
  for (const auto& r : latest_per_key(records)) {
    if (r.status == kStatusOk && done_.count(r.key) && mine.count(r.key)) thresholds_.add(r);
  }
}

bool PointRunner::run() {
  fs::create_directories(work_);
  if (bounding_ && !screen_all()) return false;
  PoolOptions pool;
  pool.parallel = options_.jobs;
  pool.timeout_s = options_.point_timeout_s;
  pool.stop = options_.stop;
  pool.tick = [&] { progress_.tick(); };
  return run_processes([this] { return bounding_ ? next_by_bound() : next(); },
                       [this](std::size_t i, ProcessResult&& r) { finished(i, std::move(r)); },
                       pool);
}

void PointRunner::append(const SweepRecord& r) {
  append_record(jsonl_path(dir_), to_json_line(r));
  append_record(csv_path(dir_), csv_append_row(r, optional_));
  progress_.record(r.status);
}

// The next point that needs a child; points screened out on the way are recorded.
std::optional<std::pair<std::size_t, ProcessJob>> PointRunner::next() {
  while (cursor_ < points_.size()) {
    if (options_.stop && *options_.stop) return std::nullopt;
    const std::size_t i = cursor_++;
    if (done_.count(keys_[i])) continue;
    std::optional<Scenario> scenario;
    if (auto r = screen_point(spec_, points_[i], keys_[i], feasible_, scenario, options_.build)) {
      append(*r);
      continue;
    }
    return job(i, std::move(*scenario));
  }
  return std::nullopt;
}

std::pair<std::size_t, ProcessJob> PointRunner::job(std::size_t i, Scenario&& scenario) {
  const std::string file = work_ + "/" + keys_[i] + ".json";
  write_file_atomically(file, points_[i].scenario.dump(2) + "\n");
  std::error_code ec;
  fs::remove(out_file(i), ec);  // left by an interrupted run
  ProcessJob job;
  job.argv = evaluator_argv(options_.executable, options_.evaluator, file, out_file(i),
                            options_.max_memory);
  job.delay_ms = options_.test_delay_ms;
  pending_[i] = Pending{std::move(scenario), file};
  return std::make_pair(i, std::move(job));
}

// A ranked sweep: every point screened (those decided recorded), the rest ordered by bound.
// False when stopped.
bool PointRunner::screen_all() {
  for (std::size_t i = 0; i < points_.size(); ++i) {
    if (options_.stop && *options_.stop) return false;
    if (done_.count(keys_[i])) continue;
    std::optional<Scenario> scenario;
    if (auto r = screen_point(spec_, points_[i], keys_[i], feasible_, scenario, options_.build)) {
      append(*r);
      continue;
    }
    Candidate c;
    c.i = i;
    // A point with step-level faults is simulated whatever its bound: a fault can hang it.
    const bool faults = points_[i].scenario.contains("faults");
    c.best_case = faults ? nlohmann::json::object() : bound_(*scenario);
    if (c.best_case.contains("step_time_s")) {
      c.bound_s = c.best_case["step_time_s"].get<double>();
      add_derived_metrics(c.best_case, *scenario, spec_.ranking.usd_per_gpu_hour);
    }
    c.scenario = std::move(scenario);
    candidates_.push_back(std::move(c));
  }
  // Points without a bound first (they can never be skipped), then by bound: the best points
  // are known early, which bounds the most of the rest.
  std::stable_sort(candidates_.begin(), candidates_.end(),
                   [](const Candidate& a, const Candidate& b) { return a.bound_s < b.bound_s; });
  return true;
}

// The next candidate by bound that may still enter a table's top; those that cannot are
// recorded bounded.
std::optional<std::pair<std::size_t, ProcessJob>> PointRunner::next_by_bound() {
  while (cursor_ < candidates_.size()) {
    if (options_.stop && *options_.stop) return std::nullopt;
    Candidate& c = candidates_[cursor_++];
    if (c.bound_s > 0 && thresholds_.excludes(c.best_case)) {
      SweepRecord r = record_for(points_[c.i], keys_[c.i], options_.build);
      mark_bounded(r, c.best_case, spec_.ranking.top);
      add_warnings(r, c.scenario->warnings);
      append(r);
      continue;
    }
    return job(c.i, std::move(*c.scenario));
  }
  return std::nullopt;
}

void PointRunner::finished(std::size_t i, ProcessResult&& result) {
  Pending p = std::move(pending_.at(i));
  pending_.erase(i);
  const Evaluation e = interpret_child(result, out_file(i));
  SweepRecord r = record_for(points_[i], keys_[i], options_.build);
  r.status = e.status;
  r.reason = e.reason;
  r.metrics = e.metrics;
  r.breakdown = e.breakdown;
  add_warnings(r, p.scenario.warnings);
  add_warnings(r, e.warnings);
  if (r.status == kStatusOk) {
    add_derived_metrics(r.metrics, p.scenario, spec_.ranking.usd_per_gpu_hour);
    thresholds_.add(r);
  }
  append(r);
  ++evaluated_;
  std::error_code ec;
  fs::remove(p.file, ec);
  fs::remove(out_file(i), ec);
}

// The shard's records (the latest per key) into the outcome, with counts by status.
void collect(SweepOutcome& outcome, std::vector<SweepRecord> records,
             const std::vector<std::string>& keys) {
  const std::unordered_set<std::string> mine(keys.begin(), keys.end());
  for (auto& r : records) {
    if (!mine.count(r.key)) continue;
    if (r.status == kStatusOk) ++outcome.ok;
    if (r.status == kStatusInvalid) ++outcome.invalid;
    if (r.status == kStatusInfeasible) ++outcome.infeasible;
    if (r.status == kStatusFailed) ++outcome.failed;
    if (r.status == kStatusBounded) ++outcome.bounded;
    outcome.records.push_back(std::move(r));
  }
}

}  // namespace

SweepOutcome run_sweep(const SweepSpec& spec, const SweepOptions& options,
                       const FeasibilityCheck& feasible, const BoundCheck& bound) {
  const auto start = Clock::now();
  SweepOutcome outcome;
  const std::string& dir = options.out_dir;
  fs::create_directories(dir);
  DirectoryLock lock(dir);

  std::vector<SweepPoint> all = enumerate_points(spec);
  outcome.points_total = all.size();
  // Every point's key (all shards, by enumeration index) and what its derived metrics depend on.
  std::vector<std::string> all_keys;
  all_keys.reserve(all.size());
  std::unordered_map<std::string, RunSize> sweep_keys;
  for (const auto& p : all) {
    all_keys.push_back(point_key(p.scenario, options.evaluator));
    sweep_keys[all_keys.back()] = run_size(p.scenario);
  }
  const std::vector<SweepPoint> points =
      shard_points(std::move(all), options.shard, options.shards);
  outcome.points_in_shard = points.size();
  std::vector<std::string> keys;
  keys.reserve(points.size());
  for (const auto& p : points) keys.push_back(all_keys.at(p.index));

  const ResultsFile existing =
      resume(dir, options, optional_columns(sweep_parameters(spec, spec.base)));
  const std::unordered_set<std::string> done = done_keys(existing, options);
  write_sweep_meta(spec, options, outcome);
  for (const auto& k : keys) outcome.already_done += done.count(k);
  outcome.other_build = other_build_count(existing, done, keys);
  if (outcome.other_build > 0 && options.progress) {
    *options.progress << "sweep: " << outcome.other_build
                      << " points were evaluated by another clustersim build; evaluating them "
                         "again\n";
  }

  Progress progress(options.progress, options.progress_style, points.size(), outcome.already_done);
  PointRunner runner(spec, options, feasible, bound, points, keys, done, progress);
  runner.already_ok(existing.records);
  outcome.interrupted = !runner.run() || (options.stop != nullptr && *options.stop != 0);
  outcome.evaluated = runner.evaluated();
  progress.finish();

  std::vector<SweepRecord> records = latest_per_key(read_results(jsonl_path(dir), false).records);
  if (!outcome.interrupted) {
    outcome.stale = drop_stale(records, sweep_keys);
    refresh_derived_metrics(records, sweep_keys, spec.ranking.usd_per_gpu_hour);
    if (outcome.stale > 0 && options.progress) {
      *options.progress << "sweep: dropped " << outcome.stale << " results of points no longer in "
                        << "this sweep (its base scenario or axes changed since they ran)\n";
    }
    write_results(dir, records);
    std::error_code ec;
    fs::remove_all(runner.work_dir(), ec);
  }
  collect(outcome, std::move(records), keys);
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
