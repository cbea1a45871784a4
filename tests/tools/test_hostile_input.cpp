// The hostile inputs of issue 18 as a user would give them: each is refused with exit code 2,
// the file and JSON path (or line and column), before anything is simulated or written.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/cli_runner.hpp"

using clustersim::test::CliRun;
using clustersim::test::kSmall;
using clustersim::test::run_cli;
using clustersim::test::shell_quote;
using clustersim::test::write_text;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path dir = clustersim::test::cli_scratch("hostile-input");
  return dir;
}

json preset(const std::string& relative) {
  return json::parse(
      clustersim::test::read_text(std::string(CLUSTERSIM_SOURCE_DIR) + "/" + relative));
}

// The small scenario with its cluster and GPU written inline, as a user pastes them.
json small_inline() {
  json s = json::parse(kSmall);
  json cluster = preset("topologies/clusters/h800-128x8-rail.json");
  cluster["gpu"] = preset("topologies/gpus/h800-sxm.json");
  s["cluster"] = cluster;
  return s;
}

// Runs `clustersim COMMAND FILE` on `text` written to scratch()/NAME.
CliRun run_on(const std::string& command, const std::string& name, const std::string& text,
              const std::string& extra = "") {
  const fs::path file = write_text(scratch() / name, text);
  return run_cli(command + " " + shell_quote(file.string()) + " " + extra, scratch());
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("the small scenario the hostile inputs are made from is valid", "[tools][cli]") {
  const CliRun r = run_on("check", "small.json", kSmall);
  CHECK(r.exit_code == 0);
  CHECK(run_on("check", "small-inline.json", small_inline().dump()).exit_code == 0);
}

TEST_CASE("a number too large for a double exits 2 with its path, line and column",
          "[tools][cli]") {
  std::string text = kSmall;
  text.replace(text.find("\"gpus\": 8"), 9, "\"gpus\": 1e309");
  const CliRun r = run_on("check", "overflow.json", text);
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, "overflow.json:/gpus: the number 1e309 (line 2, column 11)"));
  CHECK(has(r.err, "too large for a double"));
}

TEST_CASE("an integer beyond 64 bits exits 2 quoting the value as written", "[tools][cli]") {
  std::string text = kSmall;
  text.replace(text.find("\"gpus\": 8"), 9, "\"gpus\": 9223372036854775808");
  const CliRun r = run_on("check", "int64.json", text);
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, "int64.json:/gpus: 9223372036854775808 is out of range"));
  CHECK_FALSE(has(r.err, "-9223372036854775808"));
}

TEST_CASE("a valid scenario followed by a NUL byte and garbage exits 2", "[tools][cli]") {
  std::string text = kSmall;
  text += '\0';
  text += "garbage";
  for (const char* command : {"check", "run"}) {
    INFO(command);
    const CliRun r = run_on(command, "nul.json", text);
    CHECK(r.exit_code == 2);
    CHECK(has(r.err, "nul.json:/: malformed JSON at line 3"));
    CHECK(has(r.err, "NUL byte"));
  }
}

TEST_CASE("an array nested 100,000 deep in any section exits 2 without a crash", "[tools][cli]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const char* section : {"faults", "checkpointing", "cost", "campaign"}) {
    std::string text = kSmall;
    text.insert(text.rfind('}'), std::string(", \"") + section + "\": {\"x\": " + deep + "}");
    for (const char* command : {"check", "run", "campaign"}) {
      INFO(section << " " << command);
      const CliRun r = run_on(command, "deep.json", text);
      CHECK(r.exit_code == 2);
      CHECK(has(r.err, std::string("deep.json:/") + section + "/x/0/0/0/"));
      CHECK(has(r.err, "nested deeper than 64 levels"));
    }
  }
}

TEST_CASE("a key given twice exits 2 at the second one", "[tools][cli]") {
  std::string text = kSmall;
  text.insert(text.rfind('}'), ", \"model\": \"gpt3-175b\"");
  const CliRun r = run_on("run", "twice.json", text);
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, "twice.json:/model: duplicate key \"model\""));
}

TEST_CASE("a vanishing hardware figure exits 2 at its JSON path, in check and in run",
          "[tools][cli]") {
  struct Case {
    json::json_pointer key;
    double value;
  };
  const Case cases[] = {
      {json::json_pointer("/cluster/gpu/hbm_TBps"), 5e-324},
      {json::json_pointer("/cluster/gpu/nvlink_GBps"), 1e-308},
      {json::json_pointer("/cluster/gpu/pcie_GBps"), 1e-308},
      {json::json_pointer("/cluster/gpu/peak_tflops/bf16"), 1e-308},
      {json::json_pointer("/cluster/nic_Gbps"), 1e-308},
      {json::json_pointer("/cluster/nvlink_GBps"), 1e-308},
      // Too large is refused too: 1e308 GB/s overflows to an infinite bandwidth in bytes/s.
      {json::json_pointer("/cluster/nic_Gbps"), 1e308},
      {json::json_pointer("/cluster/gpu/hbm_GB"), 1e308},
      {json::json_pointer("/cluster/gpu/hbm_reported_GiB"), 1e308},
      {json::json_pointer("/cluster/gpu/hbm_reported_GiB"), 1e-308},
  };
  for (const Case& c : cases) {
    json s = small_inline();
    s[c.key] = c.value;
    // Every number of a preset is cited; the cluster's own NVLink figure is optional.
    if (c.key.to_string() == "/cluster/nvlink_GBps") s["cluster"]["sources"]["nvlink_GBps"] = "t";
    if (c.key.to_string() == "/cluster/gpu/hbm_reported_GiB")
      s["cluster"]["gpu"]["sources"]["hbm_reported_GiB"] = "t";
    for (const char* command : {"check", "run"}) {
      INFO(c.key.to_string() << " = " << c.value << ", " << command);
      const CliRun r = run_on(command, "vanishing.json", s.dump());
      CHECK(r.exit_code == 2);
      CHECK(has(r.err, "vanishing.json:" + c.key.to_string() + ": "));
      CHECK(has(r.err, "is out of range; expected a number in ["));
    }
  }
}

TEST_CASE("a leaf with more downlinks than any switch has exits 2", "[tools][cli]") {
  json s = small_inline();
  s["cluster"]["fabric"]["nodes_per_leaf"] = 1048576;
  const CliRun r = run_on("run", "leaf.json", s.dump());
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, "leaf.json:/cluster/fabric/nodes_per_leaf: 1048576 nodes x 1 NICs per leaf"));
}

TEST_CASE("fabric latencies that would change nothing are refused with the reason",
          "[tools][cli]") {
  for (const char* key : {"nic_latency_us", "switch_latency_us"}) {
    json s = small_inline();
    s["cluster"]["fabric"][key] = 1.0;
    const CliRun r = run_on("check", "latency.json", s.dump());
    INFO(key);
    CHECK(r.exit_code == 2);
    CHECK(has(r.err, std::string("latency.json:/cluster/fabric/") + key + ": "));
    CHECK(has(r.err, "NCCL's cost model"));
  }
}
