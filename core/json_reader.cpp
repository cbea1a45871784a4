#include "core/json_reader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace clustersim {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t cost = (a[i - 1] == b[j - 1]) ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const auto& candidate : candidates) {
    const std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  // A suggestion is only useful when it is closer than a rewrite of half the word.
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 2);
  return best_distance <= limit ? best : std::string();
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  return out;
}

std::string json_pointer_escape(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

JsonNode::JsonNode(const nlohmann::json& value, std::shared_ptr<const std::string> file,
                   std::string pointer, std::shared_ptr<const NumberTexts> number_texts)
    : value_(&value),
      file_(std::move(file)),
      pointer_(std::move(pointer)),
      number_texts_(std::move(number_texts)) {}

JsonNode JsonNode::child(const nlohmann::json& value, std::string pointer) const {
  return JsonNode(value, file_, std::move(pointer), number_texts_);
}

void JsonNode::fail(const std::string& message) const {
  throw ConfigError(*file_, pointer_, message);
}

void JsonNode::fail_at(std::string_view key, const std::string& message) const {
  throw ConfigError(*file_, child_pointer(key), message);
}

std::string JsonNode::child_pointer(std::string_view key) const {
  return pointer_ + "/" + json_pointer_escape(key);
}

std::string JsonNode::describe() const {
  switch (value_->type()) {
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::null: return "null";
    default: {
      if (number_texts_ && value_->is_number()) {
        const auto written = number_texts_->find(pointer_);
        if (written != number_texts_->end()) return written->second;
      }
      std::string text = value_->dump();
      if (text.size() > 60) text = text.substr(0, 57) + "...";
      return text;
    }
  }
}

void JsonNode::require_object() const {
  if (!value_->is_object()) fail("expected an object, got " + describe());
}

bool JsonNode::has(std::string_view key) const {
  return value_->is_object() && value_->contains(std::string(key));
}

JsonNode JsonNode::at(std::string_view key) const {
  require_object();
  const auto it = value_->find(std::string(key));
  if (it == value_->end()) fail_at(key, "missing required key \"" + std::string(key) + "\"");
  return child(*it, child_pointer(key));
}

std::optional<JsonNode> JsonNode::find(std::string_view key) const {
  require_object();
  const auto it = value_->find(std::string(key));
  if (it == value_->end()) return std::nullopt;
  return child(*it, child_pointer(key));
}

void JsonNode::only_keys(const std::vector<std::string>& allowed) const {
  require_object();
  for (const auto& [key, unused] : value_->items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string message = "unknown key \"" + key + "\"";
    const std::string suggestion = nearest_name(key, allowed);
    if (!suggestion.empty()) {
      message += "; did you mean \"" + suggestion + "\"?";
    } else {
      message += "; valid keys here: " + join_names(allowed);
    }
    fail_at(key, message);
  }
}

std::vector<std::pair<std::string, JsonNode>> JsonNode::members() const {
  require_object();
  std::vector<std::pair<std::string, JsonNode>> out;
  for (const auto& [key, value] : value_->items()) {
    out.emplace_back(key, child(value, child_pointer(key)));
  }
  return out;
}

std::vector<JsonNode> JsonNode::items() const {
  if (!value_->is_array()) fail("expected an array, got " + describe());
  std::vector<JsonNode> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i) {
    out.push_back(child((*value_)[i], pointer_ + "/" + std::to_string(i)));
  }
  return out;
}

std::int64_t JsonNode::as_int() const {
  return as_int_in(std::numeric_limits<std::int64_t>::min(),
                   std::numeric_limits<std::int64_t>::max());
}

double JsonNode::as_number() const {
  if (!value_->is_number()) fail("expected a number, got " + describe());
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("expected a finite number, got " + describe());
  return v;
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + describe());
  return value_->get<bool>();
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail("expected a string, got " + describe());
  return value_->get<std::string>();
}

void JsonNode::fail_out_of_range(std::int64_t min, std::int64_t max) const {
  std::ostringstream os;
  os << describe() << " is out of range; expected an integer in [" << min << ", " << max << "]";
  fail(os.str());
}

std::int64_t JsonNode::as_int_in(std::int64_t min, std::int64_t max) const {
  // Doubles hold every integer up to 2^53 exactly; a whole double beyond that is not the
  // integer that was written.
  constexpr double kExactDoubleLimit = 9007199254740992.0;  // 2^53
  std::int64_t v = 0;
  if (value_->is_number_unsigned()) {
    const std::uint64_t u = value_->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max)) fail_out_of_range(min, max);
    v = static_cast<std::int64_t>(u);
  } else if (value_->is_number_integer()) {
    v = value_->get<std::int64_t>();
  } else if (value_->is_number_float()) {
    const double d = value_->get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) fail("expected an integer, got " + describe());
    if (std::fabs(d) >= kExactDoubleLimit) fail_out_of_range(min, max);
    v = static_cast<std::int64_t>(d);
  } else {
    fail("expected an integer, got " + describe());
  }
  if (v < min || v > max) fail_out_of_range(min, max);
  return v;
}

double JsonNode::as_positive() const {
  const double v = as_number();
  if (!(v > 0)) fail(describe() + " must be greater than 0");
  return v;
}

double JsonNode::as_non_negative() const {
  const double v = as_number();
  if (v < 0) fail(describe() + " must not be negative");
  return v;
}

double JsonNode::as_fraction() const {
  const double v = as_number();
  if (v < 0 || v > 1) fail(describe() + " must be between 0 and 1");
  return v;
}

double JsonNode::as_number_in(double min, double max) const {
  const double v = as_number();
  if (v < min || v > max) {
    std::ostringstream os;
    os << describe() << " is out of range; expected a number in [" << min << ", " << max << "]";
    fail(os.str());
  }
  return v;
}

std::string JsonNode::as_enum(const std::vector<std::string>& choices) const {
  const std::string v = as_string();
  if (std::find(choices.begin(), choices.end(), v) != choices.end()) return v;
  std::string message = "\"" + v + "\" is not one of: " + join_names(choices);
  const std::string suggestion = nearest_name(v, choices);
  if (!suggestion.empty()) message += "; did you mean \"" + suggestion + "\"?";
  fail(message);
}

std::int64_t JsonNode::int_at(std::string_view key, std::int64_t min, std::int64_t max) const {
  return at(key).as_int_in(min, max);
}

std::int64_t JsonNode::int_or(std::string_view key, std::int64_t fallback, std::int64_t min,
                              std::int64_t max) const {
  const auto node = find(key);
  return node ? node->as_int_in(min, max) : fallback;
}

double JsonNode::positive_at(std::string_view key) const {
  return at(key).as_positive();
}

double JsonNode::positive_or(std::string_view key, double fallback) const {
  const auto node = find(key);
  return node ? node->as_positive() : fallback;
}

double JsonNode::non_negative_at(std::string_view key) const {
  return at(key).as_non_negative();
}

double JsonNode::non_negative_or(std::string_view key, double fallback) const {
  const auto node = find(key);
  return node ? node->as_non_negative() : fallback;
}

double JsonNode::fraction_or(std::string_view key, double fallback) const {
  const auto node = find(key);
  return node ? node->as_fraction() : fallback;
}

double JsonNode::number_in_at(std::string_view key, double min, double max) const {
  return at(key).as_number_in(min, max);
}

double JsonNode::number_in_or(std::string_view key, double fallback, double min, double max) const {
  const auto node = find(key);
  return node ? node->as_number_in(min, max) : fallback;
}

bool JsonNode::bool_or(std::string_view key, bool fallback) const {
  const auto node = find(key);
  return node ? node->as_bool() : fallback;
}

std::string JsonNode::string_at(std::string_view key) const {
  return at(key).as_string();
}

std::string JsonNode::string_or(std::string_view key, std::string fallback) const {
  const auto node = find(key);
  return node ? node->as_string() : fallback;
}

std::string JsonNode::enum_at(std::string_view key, const std::vector<std::string>& choices) const {
  return at(key).as_enum(choices);
}

std::string JsonNode::enum_or(std::string_view key, const std::vector<std::string>& choices,
                              std::string fallback) const {
  const auto node = find(key);
  return node ? node->as_enum(choices) : fallback;
}

JsonDocument::JsonDocument(StrictJson parsed, std::shared_ptr<const std::string> file)
    : value_(std::move(parsed.value)),
      number_texts_(std::move(parsed.number_texts)),
      file_(std::move(file)) {}

JsonDocument JsonDocument::parse(const std::string& text, const std::string& name) {
  bool blank =
      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c) != 0; });
  if (blank) throw ConfigError(name, "", "the file is empty; expected a JSON object");
  return JsonDocument(parse_strict_json(text, name), std::make_shared<const std::string>(name));
}

JsonDocument JsonDocument::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot open the file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw ConfigError(path, "", "cannot read the file");
  return parse(buffer.str(), path);
}

JsonNode JsonDocument::root() const {
  return JsonNode(*value_, file_, "", number_texts_);
}

}  // namespace clustersim
