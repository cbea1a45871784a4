// Strict, path-aware reading of JSON input files.
//
// Every value read through JsonNode knows the file it came from and its JSON pointer, so that
// each error can say exactly where the problem is:
//   scenarios/x.json:/parallelism/tp: 3 does not divide 8 GPUs per node
// This is the only place (with the loaders built on it) where raw JSON is handled; everything
// downstream works on validated structs.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/json_strict_parser.hpp"

namespace clustersim {

// Levenshtein edit distance; used to suggest the nearest valid name.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word` if it is close enough to be a plausible typo, else "".
std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates);

// Joins names as "a, b, c" for error messages.
std::string join_names(const std::vector<std::string>& names);

class JsonNode {
 public:
  // `number_texts` (optional) holds the written text of numbers the value cannot reproduce.
  JsonNode(const nlohmann::json& value, std::shared_ptr<const std::string> file,
           std::string pointer, std::shared_ptr<const NumberTexts> number_texts = nullptr);

  const std::string& file() const { return *file_; }
  const std::string& pointer() const { return pointer_; }
  const nlohmann::json& raw() const { return *value_; }

  // Throws ConfigError at this node's location.
  [[noreturn]] void fail(const std::string& message) const;
  // Throws ConfigError at the location of `key` below this node (which may be absent).
  [[noreturn]] void fail_at(std::string_view key, const std::string& message) const;

  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }
  bool is_string() const { return value_->is_string(); }
  bool is_number() const { return value_->is_number(); }
  bool is_null() const { return value_->is_null(); }
  // A short description of the JSON value for messages: `"abc"`, `3`, `an object`; numbers
  // as written where the parsed value would print differently (99999999999999999999).
  std::string describe() const;

  // Object access. require_object() fails unless this node is an object.
  void require_object() const;
  bool has(std::string_view key) const;
  JsonNode at(std::string_view key) const;  // missing key -> "missing required key"
  std::optional<JsonNode> find(std::string_view key) const;
  // Rejects any key not in `allowed`, suggesting the nearest allowed name.
  void only_keys(const std::vector<std::string>& allowed) const;
  std::vector<std::pair<std::string, JsonNode>> members() const;

  // Array access.
  std::vector<JsonNode> items() const;

  // Scalars with type checks (integers must be whole numbers; a whole number beyond what a
  // 64-bit integer or a double holds exactly is out of range, quoted as written).
  std::int64_t as_int() const;
  double as_number() const;
  bool as_bool() const;
  std::string as_string() const;

  // Range-checked scalars at this node.
  std::int64_t as_int_in(std::int64_t min, std::int64_t max) const;
  double as_positive() const;                         // > 0 and finite
  double as_non_negative() const;                     // >= 0 and finite
  double as_fraction() const;                         // in [0, 1]
  double as_number_in(double min, double max) const;  // finite, in [min, max]
  // A string that must be one of `choices`; the error lists them.
  std::string as_enum(const std::vector<std::string>& choices) const;

  // Convenience for keys of an object node.
  std::int64_t int_at(std::string_view key, std::int64_t min, std::int64_t max) const;
  std::int64_t int_or(std::string_view key, std::int64_t fallback, std::int64_t min,
                      std::int64_t max) const;
  double positive_at(std::string_view key) const;
  double positive_or(std::string_view key, double fallback) const;
  double non_negative_at(std::string_view key) const;
  double non_negative_or(std::string_view key, double fallback) const;
  double fraction_or(std::string_view key, double fallback) const;
  double number_in_at(std::string_view key, double min, double max) const;
  double number_in_or(std::string_view key, double fallback, double min, double max) const;
  bool bool_or(std::string_view key, bool fallback) const;
  std::string string_at(std::string_view key) const;
  std::string string_or(std::string_view key, std::string fallback) const;
  std::string enum_at(std::string_view key, const std::vector<std::string>& choices) const;
  std::string enum_or(std::string_view key, const std::vector<std::string>& choices,
                      std::string fallback) const;

 private:
  std::string child_pointer(std::string_view key) const;
  JsonNode child(const nlohmann::json& value, std::string pointer) const;
  [[noreturn]] void fail_out_of_range(std::int64_t min, std::int64_t max) const;

  const nlohmann::json* value_;
  std::shared_ptr<const std::string> file_;
  std::string pointer_;
  std::shared_ptr<const NumberTexts> number_texts_;
};

// A parsed JSON file that owns its data; root() hands out nodes that borrow from it.
class JsonDocument {
 public:
  // Reads and parses `path`. A missing or unreadable file, an empty file, or malformed JSON
  // (reported with line and column) throws ConfigError naming the file; so do the inputs
  // core/json_strict_parser.hpp refuses (duplicate keys, deep nesting, NUL bytes, 1e309).
  static JsonDocument load(const std::string& path);
  // Parses `text` as if it came from a file called `name` (used for inline input and tests).
  static JsonDocument parse(const std::string& text, const std::string& name);

  JsonNode root() const;
  const std::string& file() const { return *file_; }

 private:
  JsonDocument(StrictJson parsed, std::shared_ptr<const std::string> file);
  std::unique_ptr<nlohmann::json> value_;
  std::shared_ptr<const NumberTexts> number_texts_;
  std::shared_ptr<const std::string> file_;
};

// Escapes one reference token for a JSON pointer (RFC 6901: ~ -> ~0, / -> ~1).
std::string json_pointer_escape(std::string_view token);

}  // namespace clustersim
