#include "core/errors.hpp"

namespace clustersim {

namespace {
std::string format_config_error(const std::string& file, const std::string& pointer,
                                const std::string& message) {
  std::string where = file.empty() ? std::string("<input>") : file;
  where += ":";
  where += pointer.empty() ? std::string("/") : pointer;
  return where + ": " + message;
}
}  // namespace

ConfigError::ConfigError(std::string file, std::string pointer, const std::string& message)
    : std::runtime_error(format_config_error(file, pointer, message)),
      file_(std::move(file)),
      pointer_(std::move(pointer)),
      message_(message) {}

}  // namespace clustersim
