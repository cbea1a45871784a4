// Placeholder until `clustersim run` is built; replaced by its implementation.
#include <iostream>

#include "tools/commands.hpp"

namespace clustersim::cli {

std::string usage_run() { return "usage: clustersim run (not built yet)\n"; }

int cmd_run(const std::vector<std::string>&) {
  std::cerr << "clustersim run is not built yet\n";
  return 1;
}

}  // namespace clustersim::cli
