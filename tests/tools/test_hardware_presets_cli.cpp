// `clustersim check` accepts scenarios on the HGX B200 and H200 cluster presets.
#include <catch2/catch.hpp>
#include <string>

#include "tests/tools/cli_runner.hpp"

using clustersim::test::CliRun;
using clustersim::test::run_cli;
using clustersim::test::shell_quote;
using clustersim::test::write_text;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path dir = clustersim::test::cli_scratch("hardware-presets");
  return dir;
}

// One 8-GPU node of `cluster`, tensor parallel across its NVLink domain.
std::string one_node_on(const std::string& cluster) {
  return R"({"name": "one-node", "model": "llama3-8b", "cluster": ")" + cluster + R"(",
  "gpus": 8, "parallelism": {"dp": 1, "tp": 8, "pp": 1, "sequence_parallel": true},
  "training": {"global_batch": 4, "micro_batch": 1, "seq_len": 2048}})";
}

}  // namespace

TEST_CASE("check accepts a scenario on each new cluster preset", "[tools][cli][presets]") {
  for (const std::string cluster : {"hgx-b200-2048x8-rail", "hgx-h200-2048x8-rail"}) {
    INFO(cluster);
    const fs::path file = write_text(scratch() / (cluster + ".json"), one_node_on(cluster));
    const CliRun r = run_cli("check " + shell_quote(file.string()), scratch());
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("check accepts the shipped Llama 3 70B scenario on HGX B200", "[tools][cli][presets]") {
  const std::string file =
      std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/llama3-70b-hgx-b200-512.json";
  const CliRun r = run_cli("check " + shell_quote(file), scratch());
  INFO(r.err);
  CHECK(r.exit_code == 0);
}
