#include "campaign/section.hpp"

#include <utility>

namespace clustersim::campaign {

SectionDocument::SectionDocument(JsonDocument document, std::string file, std::string pointer)
    : document_(std::move(document)),
      file_(std::make_shared<const std::string>(std::move(file))),
      pointer_(std::move(pointer)) {}

std::optional<SectionDocument> SectionDocument::open(const RawSection& section) {
  if (!section.present()) return std::nullopt;
  return parse(section.json, section.file, section.pointer);
}

SectionDocument SectionDocument::parse(const std::string& json, const std::string& file,
                                       const std::string& pointer) {
  // A parse error here can only come from hand-written test input; it names the file and the
  // section's pointer because the text is not the file's own text.
  try {
    return SectionDocument(JsonDocument::parse(json, file), file, pointer);
  } catch (const ConfigError& e) {
    throw ConfigError(file, pointer, e.message());
  }
}

JsonNode SectionDocument::root() const {
  // Same JSON value, but the file and pointer of the section in the original scenario file.
  return JsonNode(document_.root().raw(), file_, pointer_);
}

void SourceRef::fail(const std::string& message) const {
  throw ConfigError(file, pointer, message);
}

}  // namespace clustersim::campaign
