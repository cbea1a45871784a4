// SimGrid stays inside sim/: no other folder includes its headers, so an upgrade of SimGrid is
// one folder's work.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

TEST_CASE("SimGrid headers are included only under sim/", "[sim][layering]") {
  namespace fs = std::filesystem;
  const fs::path root = CLUSTERSIM_SOURCE_DIR;
  std::vector<std::string> offenders;
  for (const char* dir : {"core", "models", "topologies", "workload", "nccl", "step", "input",
                          "campaign", "sweep", "validation", "tools", "tests"}) {
    if (!fs::exists(root / dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const auto ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".h")) continue;
      std::ifstream in(e.path());
      std::string line;
      while (std::getline(in, line)) {
        // The directive is spelled in two pieces so that this test file is not itself a match
        // for the repository's grep of SimGrid includes outside sim/.
        static const std::string simgrid_include = std::string("#include <") + "simgrid/";
        static const std::string xbt_include = std::string("#include <") + "xbt/";
        if (line.rfind(simgrid_include, 0) == 0 || line.rfind(xbt_include, 0) == 0) {
          offenders.push_back(fs::relative(e.path(), root).string());
          break;
        }
      }
    }
  }
  INFO("files outside sim/ including SimGrid: " << offenders.size());
  for (const auto& f : offenders) INFO(f);
  CHECK(offenders.empty());
}

TEST_CASE("SimGrid's kernel internals are included by one file of sim/", "[sim][layering]") {
  namespace fs = std::filesystem;
  const fs::path root = CLUSTERSIM_SOURCE_DIR;
  std::vector<std::string> includers;
  for (const auto& e : fs::recursive_directory_iterator(root / "sim")) {
    const auto ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".h")) continue;
    std::ifstream in(e.path());
    std::string line;
    static const std::string kernel_include = std::string("#include <") + "simgrid/kernel/";
    while (std::getline(in, line)) {
      if (line.rfind(kernel_include, 0) == 0) {
        includers.push_back(fs::relative(e.path(), root).string());
        break;
      }
    }
  }
  REQUIRE(includers.size() == 1);
  CHECK(includers.front() == "sim/simgrid_kernel.cpp");
}
