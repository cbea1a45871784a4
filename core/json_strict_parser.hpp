// The strict JSON parser under JsonDocument: nlohmann's parser driven through its SAX interface,
// so that every value is checked as it arrives, before anything recursive runs on the result.
//
// Refused, each with the file and the JSON pointer (and line and column where the parser knows
// them): malformed JSON, a NUL byte anywhere (nlohmann would stop reading there and accept what
// came before), anything after the document, nesting deeper than kMaxJsonDepth, a key given
// twice in one object, and a number too large for a double (1e309).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace clustersim {

// Arrays and objects nested deeper than this are refused. The deepest shipped input (a scenario
// with an inline cluster, its inline GPU and peak table) nests 4 levels; a limit well above that
// keeps every recursive walk of a parsed document (dump, copy, comparison) far from the stack's
// end.
inline constexpr int kMaxJsonDepth = 64;

// Numbers whose text the parsed value cannot reproduce, by JSON pointer: integers written with
// more digits than 64 bits hold, which nlohmann keeps as doubles (99999999999999999999 would
// otherwise be quoted back as 1e+20).
using NumberTexts = std::map<std::string, std::string>;

struct StrictJson {
  std::unique_ptr<nlohmann::json> value;
  std::shared_ptr<const NumberTexts> number_texts;
};

// Parses `text` read from `file`. Throws ConfigError naming `file` on any of the above.
StrictJson parse_strict_json(const std::string& text, const std::string& file);

}  // namespace clustersim
