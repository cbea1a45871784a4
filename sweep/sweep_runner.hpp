// Running a sweep: enumerate, screen, evaluate in parallel child processes, record, resume.
//
// Per point (of this shard), in enumeration order:
//   1. already recorded (a done record with its key in DIR/results.jsonl): skipped;
//   2. the scenario does not load: recorded "invalid" with the loader's message;
//   3. the feasibility check (the memory model) says no: recorded "infeasible" with the numbers;
//   4. otherwise evaluated by a child process (evaluator.hpp), `jobs` at a time.
// A ranked sweep (the sweep file's ranking gives "top" N, the "run" evaluator, bounding on)
// screens every point first, then evaluates them in the order of a lower bound on their step
// time (BoundCheck); once N points are ok, a point whose bound is worse than the N-th best of
// every ranked table's metric cannot enter any table's top N and is recorded "bounded" (with
// its bound) instead of evaluated. The tables are those of the full sweep; which points are
// bounded depends on the results known when a point's turn comes (with --jobs 1, on nothing
// else).
// Every record is appended whole (results.hpp). A sweep stopped by a signal or killed outright
// resumes where it was when run again with the same DIR; a finished sweep rewrites the results
// files sorted by point index. One sweep at a time may write a directory (an flock on
// DIR/.lock).
#pragma once

#include <csignal>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/progress.hpp"
#include "sweep/evaluator.hpp"
#include "sweep/results.hpp"
#include "sweep/sweep_spec.hpp"

namespace clustersim::sweep {

struct SweepOptions {
  std::string out_dir;
  int jobs = 1;
  int shard = 1;                  // this shard, 1-based
  int shards = 1;                 // points with shard_of(index, shards) == shard
  std::string executable;         // the clustersim binary that evaluates points
  std::string evaluator = "run";  // evaluator.hpp
  std::string max_memory;         // --max-memory of each "run" child; "" = the child's default
  // Identity of the evaluating build (executable_fingerprint()); records of other builds are
  // redone. Empty: every recorded point counts as done.
  std::string build;
  double point_timeout_s = 0;  // per evaluation; 0 = none
  // Where progress goes and how (core/progress.hpp: a bar on a terminal, a line every few
  // seconds on a pipe or file, nothing when quiet or without a stream).
  std::ostream* progress = nullptr;
  ProgressStyle progress_style = ProgressStyle::quiet;
  const volatile std::sig_atomic_t* stop = nullptr;  // set by a signal handler to stop
  unsigned test_delay_ms = 0;  // test hook: each child waits this long before evaluating
  // Bound points of a ranked sweep (see above); off: every point is evaluated, and points an
  // earlier run bounded are evaluated now.
  bool bound = true;
};

struct SweepOutcome {
  std::size_t points_total = 0;  // in the whole sweep
  std::size_t points_in_shard = 0;
  std::size_t already_done = 0;  // recorded by an earlier run
  std::size_t other_build = 0;   // recorded by another build, so evaluated again
  std::size_t evaluated = 0;     // children run by this call
  std::size_t stale = 0;         // earlier records of points no longer in the sweep, dropped
  std::size_t ok = 0, invalid = 0, infeasible = 0, failed = 0;  // over the shard's records
  std::size_t bounded = 0;
  bool interrupted = false;
  double wall_s = 0;
  std::vector<SweepRecord> records;  // this shard's records, sorted by index
};

// A hash of the file at `path` (an executable): fnv1a64_hex of its bytes.
std::string executable_fingerprint(const std::string& path);

// Parses "I/N" (1 <= I <= N). Throws std::invalid_argument with the reason.
std::pair<int, int> parse_shard(const std::string& text);

// The shard (1..shards) of the point with enumeration index `index`: a fixed hash of the index
// modulo `shards`, so that the split is deterministic and balanced even when expensive points
// recur on a regular stride.
int shard_of(std::size_t index, int shards);

// The points of `points` that belong to shard `shard` of `shards`.
std::vector<SweepPoint> shard_points(std::vector<SweepPoint> points, int shard, int shards);

// The record of a point decided without a child: invalid (scenario does not load) or
// infeasible (per `feasible`); nullopt when the point needs evaluating. `scenario` receives
// the loaded scenario when it loads. `build` goes into the record.
std::optional<SweepRecord> screen_point(const SweepSpec& spec, const SweepPoint& point,
                                        const std::string& key, const FeasibilityCheck& feasible,
                                        std::optional<Scenario>& scenario,
                                        const std::string& build = "");

// Runs (or resumes) the sweep. Throws std::runtime_error when DIR cannot be written or is
// locked by another sweep.
SweepOutcome run_sweep(const SweepSpec& spec, const SweepOptions& options,
                       const FeasibilityCheck& feasible, const BoundCheck& bound = {});

// Joins results of several runs (shards) into DIR: one record per key (results.hpp
// latest_per_key), sorted by index; writes DIR/results.jsonl and DIR/results.csv. `parts` are
// results directories or .jsonl files. Returns the merged records.
// The parameters of the base scenario of the sweep whose results are in `dir` (its sweep.json),
// for format_reference(); nullopt when unknown.
std::optional<nlohmann::json> reference_parameters(const std::string& dir);

std::vector<SweepRecord> merge_results(const std::string& out_dir,
                                       const std::vector<std::string>& parts);

}  // namespace clustersim::sweep
