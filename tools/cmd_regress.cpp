// Placeholder until `clustersim regress` is built; replaced by its implementation.
#include <iostream>

#include "tools/commands.hpp"

namespace clustersim::cli {

std::string usage_regress() { return "usage: clustersim regress (not built yet)\n"; }

int cmd_regress(const std::vector<std::string>&) {
  std::cerr << "clustersim regress is not built yet\n";
  return 1;
}

}  // namespace clustersim::cli
