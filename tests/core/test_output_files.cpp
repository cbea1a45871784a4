// A command's output files: checked when declared, written together, all or none.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "core/atomic_file.hpp"
#include "core/errors.hpp"

using namespace clustersim;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("clustersim-test-outputs-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string text_of(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("declaring an output creates its directory and leaves nothing in it") {
  const fs::path d = fresh_dir("declare");
  OutputFiles out;
  out.declare((d / "a" / "b" / "r.json").string());
  CHECK(fs::is_directory(d / "a" / "b"));
  CHECK(entries(d / "a" / "b") == 0);
}

TEST_CASE("an output that cannot be created is refused when declared") {
  const fs::path d = fresh_dir("refuse");
  std::ofstream(d / "file.txt") << "x";
  OutputFiles out;
  CHECK_THROWS_AS(out.declare((d / "file.txt" / "r.json").string()), EnvironmentError);
  CHECK_THROWS_AS(out.declare(d.string()), EnvironmentError);  // a directory, not a file
  CHECK_THROWS_AS(out.declare(""), EnvironmentError);
}

TEST_CASE("commit writes every file, and after a failure none of them") {
  const fs::path d = fresh_dir("commit");
  OutputFiles out;
  out.declare((d / "one" / "a.json").string());
  out.declare((d / "two" / "b.json").string());
  out.set((d / "one" / "a.json").string(), "A");
  out.set((d / "two" / "b.json").string(), "B");
  SECTION("all written") {
    out.commit();
    CHECK(text_of(d / "one" / "a.json") == "A");
    CHECK(text_of(d / "two" / "b.json") == "B");
    CHECK(entries(d / "one") == 1);
  }
  SECTION("the second directory vanished: neither file appears, no temporary is left") {
    fs::remove_all(d / "two");
    CHECK_THROWS_AS(out.commit(), EnvironmentError);
    CHECK_FALSE(fs::exists(d / "one" / "a.json"));
    CHECK(entries(d / "one") == 0);
  }
}
