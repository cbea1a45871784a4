// sweep/regress: the baseline's scenarios found, hashed and compared; the report's forms.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "core/data_root.hpp"
#include "core/json_reader.hpp"
#include "sweep/regress.hpp"
#include "sweep/results.hpp"
#include "tests/tools/cli_runner.hpp"

using namespace clustersim;
using namespace clustersim::sweep;
using clustersim::test::cli_scratch;
using clustersim::test::read_text;
using clustersim::test::write_text;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kSeed = std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/seed-dp-64.json";

ScenarioRun ok_run(const std::string& hash, json metrics) {
  ScenarioRun run;
  run.hash = hash;
  run.evaluation.status = kStatusOk;
  run.evaluation.metrics = std::move(metrics);
  return run;
}

}  // namespace

TEST_CASE("the regression diff names the scenario and metric beyond tolerance") {
  Baseline b;
  b.metrics = {"mfu", "step_time_s"};
  b.tolerance_pct = 1;
  BaselineEntry e;
  e.scenario = "scenarios/seed-optimized-1024.json";
  e.values = {{"mfu", 0.46}, {"step_time_s", 1.20}};
  b.entries.push_back(e);
  ScenarioRun now;
  now.evaluation.status = kStatusOk;
  now.evaluation.metrics = {{"mfu", 0.44}, {"step_time_s", 1.205}};
  const RegressReport report = compare_with_baseline(b, {now}, std::nullopt, "clustersim 1");
  REQUIRE(report.rows.size() == 2);
  // MFU 0.46 -> 0.44 is -4.35%: beyond 1%. Step time +0.42%: within.
  CHECK_FALSE(report.rows[0].pass);
  CHECK(report.rows[0].change_pct == Approx(-100.0 * 0.02 / 0.46));
  CHECK(report.rows[1].pass);
  // A baseline without a scenario hash cannot tell what changed.
  CHECK_THAT(report.rows[0].message, Catch::Contains("cause unknown"));
  const std::string text = format_report(report);
  CHECK_THAT(text, Catch::Contains("seed-optimized-1024") && Catch::Contains("mfu") &&
                       Catch::Contains("FAIL") && Catch::Contains("-4.35%"));
  const std::string xml = junit_xml(report);
  CHECK_THAT(
      xml, Catch::Contains("tests=\"2\" failures=\"1\"") &&
               Catch::Contains("<testcase classname=\"regress.seed-optimized-1024\" name=\"mfu\""));
  SECTION("a wider tolerance from the command line passes it") {
    CHECK(compare_with_baseline(b, {now}, 5.0, "clustersim 1").passed());
  }
}
TEST_CASE("columns are as wide as their widest cell, so long names never touch the values") {
  RegressReport report;
  Comparison c;
  c.scenario = "scenarios/a-rather-long-scenario-name-for-the-table.json";
  c.metric = "memory_per_gpu_GiB";
  c.baseline = 21.7154;
  c.current = 21.7154;
  c.pass = true;
  report.rows.push_back(c);
  c.scenario = "s.json";
  c.metric = "mfu";
  c.baseline = 0.5;
  c.current = 0.5;
  report.rows.push_back(c);
  const std::string text = format_report(report);
  CHECK_THAT(text, !Catch::Contains("GiB21") && Catch::Contains("memory_per_gpu_GiB  21.7154"));
  // Every value of the "baseline" column starts where its header does.
  std::vector<std::string> lines;
  std::size_t from = 0;
  for (std::size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1)
    lines.push_back(text.substr(from, nl - from));
  REQUIRE(lines.size() == 4);  // header, two rows, summary
  const std::size_t column = lines[0].find("baseline");
  CHECK(lines[1].find("21.7154") == column);
  CHECK(lines[2].find("50.000%") == column);
}

TEST_CASE("a failure says whether the scenario was edited or the simulator changed") {
  BaselineEntry entry;
  entry.scenario = "x.json";
  entry.scenario_hash = "00000000000000aa";
  entry.simulator = "clustersim 0.1.0 (commit 111111111111)";
  const std::string now = "clustersim 0.2.0 (commit 222222222222)";
  CHECK(change_cause(entry, ok_run("00000000000000bb", {}), now) ==
        "scenario edited since the baseline");
  CHECK(change_cause(entry, ok_run("00000000000000aa", {}), now) ==
        "scenario unchanged: simulator changed (baseline clustersim 0.1.0 (commit "
        "111111111111), now clustersim 0.2.0 (commit 222222222222))");
  SECTION("the same version string points at local changes or calibration data") {
    CHECK_THAT(change_cause(entry, ok_run("00000000000000aa", {}), entry.simulator),
               Catch::StartsWith("scenario unchanged: the simulator or its calibration data"));
  }
  SECTION("a baseline without hashes says unknown") {
    entry.scenario_hash.clear();
    CHECK_THAT(change_cause(entry, ok_run("00000000000000aa", {}), now),
               Catch::StartsWith("cause unknown"));
  }
  SECTION("an unrecorded simulator is unknown") {
    entry.simulator.clear();
    CHECK_THAT(change_cause(entry, ok_run("00000000000000aa", {}), now),
               Catch::Contains("baseline unknown, now clustersim 0.2.0"));
  }
}

TEST_CASE("the breakdown delta names the components that moved most") {
  // Recorded 1.6 s compute, 0.2 s DP, 0.2 s bubble; now DP +0.3 s, bubble +0.05 s.
  const std::map<std::string, double> recorded = {
      {"compute_s", 1.6}, {"dp_s", 0.2}, {"bubble_s", 0.2}};
  const json current = {{"compute_s", 1.6}, {"dp_s", 0.5}, {"bubble_s", 0.25}};
  CHECK(breakdown_delta(recorded, current) ==
        "breakdown moved most: dp_s +0.3000 s (0.2000 -> 0.5000), bubble_s +0.0500 s (0.2000 "
        "-> 0.2500)");
  CHECK(breakdown_delta(recorded, json{{"compute_s", 1.6}, {"dp_s", 0.2}, {"bubble_s", 0.2}}) ==
        "breakdown unchanged");
  CHECK(breakdown_delta({}, current).empty());
  CHECK(breakdown_delta(recorded, json::object()).empty());
  SECTION("it is part of the failure message of a moved metric") {
    Baseline b;
    b.metrics = {"step_time_s"};
    BaselineEntry e;
    e.scenario = "x.json";
    e.values = {{"step_time_s", 2.0}};
    e.breakdown = recorded;
    b.entries.push_back(e);
    ScenarioRun run = ok_run("", {{"step_time_s", 2.35}});
    run.evaluation.breakdown = current;
    const RegressReport report = compare_with_baseline(b, {run}, std::nullopt, "v");
    REQUIRE(report.rows.size() == 1);
    CHECK_THAT(report.rows[0].message,
               Catch::Contains("+17.50%") && Catch::Contains("moved most: dp_s +0.3000 s"));
  }
}

TEST_CASE("a baseline's relative scenario path is looked up beside the baseline first") {
  const fs::path dir = cli_scratch("regress-locate");
  fs::create_directories(dir / "ci" / "scenarios");
  const std::string baseline = (dir / "ci" / "baseline.json").string();
  SECTION("a scenario beside the baseline") {
    fs::copy_file(kSeed, dir / "ci" / "scenarios" / "mine.json",
                  fs::copy_options::overwrite_existing);
    const ScenarioRun run = locate_scenario("scenarios/mine.json", baseline);
    CHECK(run.error.empty());
    CHECK(run.path == (dir / "ci" / "scenarios" / "mine.json").string());
    CHECK(run.hash.size() == 16);
  }
  SECTION("then in the data directory") {
    const ScenarioRun run = locate_scenario("scenarios/seed-dp-64.json", baseline);
    CHECK(run.error.empty());
    CHECK(run.path == data_root() + "/scenarios/seed-dp-64.json");
  }
  SECTION("neither: the error names both places") {
    const ScenarioRun run = locate_scenario("scenarios/gone.json", baseline);
    CHECK(run.path.empty());
    CHECK_THAT(run.error, Catch::Contains("neither next to the baseline file (" +
                                          (dir / "ci" / "scenarios" / "gone.json").string()) &&
                              Catch::Contains("nor in the data directory (" + data_root() +
                                              "/scenarios/gone.json)"));
  }
  SECTION("an unreadable scenario is an error of the run, not an exception") {
    write_text(dir / "ci" / "broken.json", "{\"name\": ");
    const ScenarioRun run = locate_scenario("broken.json", baseline);
    CHECK_THAT(run.error,
               Catch::StartsWith("scenario cannot be read: ") && Catch::Contains("broken.json"));
  }
  fs::remove_all(dir);
}

TEST_CASE("the scenario hash follows content and presets, not formatting") {
  const JsonDocument seed = JsonDocument::load(kSeed);
  json scenario = seed.root().raw();
  const std::string hash = scenario_hash(seed);
  CHECK(hash.size() == 16);
  // Reformatted (indentation, key order of the dump) and with the model preset inlined by
  // hand: the same scenario as loaded.
  const std::string model_file =
      data_root() + "/models/presets/" + scenario["model"].get<std::string>() + ".json";
  json inlined = scenario;
  inlined["model"] = json::parse(read_text(model_file));
  CHECK(scenario_hash(JsonDocument::parse(scenario.dump(4), "a.json")) == hash);
  CHECK(scenario_hash(JsonDocument::parse(inlined.dump(), "b.json")) == hash);
  SECTION("an edited field or preset value changes it") {
    json edited = scenario;
    edited["training"]["global_batch"] = 2048;
    CHECK(scenario_hash(JsonDocument::parse(edited.dump(), "c.json")) != hash);
    inlined["model"]["hidden_size"] = 10240;
    CHECK(scenario_hash(JsonDocument::parse(inlined.dump(), "d.json")) != hash);
  }
}

TEST_CASE("a missing scenario is one failing check and the others are still compared") {
  Baseline b;
  b.metrics = {"mfu", "step_time_s"};
  BaselineEntry found;
  found.scenario = "found.json";
  found.values = {{"mfu", 0.5}, {"step_time_s", 2.0}};
  BaselineEntry gone = found;
  gone.scenario = "gone.json";
  b.entries = {found, gone};
  ScenarioRun missing;
  missing.error = "scenario \"gone.json\" is neither next to the baseline file nor ...";
  const RegressReport report = compare_with_baseline(
      b, {ok_run("", {{"mfu", 0.5}, {"step_time_s", 2.0}}), missing}, std::nullopt, "v");
  REQUIRE(report.rows.size() == 3);  // two metrics of found.json, one check of gone.json
  CHECK(report.rows[0].pass);
  CHECK(report.rows[1].pass);
  CHECK_FALSE(report.rows[2].pass);
  CHECK(report.rows[2].metric == "scenario");
  const std::string xml = junit_xml(report);
  CHECK_THAT(xml,
             Catch::Contains("tests=\"3\" failures=\"1\"") &&
                 Catch::Contains("<testcase classname=\"regress.gone\" name=\"scenario\"") &&
                 Catch::Contains("neither next to the baseline file") &&
                 Catch::Contains(">gone.json scenario: scenario &quot;gone.json&quot; is neither"));
}

TEST_CASE("the update's metric check lists the unknown names and the reported ones") {
  std::vector<std::string> known;
  const std::vector<ScenarioRun> runs = {ok_run("", {{"mfu", 0.5}, {"step_time_s", 2.0}})};
  CHECK(unknown_metrics({"mfu", "mfu_pct", "step_time"}, runs, known) ==
        std::vector<std::string>{"mfu_pct", "step_time"});
  CHECK(known == std::vector<std::string>{"mfu", "step_time_s"});
  CHECK(unknown_metrics({"mfu"}, runs, known).empty());
}

TEST_CASE("an update records the hash, the simulator and the breakdown beside the values") {
  const JsonDocument original = JsonDocument::parse(
      R"({"metrics": ["mfu"], "scenarios": [{"scenario": "x.json", "tolerance_pct": 2,
          "scenario_hash": "00000000000000aa", "values": {"mfu": 0.1}}]})",
      "baseline.json");
  const Baseline b = parse_baseline(original);
  ScenarioRun run = ok_run("0123456789abcdef", {{"mfu", 0.5}, {"hfu", 0.6}});
  run.evaluation.breakdown = {{"compute_s", 1.5}};
  const json updated = updated_baseline(original, b, {run}, "clustersim 9 (commit x)");
  const json& entry = updated["scenarios"][0];
  CHECK(entry["values"] == json{{"mfu", 0.5}});
  CHECK(entry["tolerance_pct"] == 2);
  CHECK(entry["scenario_hash"] == "0123456789abcdef");
  CHECK(entry["simulator"] == "clustersim 9 (commit x)");
  CHECK(entry["breakdown"] == json{{"compute_s", 1.5}});
  // And it reads back.
  const Baseline again = parse_baseline(JsonDocument::parse(updated.dump(), "baseline.json"));
  CHECK(again.entries[0].scenario_hash == "0123456789abcdef");
  CHECK(again.entries[0].breakdown.at("compute_s") == 1.5);
}
