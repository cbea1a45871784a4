// Placeholder until `clustersim sweep` is built; replaced by its implementation.
#include <iostream>

#include "tools/commands.hpp"

namespace clustersim::cli {

std::string usage_sweep() { return "usage: clustersim sweep (not built yet)\n"; }

int cmd_sweep(const std::vector<std::string>&) {
  std::cerr << "clustersim sweep is not built yet\n";
  return 1;
}

}  // namespace clustersim::cli
