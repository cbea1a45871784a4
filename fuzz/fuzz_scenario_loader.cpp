// libFuzzer target: a scenario file of arbitrary bytes through the loader, then the arithmetic
// `clustersim check` runs on what loads (parameters, FLOPs, memory). Bad input must end in a
// ConfigError (exit code 2 in the tool); any other exception, a crash, a leak or undefined
// behaviour is a finding. Presets named in the input are read from the source tree.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.hpp"
#include "core/json_reader.hpp"
#include "input/scenario_loader.hpp"
#include "models/memory.hpp"
#include "models/transformer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const Scenario s = load_scenario(JsonDocument::parse(text, "fuzz.json"));
    models::count_parameters(s.model);
    models::flops_per_step(s, models::FlopConvention::megatron);
    models::flops_per_step(s, models::FlopConvention::palm);
    models::estimate_memory(s);
  } catch (const ConfigError&) {
    // The expected outcome of bad input.
  }
  return 0;
}
