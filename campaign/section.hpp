// Reading one of the scenario's raw sections ("faults", "checkpointing", "cost", "campaign").
//
// core/ keeps these sections as serialized JSON with the file and JSON pointer they came from
// (RawSection). SectionDocument parses that text again and re-roots it, so that every node it
// hands out reports the ORIGINAL file and pointer in its errors:
//   scenarios/x.json:/faults/events/2/rank: 4096 is not a rank of this 1024-GPU job
#pragma once

#include <optional>
#include <string>

#include "core/json_reader.hpp"
#include "core/scenario.hpp"

namespace clustersim::campaign {

class SectionDocument {
 public:
  // The parsed section, or nullopt when the scenario has no such section.
  static std::optional<SectionDocument> open(const RawSection& section);
  // Parses `json` as if it were the value at `pointer` inside `file` (tests, inline input).
  static SectionDocument parse(const std::string& json, const std::string& file,
                               const std::string& pointer);

  // The section's root node; its pointer is the section's pointer in the original file.
  JsonNode root() const;

 private:
  SectionDocument(JsonDocument document, std::string file, std::string pointer);
  JsonDocument document_;
  std::shared_ptr<const std::string> file_;
  std::string pointer_;
};

// Where a parsed value came from, kept in validated structs so that checks made later (once
// the step time is known) can still name the file and JSON pointer.
struct SourceRef {
  std::string file;
  std::string pointer;
  static SourceRef of(const JsonNode& node) { return {node.file(), node.pointer()}; }
  [[noreturn]] void fail(const std::string& message) const;
};

}  // namespace clustersim::campaign
