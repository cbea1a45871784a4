#include "core/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace clustersim {

namespace {

constexpr int kBarWidth = 20;                  // characters of the terminal bar
constexpr const char* kClearToEnd = "\x1b[K";  // ANSI: erase the rest of the line

std::string bar(std::size_t done, std::size_t total) {
  const double fraction = total > 0 ? static_cast<double>(done) / total : 1.0;
  const int filled = static_cast<int>(std::min(1.0, fraction) * kBarWidth);
  std::string out(1, '[');  // appended piece by piece: GCC 12 warns falsely on "[" + string
  out.append(static_cast<std::size_t>(filled), '#');
  out.append(static_cast<std::size_t>(kBarWidth - filled), '.');
  out += "] ";
  return out;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

}  // namespace

ProgressStyle progress_style(bool quiet, bool is_terminal) {
  if (quiet) return ProgressStyle::quiet;
  return is_terminal ? ProgressStyle::terminal : ProgressStyle::log;
}

ProgressStyle stderr_progress_style(bool quiet) {
  return progress_style(quiet, ::isatty(STDERR_FILENO) != 0);
}

double steady_clock_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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

std::optional<double> eta_s(std::size_t fresh_done, std::size_t remaining, double elapsed_s) {
  if (fresh_done == 0) return std::nullopt;
  return elapsed_s / static_cast<double>(fresh_done) * static_cast<double>(remaining);
}

std::string progress_text(const std::string& label, const std::string& unit, std::size_t done,
                          std::size_t total, double elapsed_s, std::optional<double> eta,
                          const std::string& detail) {
  std::string out = label + ": " + std::to_string(done) + "/" + std::to_string(total) + " " + unit;
  if (!detail.empty()) out += ", " + detail;
  out += ", " + duration_text(elapsed_s);
  if (eta && done < total) out += ", ETA " + duration_text(*eta);
  return out;
}

ProgressReporter::ProgressReporter(std::ostream& os, ProgressStyle style, std::string label,
                                   std::string unit, std::size_t total, std::size_t already_done,
                                   ProgressClock clock)
    : os_(os),
      style_(style),
      label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      done_(already_done),
      first_done_(already_done),
      clock_(std::move(clock)),
      start_s_(clock_()),
      last_draw_s_(start_s_) {
  if (style_ == ProgressStyle::terminal) draw(false);
}

ProgressReporter::~ProgressReporter() {
  // Unwinding (an error on its way to the user): end the terminal line so the message that
  // follows starts on its own.
  if (line_open_) os_ << "\n" << std::flush;
}

void ProgressReporter::advance(std::size_t items) {
  done_ += items;
  tick();
}

void ProgressReporter::set_detail(std::string detail) {
  detail_ = std::move(detail);
}

void ProgressReporter::tick() {
  if (finished_ || style_ == ProgressStyle::quiet) return;
  const double now = clock_();
  const double interval = style_ == ProgressStyle::terminal ? kTerminalRedrawS : kLogIntervalS;
  if (now - last_draw_s_ >= interval) draw(false);
}

void ProgressReporter::finish() {
  if (finished_ || style_ == ProgressStyle::quiet) return;
  draw(true);
  finished_ = true;
}

std::string ProgressReporter::text(double now) const {
  const double elapsed = now - start_s_;
  return progress_text(label_, unit_, done_, total_, elapsed,
                       eta_s(done_ - first_done_, total_ - std::min(done_, total_), elapsed),
                       detail_);
}

void ProgressReporter::draw(bool final) {
  const double now = clock_();
  last_draw_s_ = now;
  if (style_ == ProgressStyle::log) {
    os_ << text(now) << "\n" << std::flush;
    return;
  }
  os_ << "\r" << bar(done_, total_) << text(now) << kClearToEnd;
  line_open_ = !final;
  os_ << (final ? "\n" : "") << std::flush;
}

ProgressTask::ProgressTask(std::ostream& os, ProgressStyle style, std::string label,
                           ProgressClock clock)
    : os_(os),
      style_(style),
      label_(std::move(label)),
      clock_(std::move(clock)),
      start_s_(clock_()) {}

ProgressTask::~ProgressTask() {
  if (line_open_) os_ << "\r" << kClearToEnd << std::flush;
}

void ProgressTask::describe(std::string description) {
  description_ = std::move(description);
  if (style_ != ProgressStyle::terminal || finished_) return;
  os_ << "\r" << label_ << ": " << description_ << " ..." << kClearToEnd << std::flush;
  line_open_ = true;
}

void ProgressTask::finish() {
  if (finished_ || style_ == ProgressStyle::quiet) return;
  finished_ = true;
  const double elapsed = clock_() - start_s_;
  if (line_open_) os_ << "\r" << kClearToEnd;
  line_open_ = false;
  if (elapsed >= kSlowTaskS) {
    os_ << label_ << ": " << description_ << ": done in " << seconds_text(elapsed) << "\n";
  }
  os_ << std::flush;
}

}  // namespace clustersim
