// `clustersim collective` end to end: its text is nccl-tests' own (read back by the nccl-tests
// log parser of validation/), its JSON carries the rows and the plan, bad input exits 2 and
// writes nothing.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "validation/nccl_tests_log.hpp"

namespace {

struct Run {
  int exit_code = -1;
  std::string out;
};

Run run(const std::string& args) {
  const std::string cmd = std::string(CLUSTERSIM_BINARY) + " " + args + " 2>/dev/null";
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

TEST_CASE("clustersim collective prints an nccl-tests table that the nccl-tests parser reads",
          "[sim][cli][slow]") {
  namespace fs = std::filesystem;
  const fs::path json = fs::temp_directory_path() / "clustersim-collective-test.json";
  fs::remove(json);
  const Run r =
      run("collective --op allreduce --gpus 16 -b 1M -e 64M -f 8 --json " + json.string());
  REQUIRE(r.exit_code == 0);
  const auto log = clustersim::validation::parse_nccl_tests_text(r.out, "stdout");
  REQUIRE(log.tables.size() == 1);
  const auto& t = log.tables[0];
  CHECK(t.op == clustersim::validation::NcclTestsOp::all_reduce);
  CHECK(t.nranks == 16);
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[0].size_bytes == 1048576);
  CHECK(t.rows[2].size_bytes == 64 * 1048576);
  for (const auto& row : t.rows) {
    REQUIRE(row.out_of_place.present());
    // busbw = algbw * 2(n-1)/n, algbw = size / time (nccl-tests' definitions).
    CHECK(*row.out_of_place.algbw_GBps ==
          Approx(row.size_bytes / (*row.out_of_place.time_us * 1e3)).epsilon(0.01));
    CHECK(*row.out_of_place.busbw_GBps ==
          Approx(*row.out_of_place.algbw_GBps * 2 * 15 / 16).epsilon(0.01));
  }
  REQUIRE(t.avg_busbw_GBps);
  std::ifstream in(json);
  const auto doc = nlohmann::json::parse(in);
  CHECK(doc.at("gpus") == 16);
  CHECK(doc.at("results").size() == 3);
  CHECK(doc.at("results")[0].contains("algorithm"));
  CHECK(doc.at("results")[0].contains("protocol"));
  CHECK(doc.at("results")[0].contains("channels"));
  fs::remove(json);
}

TEST_CASE("clustersim collective rejects bad input with exit code 2 and writes nothing",
          "[sim][cli]") {
  namespace fs = std::filesystem;
  const fs::path json = fs::temp_directory_path() / "clustersim-collective-bad.json";
  fs::remove(json);
  CHECK(run("collective --op allreduc --gpus 8 --json " + json.string()).exit_code == 2);
  CHECK(run("collective --gpus 8 --nccl NCCL_ALGOX=Ring --json " + json.string()).exit_code == 2);
  CHECK(run("collective --gpus 100000 --json " + json.string()).exit_code == 2);
  CHECK(run("collective --gpus 8 --cluster no-such-cluster --json " + json.string()).exit_code ==
        2);
  CHECK_FALSE(fs::exists(json));
}
