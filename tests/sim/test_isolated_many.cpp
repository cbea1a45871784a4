// Many isolated runs at a time (run_isolated_each / run_isolated_all): what `validate --jobs`
// and `calibrate --runs` simulate in. Each item runs in a child of its own and keeps its own
// outcome; errors keep their type across the pipe, as run_isolated's do.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <stdexcept>

#include "core/errors.hpp"
#include "sim/isolated.hpp"

using namespace clustersim;
using namespace clustersim::sim;

TEST_CASE("run_isolated_each runs every item in a child and keeps each failure with its item") {
  const auto work = [](std::size_t i) -> std::vector<double> {
    if (i == 3) throw std::runtime_error("item three fails");
    // Computed in the child: its pid differs from the parent's.
    return {static_cast<double>(i * i), static_cast<double>(::getpid())};
  };
  const auto out = run_isolated_each(6, 2, work);
  REQUIRE(out.size() == 6);
  for (std::size_t i = 0; i < out.size(); ++i) {
    INFO("item " << i);
    if (i == 3) {
      CHECK(out[i].error);
      CHECK(out[i].message == "item three fails");
      CHECK(out[i].values.empty());
    } else {
      CHECK_FALSE(out[i].error);
      REQUIRE(out[i].values.size() == 2);
      CHECK(out[i].values[0] == static_cast<double>(i * i));
      CHECK(out[i].values[1] != static_cast<double>(::getpid()));
    }
  }
}

TEST_CASE("run_isolated_each reports a child that dies without an answer") {
  const auto out = run_isolated_each(2, 2, [](std::size_t i) -> std::vector<double> {
    if (i == 1) ::_exit(7);
    return {1.0};
  });
  CHECK_FALSE(out[0].error);
  REQUIRE(out[1].error);
  CHECK_THROWS_AS(std::rethrow_exception(out[1].error), IsolatedRunError);
  CHECK_THAT(out[1].message, Catch::Contains("exit status 7"));
}

TEST_CASE("run_isolated_all names the failing item, or rethrows bad input as it is") {
  const auto work = [](std::size_t i) -> std::vector<double> {
    if (i == 1) throw std::runtime_error("no");
    return {1.0};
  };
  CHECK_THROWS_WITH(run_isolated_all(4, 1, work), "item 1: no");
  CHECK(run_isolated_all(3, 2, [](std::size_t i) {
          return std::vector<double>{static_cast<double>(i)};
        }) == std::vector<std::vector<double>>{{0.0}, {1.0}, {2.0}});
  try {
    run_isolated_all(3, 2, [](std::size_t i) -> std::vector<double> {
      if (i == 2) throw ConfigError("scenarios/x.json", "/gpus", "must be positive");
      return {0.0};
    });
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.file() == "scenarios/x.json");
    CHECK(e.pointer() == "/gpus");
    CHECK(e.message() == "must be positive");
  }
}

TEST_CASE("every item's end is heard once in the parent, whatever the number of jobs") {
  const int jobs = GENERATE(1, 3);
  std::vector<int> heard(5, 0);
  const auto out = run_isolated_each(
      5, jobs,
      [](std::size_t i) -> std::vector<double> {
        if (i == 2) throw std::runtime_error("item two fails");
        return {static_cast<double>(i)};
      },
      [&](std::size_t i) { ++heard.at(i); });  // runs in the parent: the count survives
  CHECK(out.size() == 5);
  CHECK(heard == std::vector<int>{1, 1, 1, 1, 1});  // a failed item ends too
}
