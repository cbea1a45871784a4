#include "input/input_schema.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/json_reader.hpp"
#include "input/input_keys.hpp"

namespace clustersim::input {

namespace {

using nlohmann::json;

constexpr const char* kDraft = "https://json-schema.org/draft/2020-12/schema";

json ref_to(const std::string& name) {
  return {{"$ref", "#/$defs/" + name}};
}

json refs_schema(const std::vector<std::string>& refs) {
  if (refs.size() == 1) return ref_to(refs.front());
  json one_of = json::array();
  for (const auto& r : refs) one_of.push_back(ref_to(r));
  return {{"oneOf", one_of}};
}

void add_bounds(json& s, const KeySpec& k) {
  const bool integer = k.kind == KeyKind::integer;
  const auto value = [integer](double v) {
    return integer ? json(static_cast<std::int64_t>(v)) : json(v);
  };
  if (std::isfinite(k.min)) s[k.exclusive_min ? "exclusiveMinimum" : "minimum"] = value(k.min);
  if (std::isfinite(k.max)) s[k.exclusive_max ? "exclusiveMaximum" : "maximum"] = value(k.max);
}

json key_schema(const KeySpec& k);

// The schema of the value alone, before alternatives (refs) and the description.
json value_schema(const KeySpec& k) {
  switch (k.kind) {
    case KeyKind::integer:
    case KeyKind::number: {
      json s = {{"type", k.kind == KeyKind::integer ? "integer" : "number"}};
      add_bounds(s, k);
      return s;
    }
    case KeyKind::boolean: return {{"type", "boolean"}};
    case KeyKind::string: return {{"type", "string"}};
    case KeyKind::choice: return {{"type", "string"}, {"enum", k.choices}};
    case KeyKind::object: return refs_schema(k.refs);
    case KeyKind::array: {
      json s = {{"type", "array"}, {"items", key_schema(k.items.front())}};
      if (k.unique_items) s["uniqueItems"] = true;
      return s;
    }
    case KeyKind::map: {
      json s = {{"type", "object"}, {"additionalProperties", key_schema(k.items.front())}};
      if (!k.choices.empty()) s["propertyNames"] = {{"enum", k.choices}};
      return s;
    }
    case KeyKind::string_or_integer: break;
  }
  return {{"type", json::array({"string", "integer"})}};
}

json key_schema(const KeySpec& k) {
  json s = value_schema(k);
  // A name or an inline object: a preset name, or the name of a setting with its defaults.
  if (!k.refs.empty() && k.kind != KeyKind::object && k.kind != KeyKind::array &&
      k.kind != KeyKind::map) {
    s = {{"anyOf", json::array({s, refs_schema(k.refs)})}};
  }
  if (!k.description.empty()) s["description"] = k.description;
  return s;
}

json object_schema(const ObjectSpec& o) {
  json properties = json::object();
  json required = json::array();
  for (const auto& k : o.keys) {
    properties[k.name] = key_schema(k);
    if (k.required) required.push_back(k.name);
  }
  json s = {{"type", "object"},
            {"description", o.description},
            {"properties", properties},
            {"additionalProperties", false}};
  if (!required.empty()) s["required"] = required;
  return s;
}

void collect_refs(const KeySpec& k, std::vector<std::string>& out) {
  out.insert(out.end(), k.refs.begin(), k.refs.end());
  for (const auto& item : k.items) collect_refs(item, out);
}

// `root` and every object it refers to, directly or not, in the order first reached.
std::vector<const ObjectSpec*> reachable(const std::string& root) {
  std::vector<std::string> pending = {root};
  std::vector<const ObjectSpec*> out;
  while (!pending.empty()) {
    const std::string name = pending.front();
    pending.erase(pending.begin());
    const ObjectSpec* spec = find_object_spec(name);
    if (spec == nullptr) throw std::logic_error("no key table named \"" + name + "\"");
    if (std::find(out.begin(), out.end(), spec) != out.end()) continue;
    out.push_back(spec);
    for (const auto& k : spec->keys) collect_refs(k, pending);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& schema_kinds() {
  static const std::vector<std::string> kinds = {"scenario", "model", "gpu", "cluster"};
  return kinds;
}

json input_schema(const std::string& kind) {
  const auto& kinds = schema_kinds();
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    throw std::invalid_argument("no schema for \"" + kind + "\"; expected one of " +
                                join_names(kinds));
  }
  json defs = json::object();
  for (const ObjectSpec* spec : reachable(kind)) defs[spec->name] = object_schema(*spec);
  return {{"$schema", kDraft},
          {"title", "clustersim " + kind + " file"},
          {"description", find_object_spec(kind)->description},
          {"$ref", "#/$defs/" + kind},
          {"$defs", defs}};
}

}  // namespace clustersim::input
