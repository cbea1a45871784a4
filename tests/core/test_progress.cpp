// The progress reporter of long commands: its text, its ETA, how often it writes to a log,
// and silence when quiet. The clock is stepped by hand.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "core/progress.hpp"

using namespace clustersim;

namespace {

// A clock the test moves: returns `now`.
struct ManualClock {
  double now = 100.0;  // any origin: the reporter counts from its construction
  ProgressClock clock() {
    return [this] { return now; };
  }
};

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("durations read as seconds, minutes and seconds, or hours and minutes") {
  CHECK(duration_text(7.4) == "7s");
  CHECK(duration_text(125) == "2m05s");   // 2 x 60 + 5
  CHECK(duration_text(3720) == "1h02m");  // 3600 + 2 x 60
  CHECK(duration_text(-1) == "?");
}

TEST_CASE("the ETA is the mean time per item done so far times the items left") {
  CHECK_FALSE(eta_s(0, 10, 5.0).has_value());
  // 3 items in 12 s: 4 s each; 7 left -> 28 s.
  CHECK(*eta_s(3, 7, 12.0) == Approx(28.0));
  CHECK(*eta_s(5, 0, 9.0) == 0.0);
}

TEST_CASE("the progress text gives done/total, the time so far and the time left") {
  CHECK(progress_text("validate", "cases", 3, 10, 12.0, 28.0) ==
        "validate: 3/10 cases, 12s, ETA 28s");
  CHECK(progress_text("sweep", "points", 10, 10, 61.0, 0.0, "ok 9 failed 1") ==
        "sweep: 10/10 points, ok 9 failed 1, 1m01s");
  CHECK(progress_text("regress", "scenarios", 0, 4, 0.2, std::nullopt) ==
        "regress: 0/4 scenarios, 0s");
}

TEST_CASE("items resumed from an earlier run count as done but not in the ETA") {
  ManualClock t;
  std::ostringstream os;
  ProgressReporter p(os, ProgressStyle::log, "sweep", "points", 10, 4, t.clock());
  t.now += 4;
  p.advance(2);  // 2 fresh items in 4 s: 2 s each; 10 - 6 = 4 left -> 8 s
  p.finish();
  CHECK(os.str() == "sweep: 6/10 points, 4s, ETA 8s\n");
}

TEST_CASE("in a log a progress line comes at most every few seconds, and one at the end") {
  ManualClock t;
  std::ostringstream os;
  ProgressReporter p(os, ProgressStyle::log, "validate", "cases", 20, 0, t.clock());
  CHECK(os.str().empty());  // nothing at the start
  for (int i = 0; i < 4; ++i) {
    t.now += 1;  // 1, 2, 3, 4 s: under kLogIntervalS
    p.advance();
  }
  CHECK(os.str().empty());
  t.now += 1;  // 5 s: the interval has passed
  p.advance();
  CHECK(os.str() == "validate: 5/20 cases, 5s, ETA 15s\n");  // 5 s / 5 x 15
  t.now += 4.9;                                              // 9.9 s: 4.9 s since the last line
  p.advance();
  CHECK(count_of(os.str(), "\n") == 1);
  t.now += 0.1;
  p.finish();
  p.finish();  // once only
  CHECK(os.str() ==
        "validate: 5/20 cases, 5s, ETA 15s\n"
        "validate: 6/20 cases, 10s, ETA 23s\n");  // 10 s / 6 x 14 = 23.3 s
  CHECK(os.str().find('\r') == std::string::npos);
}

TEST_CASE("on a terminal one line is rewritten in place and ends with a newline") {
  ManualClock t;
  std::ostringstream os;
  {
    ProgressReporter p(os, ProgressStyle::terminal, "regress", "scenarios", 2, 0, t.clock());
    t.now += 0.05;  // under kTerminalRedrawS: no redraw
    p.tick();
    CHECK(count_of(os.str(), "\r") == 1);  // the 0/2 line drawn at the start
    t.now += 1;
    p.advance();
    t.now += 1;
    p.advance();
    p.finish();
  }
  const std::string out = os.str();
  CHECK(count_of(out, "\r") == 4);  // start, two items, the final line
  CHECK_THAT(out, Catch::Contains("[##########..........] regress: 1/2 scenarios, 1s, ETA 1s"));
  CHECK_THAT(out, Catch::EndsWith("[####################] regress: 2/2 scenarios, 2s\x1b[K\n"));
  CHECK(count_of(out, "\n") == 1);
}

TEST_CASE("quiet progress writes nothing") {
  ManualClock t;
  std::ostringstream os;
  ProgressReporter p(os, ProgressStyle::quiet, "validate", "cases", 3, 0, t.clock());
  t.now += 60;
  p.advance(3);
  p.finish();
  ProgressTask task(os, ProgressStyle::quiet, "run", t.clock());
  task.describe("simulating 8 GPUs");
  t.now += 60;
  task.finish();
  CHECK(os.str().empty());
  CHECK(progress_style(true, true) == ProgressStyle::quiet);
  CHECK(progress_style(false, true) == ProgressStyle::terminal);
  CHECK(progress_style(false, false) == ProgressStyle::log);
}

TEST_CASE("a task is reported with its wall time only when it took a while") {
  ManualClock t;
  std::ostringstream os;
  SECTION("in a log, a quick task leaves no line") {
    ProgressTask task(os, ProgressStyle::log, "run", t.clock());
    task.describe("simulating 8 GPUs");
    t.now += 1.9;  // under kSlowTaskS
    task.finish();
    CHECK(os.str().empty());
  }
  SECTION("in a log, a slow task leaves one line with its time") {
    ProgressTask task(os, ProgressStyle::log, "run", t.clock());
    task.describe("simulating 2048 GPUs");
    t.now += 27.14;
    task.finish();
    CHECK(os.str() == "run: simulating 2048 GPUs: done in 27.1 s\n");
  }
  SECTION("on a terminal the description shows at once and a quick task is erased") {
    ProgressTask task(os, ProgressStyle::terminal, "run", t.clock());
    task.describe("simulating 8 GPUs");
    CHECK(os.str() == "\rrun: simulating 8 GPUs ...\x1b[K");
    t.now += 0.5;
    task.finish();
    CHECK(os.str() == "\rrun: simulating 8 GPUs ...\x1b[K\r\x1b[K");
  }
}
