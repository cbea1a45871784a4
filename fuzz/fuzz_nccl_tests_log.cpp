// libFuzzer target: arbitrary bytes as an nccl-tests log, in its text layouts (v2.11, v2.13)
// and as nccl-tests' JSON output (-J). Bad input must end in a ConfigError; any other
// exception, a crash, a leak or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.hpp"
#include "validation/nccl_tests_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    validation::parse_nccl_tests_text(text, "fuzz.txt");
  } catch (const ConfigError&) {
  }
  try {
    validation::parse_nccl_tests_json(text, "fuzz.json");
  } catch (const ConfigError&) {
  }
  return 0;
}
