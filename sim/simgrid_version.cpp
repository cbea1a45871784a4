#include "sim/simgrid_version.hpp"

// simgrid/version.h uses SG_BEGIN_DECL and XBT_PUBLIC without including their header, so that
// header comes first.
// clang-format off
#include <xbt/base.h>
#include <simgrid/version.h>
// clang-format on

namespace clustersim::sim {
namespace {

std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

SimGridVersion simgrid_version() {
  int major = 0, minor = 0, patch = 0;
  sg_version_get(&major, &minor, &patch);
  return {dotted(major, minor, patch),
          dotted(SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR, SIMGRID_VERSION_PATCH)};
}

}  // namespace clustersim::sim
