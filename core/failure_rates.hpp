// Run-level failure processes, as the scenario's "faults.failure_rates" gives them: one Poisson
// process per cause, with a rate per unit-hour of the component that fails (a GPU, a node, a
// NIC), and how the job notices the failure.
//
// Default rates come from published failure tables (cited per cause in failure_rates.cpp):
//   "llama3": Llama 3 405B, Table 5 (419 unexpected interruptions, 16,384 H100, 54 days);
//   "rsc1" / "rsc2": Meta RSC, "Revisiting Reliability in Large-Scale ML Research Clusters"
//     (HPCA'25): 6.50 / 2.34 failures per 1000 node-days, split over causes with the Llama 3 mix.
#pragma once

#include <string>
#include <vector>

#include "core/name_table.hpp"

namespace clustersim {

// The component a rate is counted per.
enum class FailureUnit { gpu, node, nic, job };
inline const NameTable<FailureUnit> kFailureUnitNames = {{FailureUnit::gpu, "gpu"},
                                                         {FailureUnit::node, "node"},
                                                         {FailureUnit::nic, "nic"},
                                                         {FailureUnit::job, "job"}};
const char* to_string(FailureUnit u);

// How the job notices a failure, which sets the detection latency:
//   crash   - a process dies (Xid error, ECC abort, host reboot): the launcher sees it exit;
//   network - a NIC, cable, switch or peer node disappears: NCCL's InfiniBand transport gives
//             up after its timeout and retries (or the framework watchdog fires first);
//   hang    - every process is alive but a collective never finishes: only the framework
//             watchdog (PyTorch's NCCL timeout) ends it.
enum class Detection { crash, network, hang };
inline const NameTable<Detection> kDetectionNames = {
    {Detection::crash, "crash"}, {Detection::network, "network"}, {Detection::hang, "hang"}};
const char* to_string(Detection d);

struct FailureCause {
  std::string name;         // key in the scenario and the reports: "gpu", "hbm", "nic", ...
  std::string description;  // the published category names it stands for
  double rate_per_unit_hour = 0;
  FailureUnit unit = FailureUnit::gpu;
  Detection detection = Detection::crash;
  std::string source;  // citation of the rate
};

// Names of the built-in rate sets, for errors and help.
const std::vector<std::string>& failure_model_names();

// The causes of a built-in rate set ("llama3", "rsc1", "rsc2", "none"), in a fixed order.
// Precondition: `model` is one of failure_model_names().
std::vector<FailureCause> default_failure_causes(const std::string& model);

// Exposure behind the Llama 3 rates, for reports and tests: GPU-hours and node-hours of the
// 54-day, 16,384-GPU run.
double llama3_gpu_hours();
double llama3_node_hours();

}  // namespace clustersim
