// What the tool was built from, fixed when CMake configures the build (tools/build_info.cpp.in).
#pragma once

namespace clustersim::cli {

// project(VERSION) of the top-level CMakeLists.txt, e.g. "0.1.0".
const char* project_version();
// `git rev-parse --short=12 HEAD` of the source tree when CMake last configured the build;
// "unknown" when the source is not a git checkout or git is missing. Re-run cmake to refresh it.
const char* build_commit();

}  // namespace clustersim::cli
