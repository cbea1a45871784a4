#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

// The shipped before-scenario with a given step time (no step simulation) and `faults_patch`
// merged into its faults section, written to `path`.
void write_scenario(const fs::path& path, const nlohmann::json& faults_patch) {
  nlohmann::json s = nlohmann::json::parse(
      read(fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios/campaign-seed-before.json"));
  s["campaign"]["step_time_s"] = 4.659;
  s["campaign"]["mfu"] = 0.29;
  s["faults"].merge_patch(faults_patch);
  std::ofstream(path) << s.dump(2);
}

int run(const std::string& args, const fs::path& err) {
  const std::string cmd =
      std::string(CLUSTERSIM_BINARY) + " campaign " + args + " > /dev/null 2> " + err.string();
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("clustersim campaign writes the summary, the monitoring series, alerts and a plot",
          "[slow]") {
  const fs::path dir = fs::temp_directory_path() / "clustersim-campaign-cli-ok";
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_scenario(dir / "s.json", nlohmann::json::object());
  const std::string out = " --json " + (dir / "out.json").string() + " --csv " +
                          (dir / "m.csv").string() + " --alerts " + (dir / "a.csv").string() +
                          " --svg " + (dir / "p.svg").string();
  REQUIRE(run((dir / "s.json").string() + " --trials 20 --seed 3" + out, dir / "err") == 0);
  const auto j = nlohmann::json::parse(read(dir / "out.json"));
  for (const char* k : {"mean", "p10", "p50", "p90"}) CHECK(j["days"].contains(k));
  CHECK(j["failures"].contains("total"));
  CHECK(j["failures"]["by_cause"].is_object());
  CHECK(j["goodput"].get<double>() > 0.5);
  CHECK(j["goodput"].get<double>() <= 1.0);
  CHECK(j["cost_usd"].get<double>() > 0);
  CHECK(j["trials"] == 20);
  CHECK(j["seed"] == 3);
  CHECK(read(dir / "m.csv").rfind("time_s,day,phase,step_time_s,mfu,gpu_util_pct", 0) == 0);
  CHECK(read(dir / "a.csv").rfind("time_s,day,metric,level", 0) == 0);
  CHECK(read(dir / "p.svg").find("<svg") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("clustersim campaign rejects a bad fault with exit 2, the path, and no output",
          "[slow]") {
  const fs::path dir = fs::temp_directory_path() / "clustersim-campaign-cli-bad";
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_scenario(dir / "bad.json", nlohmann::json::parse(R"({"failure_rates": {"causes": {"nic":
                                           {"per_nic_hour": -1}}}})"));
  const std::string out = " --json " + (dir / "out.json").string() + " --csv " +
                          (dir / "m.csv").string() + " --svg " + (dir / "p.svg").string();
  CHECK(run((dir / "bad.json").string() + " --trials 5" + out, dir / "err") == 2);
  CHECK_THAT(read(dir / "err"),
             Catch::Contains("bad.json:/faults/failure_rates/causes/nic/per_nic_hour"));
  CHECK(!fs::exists(dir / "out.json"));
  CHECK(!fs::exists(dir / "m.csv"));
  CHECK(!fs::exists(dir / "p.svg"));
  fs::remove_all(dir);
}
