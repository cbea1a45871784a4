// Placeholder until `clustersim collective` is built; replaced by its implementation.
#include <iostream>

#include "tools/commands.hpp"

namespace clustersim::cli {

std::string usage_collective() { return "usage: clustersim collective (not built yet)\n"; }

int cmd_collective(const std::vector<std::string>&) {
  std::cerr << "clustersim collective is not built yet\n";
  return 1;
}

}  // namespace clustersim::cli
