// `clustersim regress` as a CI job outside the repository runs it: a baseline in its own
// directory with relative scenario paths, a missing scenario, --update's checks, and the
// cause of a failure. The fast "check" evaluator (no step simulation) keeps these quick.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/tools/cli_runner.hpp"

using clustersim::test::cli_scratch;
using clustersim::test::CliRun;
using clustersim::test::read_text;
using clustersim::test::run_cli;
using clustersim::test::shell_quote;
using clustersim::test::write_text;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Llama 2 70B (80 layers, hidden 8192, SwiGLU FFN 28672, 64 heads with 8 KV heads of 128,
// vocabulary 32000, untied embeddings, RMSNorm) counted by hand:
//   per layer: Q and O 2 x 8192^2 = 134,217,728; K and V 2 x 8192 x 1024 = 16,777,216;
//              MLP 3 x 8192 x 28672 = 704,643,072; two norms 2 x 8192 = 16,384
//              -> 855,654,400; x 80 layers = 68,452,352,000
//   embedding and output layer 2 x 32000 x 8192 = 524,288,000; final norm 8192
//   total 68,976,648,192 (the "69B" of the Llama 2 paper).
constexpr double kLlama2_70bParams = 68976648192.0;
// seed-dp-64: global batch 1024 sequences of 4096 tokens.
constexpr double kSeedTokensPerStep = 1024.0 * 4096.0;

struct CiDir {
  fs::path root;      // the job's working directory
  fs::path baseline;  // root/ci/baseline.json
};

// A CI checkout: ci/baseline.json and ci/scenarios/mine.json (a copy of seed-dp-64, a name
// the data directory does not have), entries as given.
CiDir ci_dir(const std::string& tag, const json& entries, const json& metrics) {
  CiDir d{cli_scratch(tag), {}};
  fs::remove_all(d.root / "ci");
  fs::create_directories(d.root / "ci" / "scenarios");
  fs::copy_file(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/seed-dp-64.json",
                d.root / "ci" / "scenarios" / "mine.json");
  d.baseline = d.root / "ci" / "baseline.json";
  const json doc = {{"evaluator", "check"},
                    {"tolerance_pct", 0.001},
                    {"metrics", metrics},
                    {"scenarios", entries}};
  write_text(d.baseline, doc.dump(2));
  return d;
}

json hand_values() {
  return {{"params_total", kLlama2_70bParams}, {"tokens_per_step", kSeedTokensPerStep}};
}

CliRun regress(const CiDir& d, const std::string& extra = "") {
  // A relative --baseline, run from the job's directory: paths resolve beside the baseline.
  return run_cli("regress --baseline ci/baseline.json --jobs 2 " + extra, d.root);
}

}  // namespace

TEST_CASE("a baseline in another directory finds its relative scenarios beside it") {
  const json metrics = {"params_total", "tokens_per_step"};
  const CiDir d = ci_dir("regress-beside",
                         {{{"scenario", "scenarios/mine.json"}, {"values", hand_values()}},
                          {{"scenario", "scenarios/seed-dp-64.json"}, {"values", hand_values()}}},
                         metrics);
  const CliRun r = regress(d);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("regress: all 4 checks within tolerance"));
  fs::remove_all(d.root);
}

TEST_CASE("a missing or unreadable scenario is one failing JUnit case, and the rest still run") {
  const json metrics = {"params_total", "tokens_per_step"};
  const CiDir d = ci_dir("regress-missing",
                         {{{"scenario", "scenarios/mine.json"}, {"values", hand_values()}},
                          {{"scenario", "scenarios/gone.json"}, {"values", hand_values()}},
                          {{"scenario", "broken.json"}, {"values", hand_values()}}},
                         metrics);
  write_text(d.root / "ci" / "broken.json", "{\"name\": \"broken\",");
  const CliRun r = regress(d, "--junit out/junit.xml");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("regress: 2 of 4 checks failed") &&
                        Catch::Contains("neither next to the baseline file") &&
                        Catch::Contains("scenario cannot be read"));
  const std::string xml = read_text(d.root / "out" / "junit.xml");
  CHECK_THAT(xml, Catch::Contains("tests=\"4\" failures=\"2\"") &&
                      Catch::Contains("classname=\"regress.gone\" name=\"scenario\"") &&
                      Catch::Contains("classname=\"regress.broken\" name=\"scenario\"") &&
                      Catch::Contains("ci/scenarios/gone.json"));
  fs::remove_all(d.root);
}

TEST_CASE("regress --update rejects metrics the evaluator does not report") {
  const CiDir d = ci_dir("regress-unknown", {{{"scenario", "scenarios/mine.json"}}},
                         {"params_total", "mfu_percent"});
  const std::string before = read_text(d.baseline);
  const CliRun r = regress(d, "--update");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("ci/baseline.json:/metrics") &&
                        Catch::Contains("mfu_percent") && Catch::Contains("tokens_per_step"));
  CHECK(read_text(d.baseline) == before);
  fs::remove_all(d.root);
}

TEST_CASE("a failure tells an edited scenario from a changed simulator") {
  const CiDir d = ci_dir("regress-cause", {{{"scenario", "scenarios/mine.json"}}},
                         {"params_total", "tokens_per_step"});
  const CliRun update = regress(d, "--update");
  INFO(update.out << update.err);
  REQUIRE(update.exit_code == 0);
  const json recorded = json::parse(read_text(d.baseline));
  const json& entry = recorded["scenarios"][0];
  CHECK(entry["values"]["params_total"] == kLlama2_70bParams);
  CHECK(entry["values"]["tokens_per_step"] == kSeedTokensPerStep);
  CHECK(std::regex_match(entry["scenario_hash"].get<std::string>(), std::regex("[0-9a-f]{16}")));
  CHECK_THAT(entry["simulator"].get<std::string>(), Catch::StartsWith("clustersim "));
  REQUIRE(regress(d).exit_code == 0);

  SECTION("the scenario edited: twice the global batch, twice the tokens") {
    const fs::path scenario = d.root / "ci" / "scenarios" / "mine.json";
    json s = json::parse(read_text(scenario));
    s["training"]["global_batch"] = 2048;
    write_text(scenario, s.dump(2));
    const CliRun r = regress(d);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("+100.00%") &&
                          Catch::Contains("scenario edited since the baseline"));
  }
  SECTION("the scenario as recorded but values of another simulator") {
    json b = recorded;
    b["scenarios"][0]["values"]["tokens_per_step"] = 4000000;
    b["scenarios"][0]["simulator"] = "clustersim 0.0.1 (commit 000000000000)";
    write_text(d.baseline, b.dump(2));
    const CliRun r = regress(d);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("scenario unchanged: simulator changed (baseline clustersim "
                                      "0.0.1 (commit 000000000000), now clustersim "));
  }
  SECTION("a baseline without a hash says unknown") {
    json b = recorded;
    b["scenarios"][0].erase("scenario_hash");
    b["scenarios"][0]["values"]["tokens_per_step"] = 4000000;
    write_text(d.baseline, b.dump(2));
    const CliRun r = regress(d);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("cause unknown"));
  }
  fs::remove_all(d.root);
}
