// Placeholder until `clustersim check` is built; replaced by its implementation.
#include <iostream>

#include "tools/commands.hpp"

namespace clustersim::cli {

std::string usage_check() { return "usage: clustersim check (not built yet)\n"; }

int cmd_check(const std::vector<std::string>&) {
  std::cerr << "clustersim check is not built yet\n";
  return 1;
}

}  // namespace clustersim::cli
