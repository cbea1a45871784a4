// The keys of each object of the input files as data: name, JSON type, range, accepted names,
// whether required, and what the key means. The loaders read through these tables (the keys
// they accept, the bounds and enum names they check), and `clustersim schema`
// (input/input_schema.hpp) turns the same tables into a JSON Schema, so a key or a bound added
// to a loader appears in the schema without a second edit. The tables themselves are in
// input/input_keys.hpp.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_reader.hpp"
#include "core/name_table.hpp"

namespace clustersim::input {

enum class KeyKind {
  integer,
  number,
  boolean,
  string,
  choice,             // one of `choices`; with `refs`, also an object of that shape
  object,             // the object `refs` names (several: exactly one of them)
  array,              // items as `items.front()` describes them
  map,                // an object whose keys are `choices` (any if empty), values `items.front()`
  string_or_integer,  // an environment variable's value (NCCL settings)
};

// Which reader of core/json_reader.hpp or input/read_helpers.hpp checks a number, so that the
// loader's message for a value out of range stays what it was.
enum class NumberCheck {
  closed,          // JsonNode::as_number_in: [min, max]
  closed_unit,     // input::number_in: [min, max], the message with `unit`
  positive,        // JsonNode::as_positive: (0, inf)
  positive_up_to,  // input::positive_up_to: (0, max], the message with `unit`
  fraction,        // JsonNode::as_fraction: [0, 1]
  custom,          // checked by the loader's own code; min/max state the range for the schema
};

struct KeySpec {
  std::string name;
  KeyKind kind = KeyKind::string;
  std::string description;
  bool required = false;
  // Numbers and integers: the accepted range (the widest one where the loader's bound depends
  // on another key, e.g. experts_per_token <= num_experts).
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool exclusive_min = false;
  bool exclusive_max = false;
  NumberCheck check = NumberCheck::custom;
  std::string unit;
  std::vector<std::string> choices;
  std::vector<std::string> refs;  // names of ObjectSpecs
  std::vector<KeySpec> items;     // array items / map values (one entry)
  bool unique_items = false;
};

struct ObjectSpec {
  std::string name;  // the schema's $defs name
  std::string description;
  std::vector<KeySpec> keys;

  // Key names in table order: what JsonNode::only_keys accepts.
  std::vector<std::string> names() const;
  // The names of its integer and number keys, in table order (the keys a preset must cite).
  std::vector<std::string> number_names() const;
  // The entry of `key`. Throws std::logic_error when the table has no such key (a loader asking
  // for a key its table does not list is a programming error).
  const KeySpec& key(std::string_view key) const;
};

// The table `Make` builds, built once on first use (after every static NameTable exists).
template <ObjectSpec (*Make)()>
const ObjectSpec& built_once() {
  static const ObjectSpec table = Make();
  return table;
}

// `node` has only the keys of `object`, and each of its text keys that is present is a string.
// Free-text keys (names, descriptions, sources of a cost) that no loader reads are checked here,
// so a wrong type is an error wherever the table lists the key.
void only_table_keys(const JsonNode& node, const ObjectSpec& object);

// Readers through a table: the bounds come from the key's entry.
std::int64_t read_int(const JsonNode& value, const KeySpec& key);
std::int64_t int_at(const JsonNode& node, const ObjectSpec& object, std::string_view key);
std::int64_t int_or(const JsonNode& node, const ObjectSpec& object, std::string_view key,
                    std::int64_t fallback);
// A number checked as the key's NumberCheck says (custom: only that it is a finite number).
double read_number(const JsonNode& value, const KeySpec& key);
double number_at(const JsonNode& node, const ObjectSpec& object, std::string_view key);
double number_or(const JsonNode& node, const ObjectSpec& object, std::string_view key,
                 double fallback);

// The enum value at `key` (required, or `fallback` when absent), accepting the key's choices.
template <typename E>
E choice_at(const JsonNode& node, const ObjectSpec& object, std::string_view key,
            const NameTable<E>& table) {
  return table.value(node.enum_at(key, object.key(key).choices));
}
template <typename E>
E choice_or(const JsonNode& node, const ObjectSpec& object, std::string_view key,
            const NameTable<E>& table, E fallback) {
  return table.value(node.enum_or(key, object.key(key).choices, table.name(fallback)));
}
// The same for a key whose choices are plain names.
std::string choice_or(const JsonNode& node, const ObjectSpec& object, std::string_view key,
                      const std::string& fallback);

// Table builders, for input/input_keys.cpp and tests.
namespace keys {
KeySpec integer(std::string name, std::int64_t min, std::int64_t max, std::string description);
KeySpec closed(std::string name, double min, double max, std::string description);
KeySpec closed_unit(std::string name, double min, double max, std::string unit,
                    std::string description);
KeySpec positive(std::string name, std::string description);
KeySpec positive_up_to(std::string name, double max, std::string unit, std::string description);
KeySpec fraction(std::string name, std::string description);
// A number the loader checks with its own code; `exclusive_min`/`exclusive_max` as the schema
// should state them.
KeySpec custom_number(std::string name, double min, double max, bool exclusive_min,
                      bool exclusive_max, std::string description);
KeySpec flag(std::string name, std::string description);
KeySpec text(std::string name, std::string description);
KeySpec choice(std::string name, std::vector<std::string> choices, std::string description);
KeySpec object(std::string name, std::vector<std::string> refs, std::string description);
// A preset name or an inline object of shape `ref`.
KeySpec preset(std::string name, std::string ref, std::string description);
KeySpec array(std::string name, KeySpec item, std::string description);
KeySpec map(std::string name, std::vector<std::string> key_names, KeySpec value,
            std::string description);
// A "sources" object: citations as text, keyed by the key they cite.
KeySpec sources(std::string description);
KeySpec required(KeySpec key);
}  // namespace keys

}  // namespace clustersim::input
