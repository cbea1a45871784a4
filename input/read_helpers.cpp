#include "input/read_helpers.hpp"

#include <algorithm>
#include <sstream>

namespace clustersim::input {

std::string number_text(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

void check_sources(const JsonNode& node, const JsonNode& sources,
                   const std::vector<std::string>& notes, std::string_view owner) {
  sources.require_object();
  for (const auto& [key, value] : sources.members()) {
    value.as_string();
    if (node.has(key) || std::find(notes.begin(), notes.end(), key) != notes.end()) continue;
    std::string message =
        "cites \"" + key + "\", which this " + std::string(owner) + " does not set";
    if (!notes.empty()) {
      message += "; a " + std::string(owner) + "'s \"sources\" name its keys, or the notes ";
      for (std::size_t i = 0; i < notes.size(); ++i) {
        if (i > 0) message += i + 1 == notes.size() ? " and " : ", ";
        message += "\"" + notes[i] + "\"";
      }
    }
    value.fail(message);
  }
}

// Every numeric key of a preset must be cited in its "sources" object.
void require_sources(const JsonNode& node, const std::vector<std::string>& numeric_keys) {
  const JsonNode sources = node.at("sources");
  check_sources(node, sources);
  for (const auto& key : numeric_keys) {
    if (node.has(key) && !sources.has(key)) {
      node.fail_at(key, "\"" + key + "\" has no citation in \"sources\"");
    }
  }
}

namespace {

std::string with_unit(double v, std::string_view unit) {
  std::string s = number_text(v);
  if (!unit.empty()) {
    s += " ";
    s += unit;
  }
  return s;
}

}  // namespace

double number_in(const JsonNode& node, double min, double max, std::string_view unit) {
  const double v = node.as_number();
  if (v < min || v > max) {
    node.fail(node.describe() + " is out of range; expected " + with_unit(min, unit) + " to " +
              with_unit(max, unit));
  }
  return v;
}

double positive_up_to(const JsonNode& node, double max, std::string_view unit) {
  const double v = node.as_positive();
  if (v > max) {
    node.fail(node.describe() + " is out of range; expected more than 0 and at most " +
              with_unit(max, unit));
  }
  return v;
}

double number_in_at(const JsonNode& node, std::string_view key, double min, double max,
                    std::string_view unit) {
  return number_in(node.at(key), min, max, unit);
}

double number_in_or(const JsonNode& node, std::string_view key, double fallback, double min,
                    double max, std::string_view unit) {
  const auto v = node.find(key);
  return v ? number_in(*v, min, max, unit) : fallback;
}

double positive_up_to_at(const JsonNode& node, std::string_view key, double max,
                         std::string_view unit) {
  return positive_up_to(node.at(key), max, unit);
}

double positive_up_to_or(const JsonNode& node, std::string_view key, double fallback, double max,
                         std::string_view unit) {
  const auto v = node.find(key);
  return v ? positive_up_to(*v, max, unit) : fallback;
}

}  // namespace clustersim::input
