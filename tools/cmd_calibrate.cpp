// Placeholder until `clustersim calibrate` is built; replaced by its implementation.
#include <iostream>

#include "tools/commands.hpp"

namespace clustersim::cli {

std::string usage_calibrate() { return "usage: clustersim calibrate (not built yet)\n"; }

int cmd_calibrate(const std::vector<std::string>&) {
  std::cerr << "clustersim calibrate is not built yet\n";
  return 1;
}

}  // namespace clustersim::cli
