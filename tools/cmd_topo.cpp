// Placeholder until `clustersim topo` is built; replaced by its implementation.
#include <iostream>

#include "tools/commands.hpp"

namespace clustersim::cli {

std::string usage_topo() { return "usage: clustersim topo (not built yet)\n"; }

int cmd_topo(const std::vector<std::string>&) {
  std::cerr << "clustersim topo is not built yet\n";
  return 1;
}

}  // namespace clustersim::cli
