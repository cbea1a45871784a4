// comm.nccl: every variable of NCCL's user guide (env.rst, NVIDIA/nccl tag v2.30.7-1) is
// known; the ones the simulator does not model are accepted with a note saying so.
#include <catch2/catch.hpp>
#include <climits>
#include <functional>
#include <map>
#include <set>

#include "core/json_reader.hpp"
#include "input/nccl_settings.hpp"
#include "input/nccl_variables.hpp"
#include "tests/config_error_of.hpp"

using namespace clustersim;
using clustersim::test::error_of;

namespace {

NcclSettings parse(const std::string& json) {
  return parse_nccl_settings(JsonDocument::parse(json, "n.json").root());
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A value each modelled variable accepts (env.rst "Values accepted").
const std::map<std::string, std::string> kModelledValues = {
    {"NCCL_ALGO", "Ring"},         {"NCCL_PROTO", "Simple"},  {"NCCL_MIN_NCHANNELS", "4"},
    {"NCCL_MAX_NCHANNELS", "4"},   {"NCCL_MIN_CTAS", "4"},    {"NCCL_MAX_CTAS", "4"},
    {"NCCL_NET_GDR_LEVEL", "PXB"}, {"NCCL_P2P_LEVEL", "NVL"}, {"NCCL_BUFFSIZE", "4194304"},
    {"NCCL_NVLS_ENABLE", "1"},     {"NCCL_IB_TIMEOUT", "20"}, {"NCCL_IB_RETRY_CNT", "7"}};

}  // namespace

TEST_CASE("the table holds every variable of NCCL's environment-variable guide, once") {
  const auto table = documented_nccl_variables();
  // env.rst at v2.30.7-1 has 113 variable sections, counted by their headings: the System
  // configuration section opens with NCCL_SOCKET_IFNAME, Debugging ends with
  // NCCL_SYM_GIN_KERNELS_ENABLE.
  CHECK(table.size() == 113);
  std::set<std::string> names;
  for (const auto& v : table) names.insert(v.name);
  CHECK(names.size() == table.size());
  CHECK(std::string(table.front().name) == "NCCL_SOCKET_IFNAME");
  CHECK(std::string(table.back().name) == "NCCL_SYM_GIN_KERNELS_ENABLE");
  for (const char* name :
       {"NCCL_P2P_NET_CHUNKSIZE", "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_CUMEM_ENABLE",
        "NCCL_NET_GDR_C2C", "NCCL_RAS_ENABLE", "NCCL_CTA_POLICY"})
    CHECK(names.count(name) == 1);
}

TEST_CASE("each variable is either modelled or accepted with the reason it has no effect") {
  for (const auto& v : documented_nccl_variables()) {
    std::string value = "x";
    if (!v.unmodelled_because) {
      REQUIRE(kModelledValues.count(v.name) == 1);
      value = kModelledValues.at(v.name);
    } else if (v.kind == NcclValueKind::flag) {
      value = "1";
    } else if (v.kind == NcclValueKind::integer) {
      value = std::to_string(v.min == LONG_MIN ? 0 : v.min);
    }
    INFO(v.name << "=" << value);
    const NcclSettings s = parse("{\"" + std::string(v.name) + "\": \"" + value + "\"}");
    REQUIRE(s.notes.size() == 1);
    CHECK(s.notes[0].modelled == (v.unmodelled_because == nullptr));
    CHECK_FALSE(s.notes[0].explanation.empty());
  }
}

TEST_CASE("NCCL_P2P_NET_CHUNKSIZE from NVIDIA's recipes is accepted with no modelled effect") {
  const NcclSettings s = parse(R"({"NCCL_P2P_NET_CHUNKSIZE": 524288})");
  REQUIRE(s.notes.size() == 1);
  CHECK(s.notes[0].name == "NCCL_P2P_NET_CHUNKSIZE");
  CHECK(s.notes[0].value == "524288");
  CHECK_FALSE(s.notes[0].modelled);
  CHECK(contains(s.notes[0].explanation, "point-to-point"));
  CHECK(s.given.at("NCCL_P2P_NET_CHUNKSIZE") == "524288");
  // Nothing modelled moves: the buffer stays at NCCL's documented default of 4 MiB.
  CHECK(s.buffsize_bytes == 4194304.0);
  CHECK(s.warnings.empty());
}

TEST_CASE("a misspelt NCCL variable is refused with the documented name it resembles") {
  const auto message = error_of([] { parse(R"({"NCCL_P2P_NET_CHUNK_SIZE": "524288"})"); });
  CHECK(contains(message, "n.json:/NCCL_P2P_NET_CHUNK_SIZE: unknown NCCL variable"));
  CHECK(contains(message, "did you mean \"NCCL_P2P_NET_CHUNKSIZE\"?"));
}

TEST_CASE("a documented type is checked and a bad value refused at its JSON path") {
  SECTION("0 or 1") {
    CHECK(contains(error_of([] { parse(R"({"NCCL_IB_ADAPTIVE_ROUTING": "yes"})"); }),
                   "n.json:/NCCL_IB_ADAPTIVE_ROUTING: \"yes\" is not 0 or 1"));
    CHECK(contains(error_of([] { parse(R"({"NCCL_CUMEM_ENABLE": 2})"); }),
                   "n.json:/NCCL_CUMEM_ENABLE: \"2\" is not 0 or 1"));
  }
  SECTION("an integer in the documented range") {
    // env.rst: NCCL_CGA_CLUSTER_SIZE "0 to 8".
    CHECK(contains(error_of([] { parse(R"({"NCCL_CGA_CLUSTER_SIZE": 9})"); }),
                   "n.json:/NCCL_CGA_CLUSTER_SIZE: 9 is out of range; expected 0 to 8"));
    CHECK(contains(error_of([] { parse(R"({"NCCL_P2P_NET_CHUNKSIZE": "512k"})"); }),
                   "n.json:/NCCL_P2P_NET_CHUNKSIZE: \"512k\" is not an integer"));
  }
  SECTION("one of NCCL_NTHREADS' four values") {
    // env.rst: "The values allowed are 64, 128, 256 and 512."
    CHECK(contains(error_of([] { parse(R"({"NCCL_NTHREADS": 96})"); }),
                   "n.json:/NCCL_NTHREADS: 96 is not a power of two"));
    CHECK(contains(error_of([] { parse(R"({"NCCL_NTHREADS": 1024})"); }), "expected 64 to 512"));
    CHECK(parse(R"({"NCCL_NTHREADS": 256})").notes.size() == 1);
  }
  SECTION("names, lists and paths are taken as text") {
    const NcclSettings s =
        parse(R"({"NCCL_DEBUG_SUBSYS": "INIT,^NET", "NCCL_IB_HCA": "=mlx5_0:1"})");
    CHECK(s.notes.size() == 2);
  }
}
