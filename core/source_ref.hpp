// Where a loaded value came from: a file and a JSON pointer inside it. Kept in validated structs
// so that a check made later (once the cluster graph or the step time is known) still names the
// place to change:
//   scenarios/x.json:/faults/events/2/from_days: 45 days is past the end of the run ...
#pragma once

#include <string>

#include "core/errors.hpp"

namespace clustersim {

struct SourceRef {
  std::string file;
  std::string pointer;
  // The location of `key` below this one.
  SourceRef at(const std::string& key) const { return {file, pointer + "/" + key}; }
  [[noreturn]] void fail(const std::string& message) const {
    throw ConfigError(file, pointer, message);
  }
};

}  // namespace clustersim
