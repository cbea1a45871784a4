// Where tests find the source tree and the clustersim binary. The paths are compiled into
// catch_main.cpp alone, so the test objects do not depend on where the tree is checked out
// (and a compiler cache shares them between checkouts). Included into every test source by
// tests/CMakeLists.txt.
#pragma once

namespace clustersim::test {
const char* source_dir();
const char* binary();
}  // namespace clustersim::test

#define CLUSTERSIM_SOURCE_DIR (::clustersim::test::source_dir())
#define CLUSTERSIM_BINARY (::clustersim::test::binary())
