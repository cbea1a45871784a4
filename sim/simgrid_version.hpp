// The SimGrid the simulator runs on, for `clustersim version`.
#pragma once

#include <string>

namespace clustersim::sim {

struct SimGridVersion {
  std::string library;  // of the shared library loaded at run time ("3.32.0")
  std::string headers;  // of the headers the tool was compiled against
};

SimGridVersion simgrid_version();

}  // namespace clustersim::sim
