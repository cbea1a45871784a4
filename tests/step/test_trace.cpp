// The Perfetto trace `run --trace` writes: each compute block (a pass of one micro-batch) with
// the kernels and the tensor-parallel collectives it is made of nested inside it on the rank's
// compute track, with their FLOPs, bytes and group as arguments.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/workload/fixtures.hpp"

using namespace clustersim;
using nlohmann::json;

namespace {

json trace_of(const json& scenario, const std::string& name) {
  std::ofstream(name + ".json") << scenario.dump(2);
  const std::string cmd = std::string(CLUSTERSIM_BINARY) + " run " + name +
                          ".json --quiet --trace " + name + "-trace.json > " + name + ".txt 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(name + "-trace.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

// Complete events of one track (pid, tid).
std::vector<json> track(const json& trace, int pid, int tid) {
  std::vector<json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == pid && e["tid"] == tid) out.push_back(e);
  }
  return out;
}

bool within(const json& inner, const json& outer) {
  const double slack = 1e-6;  // microseconds
  return outer["ts"].get<double>() <= inner["ts"].get<double>() + slack &&
         inner["ts"].get<double>() + inner["dur"].get<double>() <=
             outer["ts"].get<double>() + outer["dur"].get<double>() + slack;
}

}  // namespace

TEST_CASE("run's trace nests kernels and TP collectives inside their pass, with arguments") {
  // The small model (8 layers, hidden 1024, 8 heads, GeLU MLP 4096, vocabulary 32000) on one
  // node at tp 8 with sequence parallelism, sequences of 1024 tokens, micro-batch 1.
  const json trace = trace_of(test::small_scenario(8, 1, 8, 1), "test_trace_small");
  const std::vector<json> rank0 = track(trace, 0, 0);  // node 0, rank 0's compute track
  REQUIRE_FALSE(rank0.empty());

  // Sequence parallelism's reduce-scatters and all-gathers move the layer's activations:
  // s x b x h x 2 bytes = 1024 x 1 x 1024 x 2 = 2,097,152 bytes (the nccl-tests size); the
  // vocabulary-parallel cross-entropy all-reduces an FP32 value per token: 1024 x 4 = 4,096.
  int collectives = 0;
  for (const auto& c : rank0) {
    if (c["cat"] != "tp") continue;
    ++collectives;
    CAPTURE(c.dump());
    CHECK(c["args"]["group"] == "tp");
    const bool loss = c["args"]["collective"] == "cross-entropy all-reduce";
    CHECK(c["args"]["bytes"].get<double>() == (loss ? 4096.0 : 2097152.0));
    const bool nested = std::any_of(rank0.begin(), rank0.end(), [&](const json& p) {
      return p["cat"] == "compute" && p["name"] != "kernels" && within(c, p);
    });
    CHECK(nested);
  }
  CHECK(collectives > 0);

  // The first forward pass executes, per tensor-parallel rank, the layers' GEMMs 24 s h^2 and
  // causal attention 2 s^2 h (half the score matrix), and the LM head 2 s h V, divided by tp:
  //   8 x (24 x 1024 x 1024^2 + 2 x 1024^2 x 1024) = 223,338,299,392
  //   2 x 1024 x 1024 x 32000                       =  67,108,864,000
  //   (223,338,299,392 + 67,108,864,000) / 8        =  36,305,895,424
  const auto f0 =
      std::find_if(rank0.begin(), rank0.end(), [](const json& p) { return p["name"] == "F0"; });
  REQUIRE(f0 != rank0.end());
  CHECK((*f0)["args"]["FLOPs"].get<double>() == Approx(36305895424.0).epsilon(1e-12));
  // Its kernels' FLOPs add up to it.
  double inside = 0;
  for (const auto& k : rank0) {
    if (k["name"] == "kernels" && within(k, *f0)) inside += k["args"]["FLOPs"].get<double>();
  }
  CHECK(inside == Approx((*f0)["args"]["FLOPs"].get<double>()).epsilon(1e-12));
}
