// Item 4 of the fidelity work: every published run of the suite ran, so the memory model must not
// call one "does not fit" (over the HBM less the CUDA context). A layout over the usable HBM but
// inside the unverified fragmentation reserve ("tight") is allowed: whether it fits depends on
// fragmentation the model does not know. The runs the model still gets wrong are named here with
// the reason; a new one fails the test.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "input/scenario_loader.hpp"
#include "models/memory.hpp"
#include "validation/suite.hpp"

using namespace clustersim;

namespace {

// validation/REPORT.md, thirty-fifth revision: the rule's schedule for Llama 3's 8,192-GPU row
// (Megatron-LM's interleaved 1F1B with N = pp) keeps 141 one-layer chunks in flight on rank 1,
// 78.9 GiB per GPU, 0.5 GiB over an H100's; the paper says the run needed no activation
// checkpointing, so Meta's schedule or stack held less, by an amount not published.
const std::map<std::string, std::string> kKnownOver = {
    {"llama3_405b_t4_8192gpu_seq8192", "the rule's interleaved schedule with N = pp"}};

}  // namespace

TEST_CASE("no published run of the suite is called does not fit, but those named with a reason") {
  const auto suite = validation::load_published_suite(
      std::string(CLUSTERSIM_SOURCE_DIR) + "/validation/suites/published-runs/suite.json");
  REQUIRE(suite.cases.size() >= 50);
  int over = 0;
  for (const auto& c : suite.cases) {
    const models::MemoryEstimate m = models::estimate_memory(load_scenario(c.scenario_path));
    const bool does_not_fit = !m.fits() && !m.tight();
    INFO(c.id << ": " << m.peak_bytes() / kGiB << " GiB per GPU, " << m.physical_bytes() / kGiB
              << " GiB beside the CUDA context");
    CHECK(does_not_fit == (kKnownOver.count(c.id) == 1));
    over += does_not_fit;
  }
  CHECK(over == static_cast<int>(kKnownOver.size()));
}
