#include "core/config_errors.hpp"

#include <utility>

namespace clustersim {

ConfigErrors::ConfigErrors(const ConfigError& first, std::vector<ConfigError> further,
                           std::size_t omitted)
    : ConfigError(first), further_(std::move(further)), omitted_(omitted) {}

std::string describe_config_error(const ConfigError& e) {
  std::string out = "error: " + std::string(e.what()) + "\n";
  const auto* all = dynamic_cast<const ConfigErrors*>(&e);
  if (all == nullptr) return out;
  for (const ConfigError& f : all->further()) out += "error: " + std::string(f.what()) + "\n";
  if (all->omitted() > 0) {
    out += "... and " + std::to_string(all->omitted()) + " more error" +
           (all->omitted() == 1 ? "" : "s") + " in " + e.file() + "\n";
  }
  return out;
}

}  // namespace clustersim
