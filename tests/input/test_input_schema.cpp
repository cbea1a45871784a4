// The JSON Schema of the input files is generated from the loaders' key tables: each object
// lists exactly the keys the loader accepts, refuses the others, and states the loader's
// ranges. (tests/tools/check_schema.py validates the shipped files against it.)
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/json_reader.hpp"
#include "input/input_keys.hpp"
#include "input/input_schema.hpp"
#include "input/scenario_loader.hpp"
#include "tests/config_error_of.hpp"

using namespace clustersim;
using nlohmann::json;

namespace {

const json& def(const json& schema, const std::string& name) {
  return schema.at("$defs").at(name);
}

json seed_scenario() {
  return json::parse(R"({
    "model": "llama2-70b", "cluster": "h800-128x8-rail", "gpus": 1024,
    "parallelism": {"tp": 8, "pp": 2},
    "training": {"global_batch": 1024, "micro_batch": 1, "seq_len": 4096}
  })");
}

}  // namespace

TEST_CASE("every object of the schema lists exactly its loader's keys and refuses others",
          "[schema]") {
  for (const std::string& kind : input::schema_kinds()) {
    const json schema = input::input_schema(kind);
    CHECK(schema.at("$schema") == "https://json-schema.org/draft/2020-12/schema");
    CHECK(schema.at("$ref") == "#/$defs/" + kind);
    for (const auto& [name, object] : schema.at("$defs").items()) {
      INFO(kind << " $defs/" << name);
      const input::ObjectSpec* spec = input::find_object_spec(name);
      REQUIRE(spec != nullptr);
      CHECK(object.at("additionalProperties") == false);
      CHECK(object.at("properties").size() == spec->keys.size());
      for (const auto& key : spec->names()) CHECK(object.at("properties").contains(key));
    }
  }
}

TEST_CASE("a scenario's schema reaches its presets and run sections, a GPU's only its own",
          "[schema]") {
  const json scenario = input::input_schema("scenario");
  for (const char* name : {"parallelism", "training", "comm", "model", "moe", "mla", "cluster",
                           "gpu", "fabric", "faults", "event_link_degraded", "campaign"}) {
    CHECK(scenario.at("$defs").contains(name));
  }
  const json gpu = input::input_schema("gpu");
  CHECK(gpu.at("$defs").size() == 2);  // gpu and peak_tflops
  CHECK_THROWS_AS(input::input_schema("sweep"), std::invalid_argument);
}

TEST_CASE("a key the loader refuses as unknown is absent from the schema", "[schema]") {
  json doc = seed_scenario();
  doc["training"]["seq_length"] = 4096;
  const std::string message =
      test::error_of([&] { load_scenario(JsonDocument::parse(doc.dump(), "probe.json")); });
  CHECK(message.find("probe.json:/training/seq_length") == 0);
  const json training = def(input::input_schema("scenario"), "training");
  CHECK_FALSE(training.at("properties").contains("seq_length"));
  CHECK(training.at("properties").contains("seq_len"));
}

TEST_CASE("the schema states the loader's integer bounds and refuses what it refuses", "[schema]") {
  const json p = def(input::input_schema("scenario"), "parallelism").at("properties");
  // tp: 1 to 2^12 = 4096; zero_stage: ZeRO stages 0 to 3.
  CHECK(p.at("tp").at("minimum") == 1);
  CHECK(p.at("tp").at("maximum") == 4096);
  CHECK(p.at("zero_stage").at("maximum") == 3);
  CHECK(p.at("schedule").at("enum") ==
        json::array({"1f1b", "interleaved", "gpipe", "zb-h1", "dualpipe"}));
  json doc = seed_scenario();
  doc["parallelism"]["tp"] = 4097;
  const std::string message =
      test::error_of([&] { load_scenario(JsonDocument::parse(doc.dump(), "probe.json")); });
  CHECK(message.find("probe.json:/parallelism/tp: 4097 is out of range") == 0);
  CHECK(message.find("[1, 4096]") != std::string::npos);
}

TEST_CASE("hardware bounds are given in the unit of the key name", "[schema]") {
  const json g = def(input::input_schema("gpu"), "gpu").at("properties");
  // HBM between 1 MB and 1 PB: 1e6 B / 1e9 B per GB = 1e-3 GB; 1e15 / 1e9 = 1e6 GB.
  CHECK(g.at("hbm_GB").at("minimum").get<double>() == Approx(1e-3));
  CHECK(g.at("hbm_GB").at("maximum").get<double>() == Approx(1e6));
  // Launch overhead at most 1 s = 1e6 us.
  CHECK(g.at("kernel_launch_us").at("maximum").get<double>() == Approx(1e6));
  const json c = def(input::input_schema("cluster"), "cluster").at("properties");
  // A NIC between 1 MB/s = 8 Mbit/s = 0.008 Gbit/s and 1 EB/s = 8e9 Gbit/s.
  CHECK(c.at("nic_Gbps").at("minimum").get<double>() == Approx(0.008));
  CHECK(c.at("nic_Gbps").at("maximum").get<double>() == Approx(8e9));
  // The GPU is a preset name or an inline GPU.
  CHECK(c.at("gpu").at("anyOf").at(0).at("type") == "string");
  CHECK(c.at("gpu").at("anyOf").at(1).at("$ref") == "#/$defs/gpu");
}

TEST_CASE("required keys and the kinds of scripted faults are in the schema", "[schema]") {
  const json s = input::input_schema("scenario");
  CHECK(def(s, "scenario").at("required") ==
        json::array({"model", "cluster", "gpus", "parallelism", "training"}));
  const json events = def(s, "faults").at("properties").at("events").at("items").at("oneOf");
  CHECK(events.size() == 4);
  const json degraded = def(s, "event_link_degraded");
  CHECK(degraded.at("properties").at("kind").at("enum") == json::array({"link_degraded"}));
  CHECK(degraded.at("required") == json::array({"kind", "link", "bandwidth_factor"}));
  // A remaining bandwidth fraction in (0, 1): both ends open.
  const json factor = degraded.at("properties").at("bandwidth_factor");
  CHECK(factor.at("exclusiveMinimum") == 0.0);
  CHECK(factor.at("exclusiveMaximum") == 1.0);
}

TEST_CASE("asking a key table for a key it does not list is a programming error", "[schema]") {
  CHECK_THROWS_AS(input::training_keys().key("seq_length"), std::logic_error);
  CHECK(input::training_keys().key("seq_len").required);
}
