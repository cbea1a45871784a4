// Progress of a long command, written to stderr: never to stdout, so that what a command prints
// and the files it writes are the same with and without it.
//
// Three styles: on a terminal one line rewritten in place ("\r") with done/total, the time so
// far and an estimate of the time left; in a log (stderr piped or redirected) a plain line at
// most every kLogIntervalS and one at the end, so that CI logs stay short; nothing when the
// user asked for quiet. The clock is injected, so that tests can step it by hand.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace clustersim {

enum class ProgressStyle { quiet, terminal, log };

// quiet when asked, else terminal or log.
ProgressStyle progress_style(bool quiet, bool is_terminal);
// progress_style for this process's stderr (isatty).
ProgressStyle stderr_progress_style(bool quiet);

// A monotonic clock in seconds (any origin); tests pass their own.
using ProgressClock = std::function<double()>;
double steady_clock_s();

// A terminal line is redrawn at most this often (s): ten times a second reads as live.
inline constexpr double kTerminalRedrawS = 0.1;
// A log gets a progress line at most this often (s), plus the final one.
inline constexpr double kLogIntervalS = 5.0;
// A task without a count (one step simulation) is reported when it took at least this (s).
inline constexpr double kSlowTaskS = 2.0;

// "7s", "2m05s", "1h02m"; "?" for a negative or infinite time.
std::string duration_text(double seconds);

// Time left, assuming the items still to do take as long as those done in this run:
// elapsed_s / fresh_done x remaining. nullopt before the first item is done.
std::optional<double> eta_s(std::size_t fresh_done, std::size_t remaining, double elapsed_s);

// "validate: 3/10 cases, 12s, ETA 28s" (", DETAIL" after the count when given; no ETA when
// nullopt or when everything is done).
std::string progress_text(const std::string& label, const std::string& unit, std::size_t done,
                          std::size_t total, double elapsed_s, std::optional<double> eta,
                          const std::string& detail = "");

// Counts items of known work as they finish. `already_done` items (a resumed sweep) count
// towards done but not towards the ETA. Not thread-safe: call from the thread that collects
// results (with parallel child processes, the parent as each child's answer arrives).
class ProgressReporter {
 public:
  ProgressReporter(std::ostream& os, ProgressStyle style, std::string label, std::string unit,
                   std::size_t total, std::size_t already_done = 0,
                   ProgressClock clock = steady_clock_s);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  void advance(std::size_t items = 1);
  // Text shown after the count (a sweep's ok/invalid/... tallies).
  void set_detail(std::string detail);
  // Time passed with nothing finished: redraws the terminal line when due.
  void tick();
  // The final line (in every style but quiet); later calls do nothing.
  void finish();

  std::size_t done() const { return done_; }

 private:
  void draw(bool final);
  std::string text(double now) const;

  std::ostream& os_;
  ProgressStyle style_;
  std::string label_, unit_, detail_;
  std::size_t total_, done_, first_done_;
  ProgressClock clock_;
  double start_s_;
  double last_draw_s_;
  bool finished_ = false;
  bool line_open_ = false;  // a terminal line without its newline yet
};

// One long piece of work without a count (a step simulation). On a terminal its description
// shows while it runs (set it with describe); at finish, when it took at least kSlowTaskS, a
// line "LABEL: DESCRIPTION: done in 27.1 s" ends it (terminal and log); a quicker one is erased
// from the terminal and never written to a log.
class ProgressTask {
 public:
  ProgressTask(std::ostream& os, ProgressStyle style, std::string label,
               ProgressClock clock = steady_clock_s);
  ~ProgressTask();
  ProgressTask(const ProgressTask&) = delete;
  ProgressTask& operator=(const ProgressTask&) = delete;

  // What is being done ("simulating 2048 GPUs, ..."); shown at once on a terminal.
  void describe(std::string description);
  void finish();

 private:
  std::ostream& os_;
  ProgressStyle style_;
  std::string label_, description_;
  ProgressClock clock_;
  double start_s_;
  bool finished_ = false;
  bool line_open_ = false;
};

}  // namespace clustersim
