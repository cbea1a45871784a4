#include "input/key_spec.hpp"

#include <stdexcept>
#include <utility>

#include "input/read_helpers.hpp"

namespace clustersim::input {

std::vector<std::string> ObjectSpec::names() const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(k.name);
  return out;
}

std::vector<std::string> ObjectSpec::number_names() const {
  std::vector<std::string> out;
  for (const auto& k : keys) {
    if (k.kind == KeyKind::integer || k.kind == KeyKind::number) out.push_back(k.name);
  }
  return out;
}

const KeySpec& ObjectSpec::key(std::string_view key) const {
  for (const auto& k : keys) {
    if (k.name == key) return k;
  }
  throw std::logic_error("the key table \"" + name + "\" has no key \"" + std::string(key) + "\"");
}

void only_table_keys(const JsonNode& node, const ObjectSpec& object) {
  node.only_keys(object.names());
  for (const auto& k : object.keys) {
    if (k.kind != KeyKind::string || !k.refs.empty()) continue;  // not a preset name or object
    if (const auto value = node.find(k.name)) value->as_string();
  }
}

std::int64_t read_int(const JsonNode& value, const KeySpec& key) {
  return value.as_int_in(static_cast<std::int64_t>(key.min), static_cast<std::int64_t>(key.max));
}

std::int64_t int_at(const JsonNode& node, const ObjectSpec& object, std::string_view key) {
  return read_int(node.at(key), object.key(key));
}

std::int64_t int_or(const JsonNode& node, const ObjectSpec& object, std::string_view key,
                    std::int64_t fallback) {
  const KeySpec& spec = object.key(key);
  const auto value = node.find(key);
  return value ? read_int(*value, spec) : fallback;
}

double read_number(const JsonNode& value, const KeySpec& key) {
  switch (key.check) {
    case NumberCheck::closed: return value.as_number_in(key.min, key.max);
    case NumberCheck::closed_unit: return number_in(value, key.min, key.max, key.unit);
    case NumberCheck::positive: return value.as_positive();
    case NumberCheck::positive_up_to: return positive_up_to(value, key.max, key.unit);
    case NumberCheck::fraction: return value.as_fraction();
    case NumberCheck::custom: break;
  }
  return value.as_number();
}

double number_at(const JsonNode& node, const ObjectSpec& object, std::string_view key) {
  return read_number(node.at(key), object.key(key));
}

double number_or(const JsonNode& node, const ObjectSpec& object, std::string_view key,
                 double fallback) {
  const KeySpec& spec = object.key(key);
  const auto value = node.find(key);
  return value ? read_number(*value, spec) : fallback;
}

std::string choice_or(const JsonNode& node, const ObjectSpec& object, std::string_view key,
                      const std::string& fallback) {
  return node.enum_or(key, object.key(key).choices, fallback);
}

namespace keys {

namespace {

KeySpec base(std::string name, KeyKind kind, std::string description) {
  KeySpec k;
  k.name = std::move(name);
  k.kind = kind;
  k.description = std::move(description);
  return k;
}

KeySpec number(std::string name, NumberCheck check, double min, double max,
               std::string description) {
  KeySpec k = base(std::move(name), KeyKind::number, std::move(description));
  k.check = check;
  k.min = min;
  k.max = max;
  return k;
}

}  // namespace

KeySpec integer(std::string name, std::int64_t min, std::int64_t max, std::string description) {
  KeySpec k = base(std::move(name), KeyKind::integer, std::move(description));
  k.min = static_cast<double>(min);
  k.max = static_cast<double>(max);
  return k;
}

KeySpec closed(std::string name, double min, double max, std::string description) {
  return number(std::move(name), NumberCheck::closed, min, max, std::move(description));
}

KeySpec closed_unit(std::string name, double min, double max, std::string unit,
                    std::string description) {
  KeySpec k = number(std::move(name), NumberCheck::closed_unit, min, max, std::move(description));
  k.unit = std::move(unit);
  return k;
}

KeySpec positive(std::string name, std::string description) {
  KeySpec k = number(std::move(name), NumberCheck::positive, 0,
                     std::numeric_limits<double>::infinity(), std::move(description));
  k.exclusive_min = true;
  return k;
}

KeySpec positive_up_to(std::string name, double max, std::string unit, std::string description) {
  KeySpec k = number(std::move(name), NumberCheck::positive_up_to, 0, max, std::move(description));
  k.exclusive_min = true;
  k.unit = std::move(unit);
  return k;
}

KeySpec fraction(std::string name, std::string description) {
  return number(std::move(name), NumberCheck::fraction, 0, 1, std::move(description));
}

KeySpec custom_number(std::string name, double min, double max, bool exclusive_min,
                      bool exclusive_max, std::string description) {
  KeySpec k = number(std::move(name), NumberCheck::custom, min, max, std::move(description));
  k.exclusive_min = exclusive_min;
  k.exclusive_max = exclusive_max;
  return k;
}

KeySpec flag(std::string name, std::string description) {
  return base(std::move(name), KeyKind::boolean, std::move(description));
}

KeySpec text(std::string name, std::string description) {
  return base(std::move(name), KeyKind::string, std::move(description));
}

KeySpec choice(std::string name, std::vector<std::string> choices, std::string description) {
  KeySpec k = base(std::move(name), KeyKind::choice, std::move(description));
  k.choices = std::move(choices);
  return k;
}

KeySpec object(std::string name, std::vector<std::string> refs, std::string description) {
  KeySpec k = base(std::move(name), KeyKind::object, std::move(description));
  k.refs = std::move(refs);
  return k;
}

KeySpec preset(std::string name, std::string ref, std::string description) {
  KeySpec k = base(std::move(name), KeyKind::string, std::move(description));
  k.refs = {std::move(ref)};
  return k;
}

KeySpec array(std::string name, KeySpec item, std::string description) {
  KeySpec k = base(std::move(name), KeyKind::array, std::move(description));
  k.items = {std::move(item)};
  return k;
}

KeySpec map(std::string name, std::vector<std::string> key_names, KeySpec value,
            std::string description) {
  KeySpec k = base(std::move(name), KeyKind::map, std::move(description));
  k.choices = std::move(key_names);
  k.items = {std::move(value)};
  return k;
}

KeySpec sources(std::string description) {
  return map("sources", {}, text("", "a citation"), std::move(description));
}

KeySpec required(KeySpec key) {
  key.required = true;
  return key;
}

}  // namespace keys

}  // namespace clustersim::input
