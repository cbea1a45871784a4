// The message of the ConfigError that `f` throws, or "" when it throws none: for tests that
// check what a loader says about bad input.
#pragma once

#include <functional>
#include <string>

#include "core/errors.hpp"

namespace clustersim::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace clustersim::test
