// The pool of child processes that validate and calibrate --runs simulate in.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <stdexcept>

#include "tools/isolated_pool.hpp"

using namespace clustersim::cli;

TEST_CASE("map_isolated_each runs every item in a child and keeps each failure with its item") {
  const auto work = [](std::size_t i) -> std::vector<double> {
    if (i == 3) throw std::runtime_error("item three fails");
    // Computed in the child: its pid differs from the parent's.
    return {static_cast<double>(i * i), static_cast<double>(::getpid())};
  };
  const auto out = map_isolated_each(6, 2, work);
  REQUIRE(out.size() == 6);
  for (std::size_t i = 0; i < out.size(); ++i) {
    INFO("item " << i);
    if (i == 3) {
      CHECK(out[i].error == "item three fails");
      CHECK(out[i].values.empty());
    } else {
      CHECK(out[i].error.empty());
      REQUIRE(out[i].values.size() == 2);
      CHECK(out[i].values[0] == static_cast<double>(i * i));
      CHECK(out[i].values[1] != static_cast<double>(::getpid()));
    }
  }
}

TEST_CASE("map_isolated throws the first failure with its item") {
  const auto work = [](std::size_t i) -> std::vector<double> {
    if (i == 1) throw std::runtime_error("no");
    return {1.0};
  };
  CHECK_THROWS_WITH(map_isolated(4, 1, work), "item 1: no");
  CHECK(map_isolated(3, 2, [](std::size_t i) {
          return std::vector<double>{static_cast<double>(i)};
        }) == std::vector<std::vector<double>>{{0.0}, {1.0}, {2.0}});
}
