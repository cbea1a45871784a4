// Placeholder until `clustersim validate` is built; replaced by its implementation.
#include <iostream>

#include "tools/commands.hpp"

namespace clustersim::cli {

std::string usage_validate() { return "usage: clustersim validate (not built yet)\n"; }

int cmd_validate(const std::vector<std::string>&) {
  std::cerr << "clustersim validate is not built yet\n";
  return 1;
}

}  // namespace clustersim::cli
