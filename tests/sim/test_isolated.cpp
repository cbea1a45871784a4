// run_isolated: work in a child process hands back its bytes, and its errors keep their type
// (a ConfigError its file and JSON pointer, so bad input stays exit code 2 at the tool).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"
#include "sim/isolated.hpp"

using namespace clustersim;
using namespace clustersim::sim;

TEST_CASE("run_isolated returns the bytes the child's work returned, NUL bytes included",
          "[sim][isolated]") {
  const std::string bytes("a\0b\xff", 4);
  CHECK(run_isolated([&] { return bytes; }) == bytes);
  CHECK(run_isolated([] { return std::string(); }).empty());
  const std::vector<double> v = {1.5, -0.0, 1e300};
  CHECK(doubles_from_bytes(run_isolated([&] { return doubles_to_bytes(v); })) == v);
}

TEST_CASE("run_isolated runs the work in another process", "[sim][isolated]") {
  const pid_t parent = ::getpid();
  const std::string child = run_isolated([] { return std::to_string(::getpid()); });
  CHECK(child != std::to_string(parent));
}

TEST_CASE("A ConfigError in the child comes back with its file, JSON pointer and message",
          "[sim][isolated]") {
  try {
    run_isolated([]() -> std::string {
      throw ConfigError("scenarios/x.json", "/faults/links/0/link", "no link named \"nic9\"");
    });
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.file() == "scenarios/x.json");
    CHECK(e.pointer() == "/faults/links/0/link");
    CHECK(e.message() == "no link named \"nic9\"");
  }
}

TEST_CASE("Other errors of the child keep their message, and a dead child is an IsolatedRunError",
          "[sim][isolated]") {
  CHECK_THROWS_AS(run_isolated([]() -> std::string { throw std::invalid_argument("bad gpu"); }),
                  std::invalid_argument);
  CHECK_THROWS_WITH(run_isolated([]() -> std::string { throw std::invalid_argument("bad gpu"); }),
                    "bad gpu");
  try {
    run_isolated([]() -> std::string { throw std::logic_error("engine used"); });
    FAIL("no exception");
  } catch (const IsolatedRunError& e) {
    CHECK(e.kind() == IsolatedRunError::Kind::failed);
    CHECK(std::string(e.what()) == "engine used");
  }
  try {
    run_isolated([]() -> std::string {
      std::signal(SIGABRT, SIG_DFL);
      std::abort();
    });
    FAIL("no exception");
  } catch (const IsolatedRunError& e) {
    CHECK(e.kind() == IsolatedRunError::Kind::crashed);
    CHECK_THAT(e.what(), Catch::Contains("signal"));
  }
  try {
    run_isolated([]() -> std::string { ::_exit(0); });
    FAIL("no exception");
  } catch (const IsolatedRunError& e) {
    CHECK(e.kind() == IsolatedRunError::Kind::crashed);
  }
  CHECK_THROWS_AS(doubles_from_bytes("abc"), IsolatedRunError);
}
