// One table of names per enum: what the loaders accept and what to_string prints come from the
// same list, so the two cannot drift apart.
//
//   inline const NameTable<Recompute> kRecomputeNames = {
//       {Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}};
//   to_string(r)                 -> kRecomputeNames.name(r)
//   loader: node.enum_at(key, kRecomputeNames.names()), then kRecomputeNames.value(name)
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clustersim {

template <typename E>
class NameTable {
 public:
  struct Entry {
    E value;
    const char* name;
  };

  NameTable(std::initializer_list<Entry> entries) : entries_(entries) {}

  // The name of `value`; "?" for a value the table does not list.
  const char* name(E value) const {
    for (const auto& e : entries_) {
      if (e.value == value) return e.name;
    }
    return "?";
  }

  // The value named `name`, if any.
  std::optional<E> find(std::string_view name) const {
    for (const auto& e : entries_) {
      if (name == e.name) return e.value;
    }
    return std::nullopt;
  }

  // The value named `name`. Precondition: `name` is one of names() (a loader checked it).
  E value(std::string_view name) const { return *find(name); }

  // Every name, in the table's order (for enum checks and error messages).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.emplace_back(e.name);
    return out;
  }

  // The names of a subset of the values, in the order given (a key that accepts only some).
  std::vector<std::string> names_of(std::initializer_list<E> values) const {
    std::vector<std::string> out;
    for (E v : values) out.emplace_back(name(v));
    return out;
  }

 private:
  std::vector<Entry> entries_;
};

}  // namespace clustersim
