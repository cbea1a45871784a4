// All the mistakes of a file in one run: the loader's first error, then what the key tables see
// in the rest of the document, each with the message the loader gives for it alone.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/config_errors.hpp"
#include "core/json_reader.hpp"
#include "input/input_keys.hpp"
#include "input/scenario_loader.hpp"
#include "input/table_check.hpp"

using namespace clustersim;
using nlohmann::json;

namespace {

json base() {
  return json::parse(R"({
    "name": "bad", "model": "llama3-8b", "cluster": "h800-128x8-rail", "gpus": 16,
    "parallelism": {"tp": 8, "pp": 1, "sequence_parallel": true},
    "training": {"global_batch": 64, "micro_batch": 1, "seq_len": 4096},
    "comm": {"grad_dtype": "bf16"}
  })");
}

// What loading `doc` as "bad.json" reports: the first error, the further ones, how many more,
// and the text the tool prints (FAIL when the document loads).
struct Reported {
  std::vector<ConfigError> errors;
  std::size_t omitted = 0;
  bool several = false;
  std::string text;
  const ConfigError& first() const { return errors.front(); }
};

Reported load_error(const json& doc) {
  try {
    load_scenario(JsonDocument::parse(doc.dump(), "bad.json"));
  } catch (const ConfigError& e) {
    Reported r{{e}, 0, false, describe_config_error(e)};
    if (const auto* all = dynamic_cast<const ConfigErrors*>(&e)) {
      r.several = true;
      r.errors.insert(r.errors.end(), all->further().begin(), all->further().end());
      r.omitted = all->omitted();
    }
    return r;
  }
  FAIL("the document loaded: " << doc.dump());
  throw std::logic_error("unreachable");
}

// The base with one mistake: `pointer` set to `value` (or removed when value is null).
json broken(const std::string& pointer, const json& value) {
  json doc = base();
  if (value.is_null()) {
    const json::json_pointer p(pointer);
    doc.at(p.parent_pointer()).erase(p.back());
  } else {
    doc[json::json_pointer(pointer)] = value;
  }
  return doc;
}

struct Mistake {
  std::string pointer;  // where the error is reported
  std::string set;      // what is set (differs for a missing key: its object)
  json value;
};

std::vector<std::string> files_under(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string p = e.path().string();
    if (p.size() >= suffix.size() &&
        p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("every mistake of a file is reported, each with the message it gets alone") {
  const std::vector<Mistake> mistakes = {
      {"/gpus", "/gpus", "sixteen"},
      {"/parallelism/tensor_model_parallel_size", "/parallelism/tensor_model_parallel_size", 8},
      {"/parallelism/zero_stage", "/parallelism/zero_stage", 5},
      {"/training/precision", "/training/precision", "bf17"},
      {"/training/recompte", "/training/recompte", "full"},
      {"/training/seq_len", "/training/seq_len", nullptr},
      {"/comm/compression/warmup_fraction",
       "/comm/compression",
       {{"kind", "onebit_adam"}, {"warmup_fraction", 2}}},
      {"/cost/usd_per_gpu_hour", "/cost", {{"usd_per_gpu_hour", -1}, {"source", "a quote"}}},
  };
  json all = base();
  for (const Mistake& m : mistakes) {
    if (m.value.is_null()) {
      all.at(json::json_pointer(m.set).parent_pointer()).erase(json::json_pointer(m.set).back());
    } else {
      all[json::json_pointer(m.set)] = m.value;
    }
  }
  const Reported r = load_error(all);
  CHECK(r.several);
  CHECK(r.omitted == 0);
  const std::vector<ConfigError>& reported = r.errors;
  REQUIRE(reported.size() == mistakes.size());
  std::set<std::string> pointers;
  for (const ConfigError& e : reported) {
    INFO(e.what());
    CHECK(e.file() == "bad.json");
    pointers.insert(e.pointer());
    // The same message as the file with that one mistake gets from the loader.
    const auto m = std::find_if(mistakes.begin(), mistakes.end(),
                                [&](const Mistake& x) { return x.pointer == e.pointer(); });
    REQUIRE(m != mistakes.end());
    CHECK(std::string(load_error(broken(m->set, m->value)).first().what()) == e.what());
  }
  CHECK(pointers.size() == mistakes.size());
}

TEST_CASE("a file with more mistakes than the limit reports the limit and counts the rest") {
  json doc = base();
  for (int i = 0; i < 30; ++i) doc["training"]["extra_key_" + std::to_string(100 + i)] = i;
  const Reported r = load_error(doc);
  CHECK(r.several);
  CHECK(r.errors.size() == input::kMaxReportedErrors);
  CHECK(r.omitted == 30 - input::kMaxReportedErrors);
  CHECK(r.text.find("... and 10 more errors in bad.json") != std::string::npos);
}

TEST_CASE("one mistake is reported as before: a single ConfigError") {
  const Reported r = load_error(broken("/training/precision", "bf17"));
  CHECK_FALSE(r.several);
  CHECK(r.text == "error: " + std::string(r.first().what()) + "\n");
}

TEST_CASE("a rule across keys waits until the keys themselves are right") {
  json doc = base();
  doc["parallelism"]["tp"] = 3;        // does not divide the heads: the loader's rule
  doc["training"]["dropout"] = "yes";  // a type error the loader meets first
  const Reported r = load_error(doc);
  CHECK(r.first().pointer() == "/training/dropout");
  CHECK_FALSE(r.several);  // tp 3 is no table error: the rule says it once the types are right
}

TEST_CASE("the tables see no mistake in any shipped scenario or preset") {
  const std::string root = CLUSTERSIM_SOURCE_DIR;
  std::vector<std::pair<std::string, const input::ObjectSpec*>> files;
  for (const auto& f : files_under(root + "/scenarios", ".json"))
    files.emplace_back(f, &input::scenario_keys());
  for (const auto& f : files_under(root + "/validation/suites", ".scenario.json"))
    files.emplace_back(f, &input::scenario_keys());
  for (const auto& f : files_under(root + "/models/presets", ".json"))
    files.emplace_back(f, &input::model_keys());
  for (const auto& f : files_under(root + "/topologies/gpus", ".json"))
    files.emplace_back(f, &input::gpu_keys());
  for (const auto& f : files_under(root + "/topologies/clusters", ".json"))
    files.emplace_back(f, &input::cluster_keys());
  REQUIRE(files.size() > 100);
  for (const auto& [file, spec] : files) {
    INFO(file);
    const auto errors = input::table_errors(JsonDocument::load(file).root(), *spec);
    CHECK(errors.empty());
    if (!errors.empty()) CHECK(std::string(errors.front().what()).empty());
  }
}
