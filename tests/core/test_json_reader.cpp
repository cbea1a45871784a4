#include <catch2/catch.hpp>

#include "core/json_reader.hpp"
#include "input/nccl_settings.hpp"

using namespace clustersim;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("edit distance counts insertions, deletions and substitutions") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("same", "same") == 0);
}

TEST_CASE("an unknown key is reported with its path and the nearest valid name") {
  const auto doc = JsonDocument::parse(R"({"parallelism": {"dpp": 2}})", "x.json");
  const auto message = error_of([&] { doc.root().at("parallelism").only_keys({"dp", "tp"}); });
  CHECK(message.find("x.json:/parallelism/dpp") != std::string::npos);
  CHECK(message.find("did you mean \"dp\"") != std::string::npos);
}

TEST_CASE("malformed JSON is reported with line and column") {
  const auto message = error_of([] { JsonDocument::parse("{\n  \"a\": 1,\n}", "bad.json"); });
  CHECK(message.find("bad.json") != std::string::npos);
  CHECK(message.find("line 3") != std::string::npos);
}

TEST_CASE("an empty file is an error, not a crash") {
  CHECK(error_of([] { JsonDocument::parse("  \n", "empty.json"); }).find("empty") !=
        std::string::npos);
}

TEST_CASE("integers must be whole and in range") {
  const auto doc = JsonDocument::parse(R"({"a": 2.5, "b": -1, "c": "3"})", "r.json");
  CHECK(error_of([&] { doc.root().int_at("a", 1, 10); }).find("/a: expected an integer") !=
        std::string::npos);
  CHECK(error_of([&] { doc.root().int_at("b", 1, 10); }).find("out of range") != std::string::npos);
  CHECK(error_of([&] { doc.root().int_at("c", 1, 10); }).find("expected an integer") !=
        std::string::npos);
}

TEST_CASE("NCCL_IB_TIMEOUT follows 4.096 us times two to the power of the value") {
  const auto doc = JsonDocument::parse(
      R"({"NCCL_IB_TIMEOUT": 22, "NCCL_IB_RETRY_CNT": 12, "NCCL_MIN_NCHANNELS": 128})", "n.json");
  const NcclSettings s = parse_nccl_settings(doc.root());
  // 4.096e-6 * 2^22 = 17.179869184 s, computed by hand.
  CHECK(s.ib_timeout_s() == Approx(17.179869184));
  // The retry counter is 3 bits wide: 12 is capped to 7, and the capping is reported.
  CHECK(s.ib_retry_cnt == 7);
  CHECK(s.ib_hang_detection_s() == Approx(17.179869184 * 8));
  CHECK(s.min_channels == kNcclMaxChannels);
  CHECK(s.warnings.size() == 2);
}

TEST_CASE("an unknown NCCL variable suggests the nearest known one") {
  const auto doc = JsonDocument::parse(R"({"NCCL_IB_TIMEOUTS": 22})", "n.json");
  const auto message = error_of([&] { parse_nccl_settings(doc.root()); });
  CHECK(message.find("n.json:/NCCL_IB_TIMEOUTS") != std::string::npos);
  CHECK(message.find("NCCL_IB_TIMEOUT\"?") != std::string::npos);
}

TEST_CASE("socket transport settings are accepted but reported as having no effect on IB") {
  const auto doc =
      JsonDocument::parse(R"({"NCCL_NSOCKS_PERTHREAD": "4", "NCCL_ALGO": "Ring"})", "n.json");
  const NcclSettings s = parse_nccl_settings(doc.root());
  REQUIRE(s.notes.size() == 2);
  for (const auto& note : s.notes) {
    if (note.name == "NCCL_NSOCKS_PERTHREAD") CHECK_FALSE(note.modelled);
    if (note.name == "NCCL_ALGO") CHECK(note.modelled);
  }
  REQUIRE(s.algos.size() == 1);
  CHECK(s.algos[0] == NcclAlgo::ring);
}
