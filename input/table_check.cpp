#include "input/table_check.hpp"

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "core/config_errors.hpp"
#include "input/framework_names.hpp"
#include "input/input_keys.hpp"

namespace clustersim::input {

namespace {

class Walk {
 public:
  std::vector<ConfigError> errors;

  void object(const JsonNode& node, const ObjectSpec& spec) {
    if (!attempt([&] { node.require_object(); })) return;
    const std::vector<std::string> names = spec.names();
    for (const auto& [key, value] : node.members()) {
      if (std::find(names.begin(), names.end(), key) == names.end()) {
        unknown(node, key, value, spec);
      } else {
        this->value(value, spec.key(key));
      }
    }
    for (const KeySpec& k : spec.keys) {
      if (k.required && !node.has(k.name)) attempt([&] { node.at(k.name); });
    }
  }

 private:
  template <typename F>
  bool attempt(F&& f) {
    try {
      f();
      return true;
    } catch (const ConfigError& e) {
      errors.push_back(e);
      return false;
    }
  }

  // The loaders answer Megatron-LM / NeMo names in these two sections before their key check.
  static bool answers_framework_names(const ObjectSpec& spec) {
    return &spec == &parallelism_keys() || &spec == &training_keys();
  }

  void unknown(const JsonNode& node, const std::string& key, const JsonNode& value,
               const ObjectSpec& spec) {
    // The key alone, in an object at the node's path: the loader's own message for it.
    const nlohmann::json alone = {{key, value.raw()}};
    const JsonNode single(alone, std::make_shared<const std::string>(node.file()), node.pointer());
    attempt([&] {
      if (answers_framework_names(spec)) refuse_framework_names(single);
      single.only_keys(spec.names());
    });
  }

  void value(const JsonNode& v, const KeySpec& k) {
    switch (k.kind) {
      case KeyKind::integer: attempt([&] { read_int(v, k); }); break;
      case KeyKind::number: attempt([&] { read_number(v, k); }); break;
      case KeyKind::boolean: attempt([&] { v.as_bool(); }); break;
      case KeyKind::string:
        // A preset: a name (the loader resolves it) or an inline object of the preset's shape.
        if (!k.refs.empty() && v.is_object()) {
          referenced(v, k);
        } else {
          attempt([&] { v.as_string(); });
        }
        break;
      case KeyKind::choice:
        if (!k.refs.empty() && v.is_object()) {
          referenced(v, k);
        } else if (!k.choices.empty()) {
          attempt([&] { v.as_enum(k.choices); });
        }
        break;
      case KeyKind::object: referenced(v, k); break;
      case KeyKind::array: items(v, k); break;
      case KeyKind::map: map_values(v, k); break;
      case KeyKind::string_or_integer: break;  // the NCCL loader checks each variable's value
    }
  }

  // One shape: walk it. Several (fault events by kind): the loader picks and checks the shape.
  void referenced(const JsonNode& v, const KeySpec& k) {
    if (k.refs.size() != 1) return;
    if (const ObjectSpec* spec = find_object_spec(k.refs.front())) object(v, *spec);
  }

  void items(const JsonNode& v, const KeySpec& k) {
    std::vector<JsonNode> list;
    if (!attempt([&] { list = v.items(); })) return;
    for (const JsonNode& item : list) value(item, k.items.front());
  }

  // Map keys have the loader's own messages (NCCL variables); only the values are walked.
  void map_values(const JsonNode& v, const KeySpec& k) {
    if (!attempt([&] { v.require_object(); })) return;
    for (const auto& [key, item] : v.members()) value(item, k.items.front());
  }
};

}  // namespace

std::vector<ConfigError> table_errors(const JsonNode& node, const ObjectSpec& spec) {
  Walk w;
  w.object(node, spec);
  return std::move(w.errors);
}

std::vector<ConfigError> scenario_table_errors(const JsonDocument& document) {
  return table_errors(document.root(), scenario_keys());
}

void rethrow_with_table_errors(const ConfigError& first, const JsonDocument& document) {
  if (first.file() != document.file()) throw first;
  std::vector<ConfigError> further;
  std::size_t omitted = 0;
  std::set<std::string> seen = {first.pointer()};
  for (ConfigError& e : scenario_table_errors(document)) {
    if (!seen.insert(e.pointer()).second) continue;
    if (further.size() + 1 < kMaxReportedErrors) {
      further.push_back(std::move(e));
    } else {
      ++omitted;
    }
  }
  if (further.empty()) throw first;
  throw ConfigErrors(first, std::move(further), omitted);
}

}  // namespace clustersim::input
