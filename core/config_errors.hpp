// Several errors of one input file reported together. The loader stops at the first mistake it
// meets; when a file has more, the key tables (input/table_check.hpp) find the others, so that a
// hand-written scenario is corrected in one round instead of one error per run.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace clustersim {

// The first error (what the loader threw, unchanged: what(), file(), pointer(), message()) and
// the further ones, each a ConfigError of its own.
class ConfigErrors : public ConfigError {
 public:
  ConfigErrors(const ConfigError& first, std::vector<ConfigError> further, std::size_t omitted);

  const std::vector<ConfigError>& further() const { return further_; }
  // How many more errors there were beyond `further` (the report is capped).
  std::size_t omitted() const { return omitted_; }

 private:
  std::vector<ConfigError> further_;
  std::size_t omitted_ = 0;
};

// "error: FILE:POINTER: MESSAGE" for `e` and, for ConfigErrors, each further error, then a line
// counting those left out: what the command-line tool prints for bad input.
std::string describe_config_error(const ConfigError& e);

}  // namespace clustersim
