// The built tool end to end: `clustersim calibrate` on the transcribed nccl-tests tables and
// `clustersim validate` running both suites (CI runs them through this test). A MAPE above the
// threshold (exit 1) is a finding the output reports, not a broken tool; bad input (2) or a
// crash (3) fails the test.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>

#include "validation/calibration.hpp"

namespace {
int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
const std::string kSource = CLUSTERSIM_SOURCE_DIR;
const std::string kTool = CLUSTERSIM_BINARY;
}  // namespace

TEST_CASE("calibrate fits the transcribed DGX H100 table and writes a readable file", "[slow]") {
  const auto out = std::filesystem::temp_directory_path() / "clustersim-test-calibrate.json";
  std::filesystem::remove(out);
  const int rc = run(kTool + " calibrate --nccl " + kSource +
                     "/validation/data/nccl-tests/dgx-h100-allreduce-nvls.v2.13-layout.txt --gemm " +
                     kSource + "/validation/data/gemm/h100-published.json --peak-tflops bf16=989 " +
                     "fp8=1979 --created 2026-01-01 -o " + out.string() + " > /dev/null");
  REQUIRE(rc == 0);
  const auto cal = clustersim::validation::load_calibration(out.string());
  std::filesystem::remove(out);
  REQUIRE(cal.network.size() == 1);
  CHECK(cal.network[0].nranks == 8);
  CHECK(cal.network[0].link_class == "intra_node");
  CHECK(cal.network[0].peak_busbw_GBps > 470);
  CHECK(cal.created == "2026-01-01");
  REQUIRE(cal.compute.models.size() == 1);  // fp8: five points; bf16 has one, no model
  CHECK(cal.compute.models[0].dtype == clustersim::Dtype::fp8);
}

TEST_CASE("calibrate refuses to run without inputs or output", "[slow]") {
  CHECK(run(kTool + " calibrate -o /tmp/x.json 2> /dev/null") == 2);
  CHECK(run(kTool + " calibrate --nccl /nonexistent.log -o /tmp/x.json 2> /dev/null") == 2);
}

TEST_CASE("validate runs both suites and reports every case", "[slow]") {
  const auto out = std::filesystem::temp_directory_path() / "clustersim-test-validate.json";
  std::filesystem::remove(out);
  const int rc = run(kTool + " validate --json " + out.string() + " --date 2026-01-01 > /dev/null");
  CHECK((rc == 0 || rc == 1));
  std::ifstream in(out);
  REQUIRE(in);
  const auto j = nlohmann::json::parse(in);
  std::filesystem::remove(out);
  REQUIRE(j["suites"].size() == 2);
  CHECK(j["suites"][0]["name"] == "published-runs");
  // 72 published runs: each either a case or listed as not expressible.
  CHECK(j["suites"][0]["cases"].size() + j["suites"][0]["not_expressible"].size() == 72);
  CHECK(j["suites"][1]["name"] == "microbench");
  CHECK(j["suites"][1]["cases"].size() == 8);  // the DGX H100 table's eight sizes
}
