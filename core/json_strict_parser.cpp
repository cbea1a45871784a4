#include "core/json_strict_parser.hpp"

#include <algorithm>
#include <vector>

#include "core/errors.hpp"
#include "core/json_reader.hpp"

namespace clustersim {

namespace {

using json = nlohmann::json;

// nlohmann's exception id for a number that does not fit a double (out_of_range.406).
constexpr int kNumberOverflowId = 406;

// "line L, column C" of the byte at `offset` (0-based) in `text`.
std::string line_and_column(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  const std::size_t limit = std::min(offset, text.size());
  for (std::size_t i = 0; i < limit; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

bool is_integer_text(const std::string& text) {
  return text.find_first_of(".eE") == std::string::npos;
}

// Builds the document as nlohmann's own DOM parser does (json_sax_dom_parser), checking depth,
// duplicate keys and number overflow on the way; knows the JSON pointer of every value.
class CheckedDomBuilder {
 public:
  CheckedDomBuilder(const std::string& text, const std::string& file, json& root,
                    NumberTexts& number_texts)
      : text_(text), file_(file), root_(root), number_texts_(number_texts) {}

  bool null() { return add(json(nullptr)); }
  bool boolean(bool v) { return add(json(v)); }
  bool number_integer(json::number_integer_t v) { return add(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return add(json(v)); }
  bool number_float(json::number_float_t v, const std::string& text) {
    if (is_integer_text(text)) number_texts_[next_pointer()] = text;
    return add(json(v));
  }
  bool string(std::string& v) { return add(json(std::move(v))); }
  bool binary(json::binary_t& v) { return add(json(std::move(v))); }

  bool start_object(std::size_t /*elements*/) { return open(json::object()); }
  bool start_array(std::size_t /*elements*/) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    Frame& top = frames_.back();
    if (top.value->contains(k)) {
      throw ConfigError(file_, top.pointer + "/" + json_pointer_escape(k),
                        "duplicate key \"" + k + "\"; a key may appear once in an object");
    }
    top.key = k;
    top.slot = &(*top.value)[k];
    return true;
  }

  bool parse_error(std::size_t position, const std::string& token, const json::exception& e) {
    if (e.id == kNumberOverflowId) {
      // `position` is just past the number: point at its first character.
      const std::string where = line_and_column(text_, position - std::min(position, token.size()));
      throw ConfigError(file_, next_pointer(),
                        "the number " + token + " (" + where + ") is too large for a double");
    }
    const std::string where = line_and_column(text_, position == 0 ? 0 : position - 1);
    std::string detail = e.what();
    const auto colon = detail.rfind(": ");
    if (colon != std::string::npos) detail = detail.substr(colon + 2);
    throw ConfigError(file_, "", "malformed JSON at " + where + ": " + detail);
  }

 private:
  struct Frame {
    json* value;
    std::string pointer;
    std::string key;       // objects: the key whose value comes next
    json* slot = nullptr;  // objects: where that value goes
  };

  // The JSON pointer of the value that arrives next.
  std::string next_pointer() const {
    if (frames_.empty()) return "";
    const Frame& top = frames_.back();
    if (top.value->is_array()) return top.pointer + "/" + std::to_string(top.value->size());
    return top.pointer + "/" + json_pointer_escape(top.key);
  }

  // Places `v` where the next value goes; returns it in its place.
  json* place(json v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& top = frames_.back();
    if (top.value->is_array()) {
      top.value->push_back(std::move(v));
      return &top.value->back();
    }
    *top.slot = std::move(v);
    return top.slot;
  }

  bool add(json v) {
    place(std::move(v));
    return true;
  }

  bool open(json container) {
    std::string pointer = next_pointer();
    if (static_cast<int>(frames_.size()) >= kMaxJsonDepth) {
      throw ConfigError(
          file_, pointer,
          "arrays and objects are nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    json* value = place(std::move(container));
    frames_.push_back(Frame{value, std::move(pointer)});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  const std::string& text_;
  const std::string& file_;
  json& root_;
  NumberTexts& number_texts_;
  std::vector<Frame> frames_;
};

}  // namespace

StrictJson parse_strict_json(const std::string& text, const std::string& file) {
  // nlohmann's lexer ends the input at a NUL byte, so a valid document followed by a NUL and
  // anything at all would be accepted. JSON text never contains one (RFC 8259 §7 requires
  // control characters in strings to be escaped).
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    throw ConfigError(file, "",
                      "malformed JSON at " + line_and_column(text, nul) +
                          ": a NUL byte (JSON text cannot contain one; is the file binary or "
                          "truncated?)");
  }
  auto value = std::make_unique<json>();
  auto number_texts = std::make_shared<NumberTexts>();
  CheckedDomBuilder builder(text, file, *value, *number_texts);
  json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true);
  return StrictJson{std::move(value), std::move(number_texts)};
}

}  // namespace clustersim
