#include <catch2/catch.hpp>

#include "core/json_reader.hpp"
#include "input/nccl_settings.hpp"
#include "tests/config_error_of.hpp"

using namespace clustersim;
using clustersim::test::error_of;

namespace {}  // namespace

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

TEST_CASE("a number too large for a double is refused at its JSON path, line and column") {
  const auto message =
      error_of([] { JsonDocument::parse("{\"a\": {\"gpus\": 1e309}}", "o.json"); });
  CHECK(message.find("o.json:/a/gpus") != std::string::npos);
  CHECK(message.find("1e309") != std::string::npos);
  CHECK(message.find("line 1, column") != std::string::npos);
  // The same inside an array names the element.
  CHECK(error_of([] { JsonDocument::parse("[1, -2e400]", "o.json"); }).find("o.json:/1") !=
        std::string::npos);
}

TEST_CASE("an integer beyond the target type is quoted as written, not wrapped or rounded") {
  const auto doc = JsonDocument::parse(
      R"({"a": 9223372036854775808, "b": 99999999999999999999, "c": -9223372036854775809,
          "d": 9007199254740993.0, "e": 18446744073709551615})",
      "i.json");
  const auto a = error_of([&] { doc.root().int_at("a", 1, 1 << 24); });
  CHECK(a.find("i.json:/a: 9223372036854775808 is out of range") != std::string::npos);
  CHECK(a.find("-9223372036854775808") == std::string::npos);
  // Beyond 64 bits nlohmann keeps a double; the message still quotes the digits as written.
  CHECK(error_of([&] {
          doc.root().int_at("b", 1, 10);
        }).find("/b: 99999999999999999999 is out of range") != std::string::npos);
  CHECK(error_of([&] {
          doc.root().at("c").as_int();
        }).find("/c: -9223372036854775809 is out of range") != std::string::npos);
  // 2^53 + 1 written as a double is not the integer a double holds.
  CHECK(error_of([&] { doc.root().at("d").as_int(); }).find("out of range") != std::string::npos);
  CHECK(error_of([&] { doc.root().at("e").as_int(); }).find("18446744073709551615 is out of") !=
        std::string::npos);
  // Whole numbers written as doubles within range still read as integers.
  CHECK(JsonDocument::parse(R"({"x": 1024.0})", "i.json").root().int_at("x", 1, 2048) == 1024);
}

TEST_CASE("anything after the document is refused, a NUL byte included") {
  std::string text = R"({"gpus": 8})";
  text += '\0';
  text += "garbage";
  const auto nul = error_of([&] { JsonDocument::parse(text, "t.json"); });
  CHECK(nul.find("t.json") != std::string::npos);
  CHECK(nul.find("line 1, column 12") != std::string::npos);
  CHECK(nul.find("NUL byte") != std::string::npos);
  const auto trailing = error_of([] { JsonDocument::parse("{\"gpus\": 8}\n{}", "t.json"); });
  CHECK(trailing.find("t.json:/: malformed JSON at line 2, column 1") != std::string::npos);
}

TEST_CASE("nesting deeper than the limit is refused before anything walks the document") {
  // 100,000 levels: a recursive parser, dump or destructor would overflow the stack.
  const std::string deep =
      "{\"faults\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const auto message = error_of([&] { JsonDocument::parse(deep, "d.json"); });
  CHECK(message.find("d.json:/faults/0/0/") != std::string::npos);
  CHECK(message.find("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels") !=
        std::string::npos);
  // Exactly the limit is fine: the top-level object and 63 arrays.
  const int arrays = kMaxJsonDepth - 1;
  const std::string at_limit =
      "{\"a\": " + std::string(arrays, '[') + std::string(arrays, ']') + "}";
  CHECK_NOTHROW(JsonDocument::parse(at_limit, "d.json"));
  const std::string over =
      "{\"a\": " + std::string(arrays + 1, '[') + std::string(arrays + 1, ']') + "}";
  CHECK_THROWS_AS(JsonDocument::parse(over, "d.json"), ConfigError);
}

TEST_CASE("a key given twice in one object is an error at its JSON path") {
  const auto message = error_of([] {
    JsonDocument::parse(R"({"model": "llama2-70b", "x": {"a": 1}, "model": "gpt3-175b"})",
                        "k.json");
  });
  CHECK(message.find("k.json:/model: duplicate key \"model\"") != std::string::npos);
  CHECK(error_of([] {
          JsonDocument::parse(R"({"x": [{"a~b": 1, "a~b": 2}]})", "k.json");
        }).find("k.json:/x/0/a~0b: duplicate key") != std::string::npos);
  // The same key in sibling objects is not a duplicate.
  CHECK_NOTHROW(JsonDocument::parse(R"([{"a": 1}, {"a": 2}])", "k.json"));
}
