// `clustersim --version` and `clustersim version`: the version CMakeLists.txt declares, the
// commit the build was configured from, and the SimGrid the tool runs on.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <regex>
#include <string>

#include "tests/tools/cli_runner.hpp"

using clustersim::test::cli_scratch;
using clustersim::test::CliRun;
using clustersim::test::read_text;
using clustersim::test::run_cli;
using clustersim::test::shell_quote;

namespace {

// project(clustersim VERSION X.Y.Z ...) as the top-level CMakeLists.txt writes it.
std::string declared_version() {
  const std::string cmake = read_text(std::string(CLUSTERSIM_SOURCE_DIR) + "/CMakeLists.txt");
  std::smatch m;
  REQUIRE(
      std::regex_search(cmake, m, std::regex(R"(project\(clustersim VERSION (\d+\.\d+\.\d+))")));
  return m[1].str();
}

}  // namespace

TEST_CASE("clustersim --version names the declared version, a commit and SimGrid 3.32+") {
  const auto dir = cli_scratch("version");
  const CliRun flag = run_cli("--version", dir);
  const CliRun command = run_cli("version", dir);
  REQUIRE(flag.exit_code == 0);
  CHECK(command.exit_code == 0);
  CHECK(command.out == flag.out);
  std::smatch m;
  REQUIRE(std::regex_search(
      flag.out, m,
      std::regex(
          R"(^clustersim (\S+) \(commit ([0-9a-f]{12}|unknown)\)\nSimGrid (\d+)\.(\d+)\.\d+ )"
          R"(\(compiled against \d+\.\d+\.\d+\)\n$)")));
  CHECK(m[1].str() == declared_version());
  // The build requires SimGrid >= 3.32 (pkg_check_modules in CMakeLists.txt).
  CHECK(std::stoi(m[3].str()) * 100 + std::stoi(m[4].str()) >= 332);
  // A commit, when named, is one of the source tree's (the build may be a commit behind HEAD).
  const std::string commit = m[2].str();
  const std::string git = "git -C " + shell_quote(CLUSTERSIM_SOURCE_DIR);
  if (commit != "unknown" &&
      std::system((git + " rev-parse --git-dir >/dev/null 2>&1").c_str()) == 0)
    CHECK(std::system((git + " cat-file -e " + commit + "^{commit} 2>/dev/null").c_str()) == 0);
  std::filesystem::remove_all(dir);
}
