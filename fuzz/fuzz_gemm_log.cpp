// libFuzzer target: arbitrary bytes as a GEMM/attention benchmark log (validation/gemm_log.hpp,
// the files `clustersim calibrate --gemm` reads). Bad input must end in a ConfigError; any
// other exception, a crash, a leak or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.hpp"
#include "validation/gemm_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    validation::parse_gemm_log(text, "fuzz.json");
  } catch (const ConfigError&) {
  }
  return 0;
}
