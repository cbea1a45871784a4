// `clustersim version` (also `clustersim --version`): the project version, the commit it was
// built from and the SimGrid it runs on.
#include <iostream>

#include "sim/simgrid_version.hpp"
#include "tools/build_info.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"

namespace clustersim::cli {

std::string usage_version() {
  return "usage: clustersim version   (or clustersim --version)\n\n"
         "Prints the clustersim version and the git commit it was built from (as of the last\n"
         "cmake configure; \"unknown\" outside a git checkout), and the SimGrid library it runs\n"
         "on with the SimGrid headers it was compiled against.\n";
}

int cmd_version(const std::vector<std::string>& argv) {
  const Args args(argv, {}, 0);
  const sim::SimGridVersion simgrid = sim::simgrid_version();
  std::cout << "clustersim " << project_version() << " (commit " << build_commit() << ")\n"
            << "SimGrid " << simgrid.library << " (compiled against " << simgrid.headers << ")\n";
  return 0;
}

}  // namespace clustersim::cli
