// `clustersim check` as a user runs it: bad input exits 2 and writes nothing; the shipped seed
// scenarios give the memory verdicts the seed article implies.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace fs = std::filesystem;

namespace {

// A scratch directory per test process.
fs::path scratch() {
  static const fs::path dir = [] {
    std::string name = "clustersim-test-cli-check-";
    name += std::to_string(::getpid());
    const fs::path d = fs::temp_directory_path() / name;
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Single-quotes a path for the shell. (Built by appending: GCC 12 warns falsely, -Wrestrict, on
// `"literal" + std::string` temporaries.)
std::string q(const std::string& path) {
  std::string out = "'";
  out += path;
  out += "'";
  return out;
}

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `clustersim COMMAND ARGS`, capturing stdout and stderr.
Run cli(const std::string& command, const std::string& args) {
  const fs::path out = scratch() / "stdout.txt";
  const fs::path err = scratch() / "stderr.txt";
  const std::string cmd = q(CLUSTERSIM_BINARY) + " " + command + " " + args + " >" +
                          q(out.string()) + " 2>" + q(err.string());
  const int status = std::system(cmd.c_str());
  Run r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

Run check(const std::string& args) {
  return cli("check", args);
}

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p;
}

std::string scenario(const std::string& name) {
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name + ".json";
}

const char* kValid = R"({"name": "v", "model": "llama2-70b", "cluster": "h800-128x8-rail",
  "gpus": 1024, "parallelism": {"dp": 64, "tp": 8, "pp": 2, "sequence_parallel": true,
  "zero_stage": 1}, "training": {"global_batch": 1024, "micro_batch": 1, "seq_len": 4096}})";

}  // namespace

TEST_CASE("check on bad input exits 2, names the JSON path and writes no JSON file") {
  struct Case {
    const char* file;
    std::string text;
    const char* expected;
  };
  std::string wrong_type = kValid;
  wrong_type.replace(wrong_type.find("\"gpus\": 1024"), 12, "\"gpus\": \"many\"");
  std::string unknown_key = kValid;
  unknown_key.replace(unknown_key.find("\"micro_batch\""), 13, "\"micro_bach\"");
  std::string bad_layout = kValid;
  bad_layout.replace(bad_layout.find("\"dp\": 64"), 8, "\"dp\": 32");
  const Case cases[] = {
      {"wrong-type.json", wrong_type, "wrong-type.json:/gpus"},
      {"unknown-key.json", unknown_key, "unknown-key.json:/training/micro_bach"},
      {"bad-layout.json", bad_layout, "bad-layout.json:/parallelism"},
      {"malformed.json", "{\"gpus\": ", "malformed.json"},
      {"empty.json", "", "empty.json"},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    const fs::path input = write_file(c.file, c.text);
    const fs::path output = scratch() / (std::string(c.file) + ".out.json");
    fs::remove(output);
    const Run r = check(q(input.string()) + " --json " + q(output.string()));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.expected) != std::string::npos);
    CHECK_FALSE(fs::exists(output));
  }
}

TEST_CASE("check refuses a cluster whose network calibration file is malformed") {
  // The cluster preset inline, naming a calibration file that is not valid JSON: check must
  // read it (as run would) and exit 2 naming that file, not the scenario.
  std::ifstream preset(std::string(CLUSTERSIM_SOURCE_DIR) +
                       "/topologies/clusters/h800-128x8-rail.json");
  nlohmann::json cluster = nlohmann::json::parse(preset);
  const fs::path calibration = write_file("broken-calibration.json", "{\"network\": [");
  cluster["calibration"] = calibration.string();
  nlohmann::json s = nlohmann::json::parse(kValid);
  s["cluster"] = cluster;
  const fs::path input = write_file("with-calibration.json", s.dump());
  const fs::path output = scratch() / "with-calibration.out.json";
  fs::remove(output);
  const Run r = check(q(input.string()) + " --json " + q(output.string()));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("broken-calibration.json") != std::string::npos);
  CHECK_FALSE(fs::exists(output));
  // The same scenario with a valid calibration file passes.
  const fs::path good = write_file("good-calibration.json",
                                   slurp(std::string(CLUSTERSIM_SOURCE_DIR) +
                                         "/validation/data/calibration-h800-published.json"));
  cluster["calibration"] = good.string();
  s["cluster"] = cluster;
  const fs::path input_good = write_file("with-good-calibration.json", s.dump());
  CHECK(check(q(input_good.string())).exit_code == 0);
}

TEST_CASE("check with a missing scenario file or a bad option exits 2") {
  CHECK(check(q((scratch() / "nope.json").string())).exit_code == 2);
  CHECK(check("--frobnicate").exit_code == 2);
  CHECK(check("a.json b.json").exit_code == 2);
}

TEST_CASE("check without a scenario uses the seed's optimized layout, which fits") {
  const fs::path output = scratch() / "default.json";
  std::string args = "--json ";
  args += q(output.string());
  const Run r = check(args);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("seed-optimized-1024") != std::string::npos);
  CHECK(r.out.find("Verdict: FITS") != std::string::npos);
  REQUIRE(fs::exists(output));
  const auto j = nlohmann::json::parse(slurp(output));
  CHECK(j.at("fits") == true);
  CHECK(j.at("params_total").get<double>() == Approx(68.98e9).epsilon(0.001));
  CHECK(j.at("flops_per_step").get<double>() > 0);
  CHECK(j.at("memory_per_gpu_GiB").get<double>() < 80);
}

TEST_CASE("pure data parallelism of the 70B model fits only with ZeRO-3") {
  SECTION("without sharding it does not fit, exit code still 0") {
    const fs::path output = scratch() / "no-zero.json";
    const Run r = check(q(scenario("seed-dp-1024-no-zero")) + " --json " + q(output.string()));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("DOES NOT FIT") != std::string::npos);
    const auto j = nlohmann::json::parse(slurp(output));
    CHECK(j.at("fits") == false);
    // 16 bytes per parameter of model states alone: more than 1 TB per GPU.
    CHECK(j.at("memory_per_gpu_GiB").get<double>() > 1000);
  }
  SECTION("with ZeRO-3 it fits at every seed scale") {
    for (const char* name :
         {"seed-dp-64", "seed-dp-256", "seed-dp-512", "seed-dp-1024", "seed-dp-1024-as-written"}) {
      INFO(name);
      const fs::path output = scratch() / (std::string(name) + ".json");
      const Run r = check(q(scenario(name)) + " --json " + q(output.string()));
      CHECK(r.exit_code == 0);
      CHECK(nlohmann::json::parse(slurp(output)).at("fits") == true);
    }
  }
}

TEST_CASE("check gives ZB-H1's closed-form bubble, a third of 1F1B's") {
  // pp 2, global batch 1024 over dp 64: m = 16 micro-batches. 1F1B: (p - 1) / m = 1/16 =
  // 6.25% of the ideal compute; ZB-H1 (Qi et al. 2024 section 3.1, F = B = W): 1/48 = 2.08%.
  std::string zb = kValid;
  zb.replace(zb.find("\"zero_stage\": 1"), 15, "\"zero_stage\": 1, \"schedule\": \"zb-h1\"");
  const Run one = check(q(write_file("one.json", kValid).string()));
  const Run r = check(q(write_file("zb.json", zb).string()));
  CHECK(one.exit_code == 0);
  CHECK(one.out.find("(p-1)/m = 6.25% of ideal compute") != std::string::npos);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("(p-1)/3m (F = B = W) = 2.08% of ideal compute") != std::string::npos);
}

TEST_CASE("check explains an MoE model's parameters and memory, and run simulates its EP traffic") {
  // Mixtral 8x7B on 64 GPUs: tp 2 x dp 32, ep 8 (one expert per GPU), etp = tp = 2.
  const std::string moe = R"({"name": "moe", "model": "mixtral-8x7b",
    "cluster": "h800-128x8-rail", "gpus": 64, "parallelism": {"tp": 2, "pp": 1, "ep": 8,
    "sequence_parallel": true, "zero_stage": 1},
    "training": {"global_batch": 64, "micro_batch": 1, "seq_len": 4096}})";
  const fs::path path = write_file("moe.json", moe);
  const fs::path output = scratch() / "moe-check.json";
  const Run r = check(q(path.string()) + " --json " + q(output.string()));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("active per token") != std::string::npos);
  CHECK(r.out.find("MoE split") != std::string::npos);
  CHECK(r.out.find("EP exchanges") != std::string::npos);
  const auto j = nlohmann::json::parse(slurp(output));
  // Each GPU holds 32 MoE layers x 1 expert of 3 x 4096 x 14336 parameters, halved by etp 2.
  CHECK(j.at("memory_stages").at(0).at("moe").at("expert_parameters").get<double>() ==
        32.0 * 3 * 4096 * 14336 / 2);
  CHECK(j.at("layout").at("expert_dp").get<int>() == 4);  // 64 / (etp 2 x ep 8)
  // run simulates it: the layout names ep, and the dispatch/combine all-to-alls (8 ranks at
  // stride etp = 2, across two nodes) take exposed time of their own.
  const Run run = cli("run", q(path.string()));
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("pp 1, ep 8,") != std::string::npos);
  CHECK(run.out.find("EP comm (exposed)") != std::string::npos);
}
