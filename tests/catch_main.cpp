#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "tests/test_paths.hpp"

namespace clustersim::test {
const char* source_dir() {
  return CLUSTERSIM_TEST_SOURCE_DIR;
}
const char* binary() {
  return CLUSTERSIM_TEST_BINARY;
}
}  // namespace clustersim::test
