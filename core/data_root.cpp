#include "core/data_root.hpp"

#include <cstdlib>
#include <filesystem>

namespace clustersim {

std::string data_root() {
  const char* env = std::getenv("CLUSTERSIM_DATA_DIR");
  return (env && *env) ? std::string(env) : std::string(CLUSTERSIM_DATA_DIR);
}

std::string resolve_data_path(const std::string& path) {
  return std::filesystem::path(path).is_absolute() ? path : data_root() + "/" + path;
}

}  // namespace clustersim
