// Every mistake the key tables (input/key_spec.hpp) can see in a document, not just the first.
// The loaders stop at the first error they meet; this walk goes on through the whole document
// and checks each key with the same readers the loaders use (so each message is the one the
// loader would give at that path): unknown keys (Megatron-LM / NeMo names answered with the
// clustersim key), missing required keys, types, ranges and names. What only the loader's code
// knows (rules across keys, preset names, NCCL variables) is left to the loader.
#pragma once

#include <cstddef>
#include <vector>

#include "core/errors.hpp"
#include "core/json_reader.hpp"
#include "input/key_spec.hpp"

namespace clustersim::input {

// The errors of `node` as an object of `spec` and of the objects below it, in document order.
std::vector<ConfigError> table_errors(const JsonNode& node, const ObjectSpec& spec);

// The errors of a whole scenario file (its root against the scenario table).
std::vector<ConfigError> scenario_table_errors(const JsonDocument& document);

// At most this many errors of one file are reported; the rest are counted.
inline constexpr std::size_t kMaxReportedErrors = 20;

// `first` (what the loader threw) with the further errors the tables find in `document`, when
// `first` is in that file: those at another JSON path, up to kMaxReportedErrors in all.
// Throws a ConfigErrors (core/config_errors.hpp) when there are any, else `first` itself.
[[noreturn]] void rethrow_with_table_errors(const ConfigError& first, const JsonDocument& document);

}  // namespace clustersim::input
