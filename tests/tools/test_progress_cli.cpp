// Progress of long commands as a CI job sees it (stderr piped to a file): a final count on
// stderr, nothing with --quiet, and stdout and the JSON files the same either way. The regress
// baseline uses the fast "check" evaluator; validate simulates one small published run.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/tools/cli_runner.hpp"

using namespace clustersim::test;
namespace fs = std::filesystem;

TEST_CASE("regress counts its scenarios on stderr and --quiet changes nothing else") {
  const fs::path dir = cli_scratch("progress-regress");
  const nlohmann::json baseline = {
      {"evaluator", "check"},
      {"metrics", {"tokens_per_step"}},
      // kSmall: 4 sequences of 2048 tokens a step; the other, 8 of them.
      {"scenarios",
       {{{"scenario", "small.json"}, {"values", {{"tokens_per_step", 4.0 * 2048}}}},
        {{"scenario", "double.json"}, {"values", {{"tokens_per_step", 8.0 * 2048}}}}}}};
  write_text(dir / "small.json", kSmall);
  nlohmann::json doubled = nlohmann::json::parse(kSmall);
  doubled["training"]["global_batch"] = 8;
  write_text(dir / "double.json", doubled.dump(2));
  write_text(dir / "baseline.json", baseline.dump(2));

  const CliRun loud = run_cli("regress --baseline baseline.json --jobs 2", dir);
  const CliRun quiet = run_cli("regress --baseline baseline.json --jobs 2 --quiet", dir);
  INFO(loud.out << loud.err);
  CHECK(loud.exit_code == 0);
  CHECK(quiet.exit_code == 0);
  // Two scenarios, both evaluated by the time the count ends; a log line, not a terminal one.
  CHECK(std::regex_search(loud.err, std::regex("(^|\n)regress: 2/2 scenarios, [0-9]+s\n$")));
  CHECK(loud.err.find('\r') == std::string::npos);
  CHECK(quiet.err.empty());
  CHECK(loud.out == quiet.out);
  CHECK(loud.out.find("regress: 2/2") == std::string::npos);  // never on stdout
  fs::remove_all(dir);
}

TEST_CASE("validate counts its simulations on stderr and its stdout and --json stay the same") {
  const fs::path dir = cli_scratch("progress-validate");
  const std::string args =
      "validate --suite published-runs --case sc21_t1_1.7B --date 2026-01-01 --json ";
  const CliRun loud = run_cli(args + "loud.json", dir);
  const CliRun quiet = run_cli(args + "quiet.json --quiet", dir);
  INFO(loud.out << loud.err);
  CHECK(loud.exit_code == quiet.exit_code);
  std::smatch m;
  REQUIRE(std::regex_search(loud.err, m,
                            std::regex("validate published-runs: ([0-9]+)/([0-9]+) simulations")));
  CHECK(m[1] == m[2]);  // the final line: every simulation counted
  CHECK(std::stoi(m[1]) >= 1);
  CHECK(quiet.err.empty());
  CHECK(loud.out == quiet.out);
  CHECK(read_text(dir / "loud.json") == read_text(dir / "quiet.json"));
  fs::remove_all(dir);
}

TEST_CASE("campaign refuses a missing tokens_total before it simulates the step") {
  // The scripted fault's time is checked against the run's length, which needs the simulated
  // step time: that message would come first if the step were simulated first.
  const fs::path dir = cli_scratch("progress-campaign");
  nlohmann::json scenario = nlohmann::json::parse(kSmall);
  scenario["faults"] = {
      {"events", {{{"kind", "gpu_slowdown"}, {"rank", 7}, {"speed_factor", 0.5}, {"from_h", 5}}}}};
  write_text(dir / "no-tokens.json", scenario.dump(2));
  const CliRun r = run_cli("campaign no-tokens.json --json out.json", dir);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("no-tokens.json:/training/tokens_total"));
  CHECK_THAT(r.err, !Catch::Contains("/faults"));
  CHECK_FALSE(fs::exists(dir / "out.json"));
  fs::remove_all(dir);
}
