// Small readers shared by the loaders of input/: enum keys through their NameTable, and numbers
// with a physical range. Every error names the file and JSON pointer (JsonNode::fail).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_reader.hpp"
#include "core/name_table.hpp"

namespace clustersim::input {

// The enum value at `key` (required); the error lists the table's names.
template <typename E>
E enum_at(const JsonNode& node, std::string_view key, const NameTable<E>& table) {
  return table.value(node.enum_at(key, table.names()));
}

// The enum value at `key`, or `fallback` when the key is absent.
template <typename E>
E enum_or(const JsonNode& node, std::string_view key, const NameTable<E>& table, E fallback) {
  return table.value(node.enum_or(key, table.names(), table.name(fallback)));
}

// Same, accepting only `allowed` (a key that takes a subset of the enum's names).
template <typename E>
E enum_or(const JsonNode& node, std::string_view key, const NameTable<E>& table,
          std::initializer_list<E> allowed, E fallback) {
  return table.value(node.enum_or(key, table.names_of(allowed), table.name(fallback)));
}

// A finite number in [min, max]; the error gives the range and `unit` ("s", "GB/s", "").
double number_in(const JsonNode& node, double min, double max, std::string_view unit = "");
// A finite number in (0, max].
double positive_up_to(const JsonNode& node, double max, std::string_view unit = "");

// The same at `key` of an object node: required, or `fallback` when absent.
double number_in_at(const JsonNode& node, std::string_view key, double min, double max,
                    std::string_view unit = "");
double number_in_or(const JsonNode& node, std::string_view key, double fallback, double min,
                    double max, std::string_view unit = "");
double positive_up_to_at(const JsonNode& node, std::string_view key, double max,
                         std::string_view unit = "");
double positive_up_to_or(const JsonNode& node, std::string_view key, double fallback, double max,
                         std::string_view unit = "");

// A "sources" object cites, as text, keys that its object (`node`) sets, or carries one of
// `notes` (e.g. a model's "check": its parameter count against the paper). An error calls the
// object `owner` ("this file does not set"; with notes, it also names them).
void check_sources(const JsonNode& node, const JsonNode& sources,
                   const std::vector<std::string>& notes = {}, std::string_view owner = "file");
// `node` has a "sources" object (checked as above) citing every key of `numeric_keys` it sets.
void require_sources(const JsonNode& node, const std::vector<std::string>& numeric_keys);

// "1e+07" -> "1e7"-style short text of a bound or value for messages.
std::string number_text(double v);

}  // namespace clustersim::input
