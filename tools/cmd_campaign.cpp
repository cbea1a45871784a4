// Placeholder until `clustersim campaign` is built; replaced by its implementation.
#include <iostream>

#include "tools/commands.hpp"

namespace clustersim::cli {

std::string usage_campaign() { return "usage: clustersim campaign (not built yet)\n"; }

int cmd_campaign(const std::vector<std::string>&) {
  std::cerr << "clustersim campaign is not built yet\n";
  return 1;
}

}  // namespace clustersim::cli
