#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "core/errors.hpp"
#include "input/scenario_loader.hpp"
#include "sweep/evaluator.hpp"
#include "sweep/ranking.hpp"
#include "sweep/regress.hpp"
#include "sweep/results.hpp"
#include "sweep/sweep_runner.hpp"
#include "sweep/sweep_spec.hpp"
#include "tests/sweep/sweep_spec_from.hpp"

using namespace clustersim;
using namespace clustersim::sweep;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kSource = CLUSTERSIM_SOURCE_DIR;
const std::string kBinary = CLUSTERSIM_BINARY;
const std::string kTinySweep = kSource + "/tests/sweep/data/tiny-sweep.json";

std::string make_temp_dir(const std::string& name) {
  std::string pattern =
      (fs::temp_directory_path() / ("clustersim-test-" + name + "-XXXXXX")).string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command line, capturing its output.
CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

using test::spec_from;

std::size_t count_status(const std::string& jsonl, const std::string& status) {
  std::size_t n = 0;
  for (const auto& r : read_results(jsonl, false).records) n += r.status == status;
  return n;
}

}  // namespace

TEST_CASE("FNV-1a 64 matches the reference test vectors") {
  // Test vectors from the FNV reference code (draft-eastlake-fnv, test suite).
  CHECK(fnv1a64("") == 0xcbf29ce484222325ULL);
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ULL);
  CHECK(fnv1a64_hex("a") == "af63dc4c8601ec8c");
}

TEST_CASE("a sweep enumerates every combination of its axes in a fixed order") {
  const SweepSpec spec = spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
      "axes": {"zero_stage": [1, 2], "micro_batch": [1, 2]}})");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 4);
  // micro_batch is the outer axis, zero_stage the inner one (the documented order).
  const std::vector<std::pair<int, int>> expected = {{1, 1}, {1, 2}, {2, 1}, {2, 2}};
  for (std::size_t i = 0; i < points.size(); ++i) {
    const json p = point_parameters(points[i].scenario);
    CHECK(points[i].index == i);
    CHECK(p["micro_batch"] == expected[i].first);
    CHECK(p["zero_stage"] == expected[i].second);
  }
  CHECK(points[3].label == "DP64 TP8 PP2 mb2 ZeRO-2");
  SECTION("context parallelism shows in the labels even when every point has the same") {
    // torchtitan's Llama 3.1 8B run at cp 2 (a validation case) as the base.
    const auto with_cp = enumerate_points(spec_from(R"({"base":
        "validation/suites/published-runs/torchtitan_t2_llama31_8b_8gpu_cp2_seq65536.scenario.json",
        "axes": {"zero_stage": [2, 3]}})"));
    REQUIRE(with_cp.size() == 2);
    for (const auto& p : with_cp) CHECK_THAT(p.label, Catch::Contains("CP2"));
  }
  CHECK(points[3].series == "TP8 PP2 mb2 ZeRO-2");
  SECTION("the same file gives the same points and keys every time") {
    const auto again = enumerate_points(spec);
    for (std::size_t i = 0; i < points.size(); ++i) {
      CHECK(point_key(again[i].scenario, "run") == point_key(points[i].scenario, "run"));
    }
  }
  SECTION("keys differ between points and between evaluators") {
    std::set<std::string> keys;
    for (const auto& p : points) keys.insert(point_key(p.scenario, "run"));
    CHECK(keys.size() == 4);
    CHECK(point_key(points[0].scenario, "run") != point_key(points[0].scenario, "check"));
  }
}

TEST_CASE("a run evaluator gets the sweep's memory budget, a check evaluator none") {
  // A run child is also quiet: the sweep shows the progress.
  using clustersim::sweep::evaluator_argv;
  const std::vector<std::string> run = {"cs",     "run",          "p.json",     "--json",
                                        "o.json", "--max-memory", "1073741824", "--quiet"};
  CHECK(evaluator_argv("cs", "run", "p.json", "o.json", "1073741824") == run);
  const std::vector<std::string> plain = {"cs", "run", "p.json", "--json", "o.json", "--quiet"};
  CHECK(evaluator_argv("cs", "run", "p.json", "o.json") == plain);
  const std::vector<std::string> check = {"cs", "check", "p.json", "--json", "o.json"};
  CHECK(evaluator_argv("cs", "check", "p.json", "o.json", "1073741824") == check);
}

TEST_CASE("layouts \"all\" gives every factorization of the GPU count") {
  // 64 = 2^6: tp = 2^a and pp = 2^b with a + b <= 6 gives 7 + 6 + ... + 1 = 28 layouts.
  const SweepSpec spec = spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
      "axes": {"gpus": [64], "layouts": "all"}})");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 28);
  for (const auto& p : points) {
    const json q = point_parameters(p.scenario);
    CHECK(q["dp"].get<int>() * q["tp"].get<int>() * q["pp"].get<int>() == 64);
    CHECK(q["vpp"] == 1);
  }
  // The base uses sequence parallelism; at tp 1 the sweep turns it off rather than produce
  // a scenario the loader must reject.
  CHECK(points[0].scenario["parallelism"]["tp"] == 1);
  CHECK(points[0].scenario["parallelism"]["sequence_parallel"] == false);
}

TEST_CASE("vpp \"all\" lists only virtual stage counts that divide the layers per stage") {
  // llama2-70b has 80 layers. pp 2: 40 layers per stage, whose divisors above 1 are
  // 2, 4, 5, 8, 10, 20, 40 -> with vpp 1, 8 layouts. pp 1 has no virtual stages.
  const SweepSpec spec = spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
      "axes": {"layouts": {"tp": [8], "pp": [1, 2], "vpp": "all"}}})");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 1 + 8);
  std::vector<int> vpps;
  for (const auto& p : points) {
    if (p.scenario["parallelism"]["pp"] == 2) vpps.push_back(p.scenario["parallelism"]["vpp"]);
  }
  CHECK(vpps == std::vector<int>{1, 2, 4, 5, 8, 10, 20, 40});
  for (const auto& p : points) {
    const bool interleaved = p.scenario["parallelism"]["vpp"].get<int>() > 1;
    CHECK((p.scenario["parallelism"]["schedule"] == "interleaved") == interleaved);
  }
}

TEST_CASE("a gpus axis without layouts keeps the base layout and grows the cluster") {
  const SweepSpec spec = spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
      "axes": {"gpus": [256, 2048]}})");
  const auto points = enumerate_points(spec);
  REQUIRE(points.size() == 2);
  // TP 8 x PP 2 = 16 GPUs per replica: dp = 256 / 16 = 16 and 2048 / 16 = 128.
  CHECK(points[0].scenario["parallelism"]["dp"] == 16);
  CHECK(points[1].scenario["parallelism"]["dp"] == 128);
  // The 128-node preset holds 1024 GPUs; 2048 need 256 nodes of 8.
  CHECK(points[1].scenario["cluster"]["nodes"] == 256);
  // The preset's citation of 128 nodes no longer holds; the grown count says where it is from.
  CHECK_THAT(points[1].scenario["cluster"]["sources"]["nodes"].get<std::string>(),
             Catch::StartsWith("256 nodes for the GPU count of a sweep point; h800-128x8-rail "
                               "has 128, cited as: Seed article"));
  std::optional<Scenario> loaded;
  CHECK_FALSE(screen_point(spec, points[1], "k", {}, loaded).has_value());
  REQUIRE(loaded.has_value());
  CHECK(loaded->gpus == 2048);
}

TEST_CASE("bad sweep files are rejected with the file and JSON pointer") {
  SECTION("an unknown axis suggests the nearest name") {
    try {
      spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
          "axes": {"micro_batches": [1, 2]}})");
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(e.pointer() == "/axes/micro_batches");
      CHECK(std::string(e.what()).find("micro_batch") != std::string::npos);
    }
  }
  SECTION("a repeated value") {
    CHECK_THROWS_WITH(spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
        "axes": {"zero_stage": [1, 1]}})"),
                      Catch::Contains("/axes/zero_stage/1") && Catch::Contains("twice"));
  }
  SECTION("a base scenario that does not exist") {
    CHECK_THROWS_WITH(spec_from(R"({"base": "scenarios/nope.json"})"),
                      Catch::Contains("/base") && Catch::Contains("nope.json"));
  }
  SECTION("an unknown cluster preset") {
    CHECK_THROWS_WITH(spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
        "axes": {"cluster": ["h800-128x8-rial"]}})"),
                      Catch::Contains("/axes/cluster/0") && Catch::Contains("h800-128x8-rail"));
  }
}

TEST_CASE("invalid points carry the loader's message") {
  const SweepSpec spec = spec_from(R"({"base": "scenarios/seed-optimized-1024.json",
      "axes": {"micro_batch": [3]}})");
  const auto points = enumerate_points(spec);
  std::optional<Scenario> loaded;
  const auto r = screen_point(spec, points[0], "k", {}, loaded);
  REQUIRE(r.has_value());
  CHECK(r->status == kStatusInvalid);
  // global batch 1024 over dp 64 x micro-batch 3 = 192 does not divide.
  CHECK_THAT(r->reason, Catch::Contains("/training/global_batch") && Catch::Contains("192"));
}

TEST_CASE("shards partition the points of a sweep") {
  const SweepSpec spec = load_sweep_spec(kTinySweep);
  const auto all = enumerate_points(spec);
  REQUIRE(all.size() == 2 * 6 * 2 * 2);
  std::set<std::size_t> seen;
  for (int shard = 1; shard <= 5; ++shard) {
    for (const auto& p : shard_points(all, shard, 5)) {
      CHECK(seen.insert(p.index).second);  // in no other shard
      CHECK(shard_of(p.index, 5) == shard);
    }
  }
  CHECK(seen.size() == all.size());
  // The split is balanced: each of 5 shards of 48 points gets some, none more than half.
  for (int shard = 1; shard <= 5; ++shard) {
    const auto n = shard_points(all, shard, 5).size();
    CHECK(n > 0);
    CHECK(n <= all.size() / 2);
  }
  CHECK(parse_shard("3/8") == std::make_pair(3, 8));
  CHECK_THROWS(parse_shard("0/8"));
  CHECK_THROWS(parse_shard("9/8"));
  CHECK_THROWS(parse_shard("3"));
}

TEST_CASE("a torn last line is not a record and is cut off on repair") {
  const std::string dir = make_temp_dir("torn");
  const std::string file = dir + "/results.jsonl";
  SweepRecord a;
  a.key = "a";
  a.status = kStatusOk;
  SweepRecord b = a;
  b.key = "b";
  b.index = 1;
  const std::string whole = to_json_line(a) + to_json_line(b);
  write_text(file, whole + R"({"key":"c","ind)");
  const auto read = read_results(file, false);
  CHECK(read.records.size() == 2);
  CHECK(read.torn_bytes == 15);
  CHECK(fs::file_size(file) == whole.size() + 15);
  read_results(file, true);
  CHECK(read_text(file) == whole);
  fs::remove_all(dir);
}

TEST_CASE("one record per key: a done record beats a failed retry, results sorted by index") {
  SweepRecord failed;
  failed.key = "x";
  failed.index = 5;
  failed.status = kStatusFailed;
  SweepRecord ok = failed;
  ok.status = kStatusOk;
  SweepRecord other;
  other.key = "y";
  other.index = 2;
  other.status = kStatusInvalid;
  const auto out = latest_per_key({failed, ok, other, failed});
  REQUIRE(out.size() == 2);
  CHECK(out[0].key == "y");
  CHECK(out[1].key == "x");
  CHECK(out[1].status == kStatusOk);
}

TEST_CASE("a runner-up's loss is explained by the breakdown component that grew most") {
  SweepRecord winner;
  winner.key = "w";
  winner.status = kStatusOk;
  winner.parameters = {{"gpus", 1024}};
  winner.metrics = {{"step_time_s", 1.1}, {"tokens_per_s", 1000.0 / 1.1}};
  winner.breakdown = {{"compute_s", 1.0}, {"pipeline_bubble_s", 0.1}};
  SweepRecord runner = winner;
  runner.key = "r";
  runner.metrics = {{"step_time_s", 1.4}, {"tokens_per_s", 1000.0 / 1.4}};
  runner.breakdown = {{"compute_s", 1.0}, {"pipeline_bubble_s", 0.4}};
  // Same GPUs and tokens per step: 0.3 s more bubble out of the winner's 1.1 s = +27.3%.
  CHECK(loss_reason(runner, winner) == "pipeline bubble +0.300 s/step (+27.3%)");
  CHECK(component_label("exposed_dp_comm_s") == "exposed DP comm");
  CHECK(component_label("dp_s") == "exposed DP comm");
  SECTION("twice the GPUs for the same step time is twice the GPU-time per token") {
    runner.parameters = {{"gpus", 2048}};
    runner.metrics = winner.metrics;
    runner.breakdown = winner.breakdown;
    // Every component doubles per token; compute grows most: 1.0 s x 2048 vs x 1024.
    CHECK(loss_reason(runner, winner) == "compute +90.9% GPU-time per token; 2048 vs 1024 GPUs");
  }
}

TEST_CASE("the base scenario's point is placed in every ranking with the reason it loses") {
  // Three points at 1024 GPUs: MFU 50%, 40%, 30%; the base is the third.
  std::vector<SweepRecord> records;
  for (int i = 0; i < 3; ++i) {
    SweepRecord r;
    r.key = std::to_string(i);
    r.index = static_cast<std::size_t>(i);
    r.status = kStatusOk;
    r.label = "P" + std::to_string(i);
    r.parameters = {{"gpus", 1024}, {"pp", i + 1}};
    const double step = 1.0 + 0.5 * i;  // 1.0, 1.5, 2.0 s
    r.metrics = {{"mfu", 0.5 - 0.1 * i}, {"step_time_s", step}, {"tokens_per_s", 1000 / step}};
    r.breakdown = {{"compute_s", 1.0}, {"bubble_s", step - 1.0}};
    records.push_back(r);
  }
  const nlohmann::json base = {{"gpus", 1024}, {"pp", 3}};
  const std::string text = format_reference(records, base, "The base scenario");
  INFO(text);
  CHECK_THAT(text, Catch::StartsWith("The base scenario is point #2 P2:"));
  // 1.0 s more bubble than the winner's 1.0 s step = +100.0%.
  // MFU and throughput order the points alike: one line for both.
  CHECK_THAT(text, Catch::Contains("best MFU, best throughput: rank 3 of 3; 2 points beat it; "
                                   "#1 P0 because pipeline bubble +1.000 s/step (+100.0%) "
                                   "(pp 3 vs 1)"));
  CHECK_THAT(format_reference(records, {{"gpus", 1024}, {"pp", 1}}, "X"),
             Catch::Contains("best MFU, best throughput: rank 1 of 3\n"));
  CHECK_THAT(format_reference(records, {{"gpus", 512}}, "X"),
             Catch::Contains("not a point of this sweep"));
  records[2].status = kStatusInfeasible;
  records[2].reason = "needs 90 GiB";
  CHECK_THAT(format_reference(records, base, "X"),
             Catch::Contains("P2: infeasible (needs 90 GiB)"));
}

TEST_CASE("a runner-up's loss names the parameter behind the component") {
  SweepRecord winner;
  winner.key = "w";
  winner.status = kStatusOk;
  winner.parameters = {{"gpus", 1024}, {"pp", 2}, {"zero_stage", 1}};
  winner.metrics = {{"step_time_s", 2.0}, {"tokens_per_s", 1000.0 / 2.0}};
  winner.breakdown = {{"compute_s", 1.6}, {"bubble_s", 0.2}, {"dp_s", 0.2}};
  SweepRecord runner = winner;
  runner.key = "r";
  SECTION("a deeper pipeline has a larger bubble") {
    runner.parameters["pp"] = 4;
    runner.metrics = {{"step_time_s", 2.5}, {"tokens_per_s", 1000.0 / 2.5}};
    runner.breakdown = {{"compute_s", 1.6}, {"bubble_s", 0.7}, {"dp_s", 0.2}};
    // 0.5 s more bubble out of the winner's 2.0 s = +25.0%.
    CHECK(loss_reason(runner, winner) == "pipeline bubble +0.500 s/step (+25.0%) (pp 4 vs 2)");
  }
  SECTION("ZeRO-3 gathers parameters: more exposed DP traffic") {
    runner.parameters["zero_stage"] = 3;
    runner.metrics = {{"step_time_s", 2.3}, {"tokens_per_s", 1000.0 / 2.3}};
    runner.breakdown = {{"compute_s", 1.6}, {"bubble_s", 0.2}, {"dp_s", 0.5}};
    CHECK(loss_reason(runner, winner) ==
          "exposed DP comm +0.300 s/step (+15.0%) (zero_stage 3 vs 1)");
  }
}

TEST_CASE("the union of the shards of a sweep equals the unsharded sweep", "[slow]") {
  const std::string dir = make_temp_dir("shards");
  const std::string common =
      kBinary + " sweep " + quoted(kTinySweep) + " --evaluate check --jobs 2 --quiet";
  const auto whole = run_command(common + " --out " + quoted(dir + "/whole"));
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);
  std::string parts;
  for (int i = 1; i <= 3; ++i) {
    const std::string part = dir + "/part" + std::to_string(i);
    const auto r =
        run_command(common + " --shard " + std::to_string(i) + "/3 --out " + quoted(part));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    parts += " " + quoted(part);
  }
  const auto merged = run_command(kBinary + " sweep merge " + quoted(dir + "/merged") + parts);
  INFO(merged.output);
  REQUIRE(merged.exit_code == 0);
  const std::string expected = read_text(dir + "/whole/results.jsonl");
  CHECK(read_results(dir + "/whole/results.jsonl", false).records.size() == 48);
  // The base scenario's own layout (DP64 TP8 PP2, micro-batch 1, ZeRO-1 at 1024 GPUs) is one of
  // the points; the merge and `sweep summary` place it in the ranking (the sweep itself too,
  // without --quiet).
  const std::string base_line = "The base scenario is point #41 1024 GPUs DP64 TP8 PP2";
  CHECK_THAT(merged.output, Catch::Contains(base_line));
  const auto summary = run_command(kBinary + " sweep summary " + quoted(dir + "/whole"));
  CHECK(summary.exit_code == 0);
  CHECK_THAT(summary.output,
             Catch::Contains(base_line) && Catch::Contains("lowest memory per GPU: rank "));
  CHECK(read_text(dir + "/merged/results.jsonl") == expected);
  CHECK(read_text(dir + "/merged/results.csv") == read_text(dir + "/whole/results.csv"));
  SECTION("merging a part twice changes nothing") {
    const auto again = run_command(kBinary + " sweep merge " + quoted(dir + "/again") + parts +
                                   " " + quoted(dir + "/part2/results.jsonl"));
    REQUIRE(again.exit_code == 0);
    CHECK(read_text(dir + "/again/results.jsonl") == expected);
  }
  fs::remove_all(dir);
}

TEST_CASE("a sweep killed mid-way resumes without redoing a finished point", "[slow]") {
  const std::string dir = make_temp_dir("kill");
  const std::string reference = dir + "/reference";
  const std::string out = dir + "/killed";
  const auto ref = run_command(kBinary + " sweep " + quoted(kTinySweep) +
                               " --evaluate check --jobs 2 --quiet --out " + quoted(reference));
  REQUIRE(ref.exit_code == 0);
  const std::size_t ok_total = count_status(reference + "/results.jsonl", kStatusOk);
  REQUIRE(ok_total >= 6);

  // Each evaluation waits 300 ms (the test hook), so the kill lands with children in flight.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("CLUSTERSIM_SWEEP_TEST_DELAY_MS", "300", 1);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execl(kBinary.c_str(), kBinary.c_str(), "sweep", kTinySweep.c_str(), "--evaluate", "check",
            "--jobs", "2", "--out", out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const std::string jsonl = out + "/results.jsonl";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count_status(jsonl, kStatusOk) < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));

  const ResultsFile after_kill = read_results(jsonl, false);
  const std::size_t ok_before = count_status(jsonl, kStatusOk);
  REQUIRE(ok_before >= 2);
  REQUIRE(ok_before < ok_total);  // killed mid-way
  CHECK(after_kill.bad_lines == 0);
  // The evaluators die with the sweep: nothing is appended after the kill.
  const std::string snapshot = read_text(jsonl);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  CHECK(read_text(jsonl) == snapshot);

  const auto resumed = run_command(kBinary + " sweep " + quoted(kTinySweep) +
                                   " --evaluate check --jobs 2 --no-plots --out " + quoted(out));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  std::set<std::string> keys_before;
  for (const auto& r : after_kill.records) keys_before.insert(r.key);
  // "48 points (K already done, E evaluated)": only the points without a record ran again.
  const std::regex summary(R"((\d+) points \((\d+) already done, (\d+) evaluated\))");
  std::smatch m;
  REQUIRE(std::regex_search(resumed.output, m, summary));
  CHECK(std::stoul(m[2]) == keys_before.size());
  CHECK(std::stoul(m[3]) == ok_total - ok_before);
  // Whole lines only, and the same results as the uninterrupted sweep.
  const std::string final_text = read_text(jsonl);
  CHECK(final_text.back() == '\n');
  CHECK(read_results(jsonl, false).bad_lines == 0);
  CHECK(final_text == read_text(reference + "/results.jsonl"));
  fs::remove_all(dir);
}

TEST_CASE("a changed model constant makes regress fail naming the scenario and metric", "[slow]") {
  // A private copy of the data directory, so that the preset can be changed.
  const std::string data = make_temp_dir("regress");
  for (const char* sub : {"models", "topologies", "scenarios", "validation"}) {
    if (fs::exists(kSource + "/" + sub)) {
      fs::copy(kSource + "/" + sub, data + "/" + sub, fs::copy_options::recursive);
    }
  }
  const std::string baseline = data + "/baseline.json";
  write_text(baseline, R"({"description": "test", "tolerance_pct": 0.5, "evaluator": "run",
      "metrics": ["mfu", "step_time_s"],
      "scenarios": [{"scenario": "scenarios/seed-optimized-1024.json"}]})");
  const std::string env = "CLUSTERSIM_DATA_DIR=" + quoted(data) + " ";
  const std::string cmd = env + kBinary + " regress --baseline " + quoted(baseline);
  const auto update = run_command(cmd + " --update");
  INFO(update.output);
  REQUIRE(update.exit_code == 0);
  const auto same = run_command(cmd);
  INFO(same.output);
  CHECK(same.exit_code == 0);

  // Llama 2 70B with a hidden size of 10240 instead of 8192: a step takes longer.
  const std::string preset = data + "/models/presets/llama2-70b.json";
  json model = json::parse(read_text(preset));
  model["hidden_size"] = 10240;
  write_text(preset, model.dump(2));
  const std::string junit = data + "/junit.xml";
  const auto changed = run_command(cmd + " --junit " + quoted(junit));
  INFO(changed.output);
  CHECK(changed.exit_code == 1);
  CHECK_THAT(changed.output, Catch::Contains("seed-optimized-1024") &&
                                 Catch::Contains("step_time_s") && Catch::Contains("FAIL"));
  // The preset is part of the scenario as loaded: the baseline's hash tells the edit apart.
  CHECK_THAT(changed.output, Catch::Contains("scenario edited since the baseline"));
  // Every matrix multiply grows with hidden_size (by (10240/8192)^2 = 1.56 for most of them);
  // the data-parallel traffic only with the parameter count: compute moves most.
  CHECK_THAT(changed.output, Catch::Contains("breakdown moved most: compute_s +"));
  CHECK_THAT(read_text(junit), Catch::Contains("<failure") &&
                                   Catch::Contains("classname=\"regress.seed-optimized-1024\""));
  fs::remove_all(data);
}

TEST_CASE("points evaluated by another build are evaluated again on resume", "[slow]") {
  const std::string dir = make_temp_dir("build");
  const std::string cmd = kBinary + " sweep " + quoted(kTinySweep) +
                          " --evaluate check --jobs 2 --no-plots --out " + quoted(dir);
  REQUIRE(run_command(cmd).exit_code == 0);
  const std::string jsonl = dir + "/results.jsonl";
  const ResultsFile first = read_results(jsonl, false);
  REQUIRE(first.records.size() == 48);
  const std::string build = first.records.front().build;
  CHECK(build.size() == 16);
  SECTION("the same build redoes nothing") {
    const auto again = run_command(cmd);
    CHECK_THAT(again.output, Catch::Contains("48 points (48 already done, 0 evaluated)"));
  }
  SECTION("records of another build are redone, invalid and infeasible ones included") {
    std::string text;
    for (auto r : first.records) {
      r.build = "0123456789abcdef";
      text += to_json_line(r);
    }
    write_text(jsonl, text);
    const auto again = run_command(cmd);
    INFO(again.output);
    CHECK_THAT(again.output,
               Catch::Contains("48 points were evaluated by another clustersim build") &&
                   Catch::Contains("48 points (0 already done, 12 evaluated)"));
    for (const auto& r : read_results(jsonl, false).records) CHECK(r.build == build);
  }
  fs::remove_all(dir);
}

TEST_CASE("a sweep rerun after its axes changed drops the points it no longer has", "[slow]") {
  const std::string dir = make_temp_dir("stale");
  json spec = json::parse(read_text(kTinySweep));
  spec["base"] = kSource + "/scenarios/seed-optimized-1024.json";
  const std::string file = dir + "/sweep.json";
  const std::string out = dir + "/out";
  const std::string cmd = kBinary + " sweep " + quoted(file) +
                          " --evaluate check --jobs 2 --no-plots --out " + quoted(out);
  write_text(file, spec.dump());
  REQUIRE(run_command(cmd).exit_code == 0);
  // 2 GPU counts x 6 layouts x 2 ZeRO stages x 2 micro-batch sizes.
  REQUIRE(read_results(out + "/results.jsonl", false).records.size() == 48);

  // Without micro-batch 3, half the points are gone: 2 x 6 x 2 x 1 = 24 stay, all done before.
  spec["axes"]["micro_batch"] = json::array({1});
  write_text(file, spec.dump());
  const auto again = run_command(cmd);
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.output, Catch::Contains("24 points (24 already done, 0 evaluated)") &&
                               Catch::Contains("dropped 24 results of points no longer in"));
  const auto records = read_results(out + "/results.jsonl", false).records;
  CHECK(records.size() == 24);
  for (const auto& r : records) CHECK(r.parameters.at("micro_batch") == 1);
  fs::remove_all(dir);
}

TEST_CASE("a token or price edit reuses a sweep's step results and updates what derives from them",
          "[slow]") {
  const std::string dir = make_temp_dir("reuse");
  json base = json::parse(R"({"name": "small", "model": "llama3-8b", "cluster": "h800-128x8-rail",
      "gpus": 8, "parallelism": {"dp": 1, "tp": 8, "pp": 1, "sequence_parallel": true},
      "training": {"global_batch": 4, "micro_batch": 1, "seq_len": 2048, "tokens_total": 1e9}})");
  write_text(dir + "/base.json", base.dump());
  json spec = {{"name", "reuse"},
               {"base", dir + "/base.json"},
               {"axes", {{"micro_batch", {1, 2}}}},
               {"ranking", {{"usd_per_gpu_hour", 2.0}}}};
  write_text(dir + "/sweep.json", spec.dump());
  const std::string out = dir + "/out";
  const std::string cmd = kBinary + " sweep " + quoted(dir + "/sweep.json") +
                          " --jobs 2 --no-plots --out " + quoted(out);
  REQUIRE(run_command(cmd).exit_code == 0);
  const auto first = read_results(out + "/results.jsonl", false).records;
  REQUIRE(first.size() == 2);

  // Twice the tokens at twice the price: no step is simulated again; each point's time to train
  // doubles and its cost quadruples, its step time stays.
  base["training"]["tokens_total"] = 2e9;
  base["name"] = "renamed";
  write_text(dir + "/base.json", base.dump());
  spec["ranking"]["usd_per_gpu_hour"] = 4.0;
  write_text(dir + "/sweep.json", spec.dump());
  const auto again = run_command(cmd);
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.output, Catch::Contains("2 points (2 already done, 0 evaluated)"));
  const auto second = read_results(out + "/results.jsonl", false).records;
  REQUIRE(second.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    REQUIRE(first[i].status == kStatusOk);
    CHECK(second[i].metrics.at("step_time_s") == first[i].metrics.at("step_time_s"));
    CHECK(second[i].metrics.at("time_to_train_days").get<double>() ==
          Approx(2 * first[i].metrics.at("time_to_train_days").get<double>()));
    CHECK(second[i].metrics.at("cost_usd").get<double>() ==
          Approx(4 * first[i].metrics.at("cost_usd").get<double>()));
  }
  fs::remove_all(dir);
}

namespace {

// The ranked tables of a sweep's printed summary: from the first table to the base scenario's
// line.
std::string ranked_tables(const std::string& output) {
  const auto from = output.find("best MFU:");
  const auto to = output.find("The base scenario");
  if (from == std::string::npos || to == std::string::npos || to < from) return "";
  return output.substr(from, to - from);
}

}  // namespace

TEST_CASE("a ranked sweep bounds points out and prints the top of the full sweep", "[slow]") {
  // Llama 3 8B on 8 GPUs, 6 layouts (tp 2, 4, 8 x pp 1, 2, 4 that fit 8 GPUs) x 2 micro-batch
  // sizes, top 2: each point simulates in a
  // fraction of a second.
  const std::string dir = make_temp_dir("bound");
  const json base = json::parse(R"({"name": "small", "model": "llama3-8b",
      "cluster": "h800-128x8-rail", "gpus": 8,
      "parallelism": {"dp": 1, "tp": 8, "pp": 1, "sequence_parallel": true, "zero_stage": 1},
      "training": {"global_batch": 8, "micro_batch": 1, "seq_len": 2048, "tokens_total": 1e9}})");
  write_text(dir + "/base.json", base.dump());
  const json spec = {
      {"name", "bound"},
      {"base", dir + "/base.json"},
      {"axes", {{"layouts", {{"tp", {2, 4, 8}}, {"pp", {1, 2, 4}}}}, {"micro_batch", {1, 2}}}},
      {"ranking", {{"usd_per_gpu_hour", 2.0}, {"top", 2}}}};
  write_text(dir + "/sweep.json", spec.dump());
  const std::string cmd =
      kBinary + " sweep " + quoted(dir + "/sweep.json") + " --jobs 2 --no-plots";
  // The dry run shows each point's bound.
  const auto dry = run_command(cmd + " --dry-run");
  CHECK(dry.exit_code == 0);
  CHECK_THAT(dry.output, Catch::Contains(": to run (step time >= "));
  const auto full = run_command(cmd + " --no-bound --out " + quoted(dir + "/full"));
  INFO(full.output);
  REQUIRE(full.exit_code == 0);
  const auto bounded = run_command(cmd + " --out " + quoted(dir + "/bounded"));
  INFO(bounded.output);
  REQUIRE(bounded.exit_code == 0);

  // The same tables, row for row.
  REQUIRE_FALSE(ranked_tables(full.output).empty());
  CHECK(ranked_tables(bounded.output) == ranked_tables(full.output));
  const auto all = read_results(dir + "/full/results.jsonl", false).records;
  const auto some = read_results(dir + "/bounded/results.jsonl", false).records;
  REQUIRE(all.size() == 12);
  REQUIRE(some.size() == 12);
  CHECK(count_status(dir + "/full/results.jsonl", kStatusOk) == 12);
  std::size_t n_bounded = 0;
  for (std::size_t i = 0; i < some.size(); ++i) {
    REQUIRE(some[i].key == all[i].key);
    if (some[i].status != kStatusBounded) {
      CHECK(some[i].status == kStatusOk);
      CHECK(some[i].metrics.at("step_time_s") == all[i].metrics.at("step_time_s"));
      continue;
    }
    ++n_bounded;
    // A bound, with its reason, and below the step the full sweep simulated.
    CHECK_THAT(some[i].reason, Catch::StartsWith("bounded, not simulated: step time >= "));
    CHECK_FALSE(some[i].has_metric("step_time_s"));
    CHECK(some[i].metric("step_time_bound_s") > 0);
    CHECK(some[i].metric("step_time_bound_s") <= all[i].metric("step_time_s"));
    CHECK(some[i].metric("mfu_bound") >= all[i].metric("mfu"));
  }
  CHECK(n_bounded >= 1);
  CHECK_THAT(read_text(dir + "/bounded/results.csv"), Catch::Contains(",bounded,"));

  // A bounded point is a record: a rerun evaluates nothing; with --no-bound it is simulated.
  const auto again = run_command(cmd + " --out " + quoted(dir + "/bounded"));
  INFO(again.output);
  CHECK_THAT(again.output, Catch::Contains("12 points (12 already done, 0 evaluated, " +
                                           std::to_string(n_bounded) + " bounded"));
  const auto on_request = run_command(cmd + " --no-bound --out " + quoted(dir + "/bounded"));
  INFO(on_request.output);
  CHECK_THAT(on_request.output,
             Catch::Contains("(" + std::to_string(12 - n_bounded) + " already done, " +
                             std::to_string(n_bounded) + " evaluated)"));
  CHECK(count_status(dir + "/bounded/results.jsonl", kStatusOk) == 12);
  CHECK(ranked_tables(on_request.output) == ranked_tables(full.output));
  fs::remove_all(dir);
}
