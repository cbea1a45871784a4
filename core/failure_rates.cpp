#include "core/failure_rates.hpp"

#include <stdexcept>

namespace clustersim {

namespace {

// Llama 3 405B training run ("The Llama 3 Herd of Models", arXiv 2407.21783, §3.3.4):
// 16,384 H100 GPUs on Grand Teton servers of 8 GPUs, a 54-day snapshot, 419 unexpected
// interruptions broken down in Table 5.
constexpr double kLlama3Gpus = 16384;
constexpr double kLlama3GpusPerNode = 8;
constexpr double kLlama3Days = 54;
constexpr double kHoursPerDay = 24;
// One 400 Gb/s NIC per GPU on Llama 3's RoCE fabric (§3.3.1) [U: read as one NIC per GPU].
constexpr double kLlama3NicsPerGpu = 1;
constexpr double kLlama3UnexpectedInterruptions = 419;

// Meta RSC ("Revisiting Reliability in Large-Scale ML Research Clusters", HPCA'25): cluster
// failure rate r_f per 1000 node-days [S, docs/faults.md#failure-statistics].
constexpr double kRsc1FailuresPer1000NodeDays = 6.50;
constexpr double kRsc2FailuresPer1000NodeDays = 2.34;

const char* kLlama3Source = "Llama 3 Herd of Models (arXiv 2407.21783) Table 5";

struct Llama3Row {
  const char* name;
  const char* description;
  double count;  // unexpected interruptions in Table 5
  FailureUnit unit;
  Detection detection;
  const char* unit_note;  // why this unit / detection
};

// Table 5 grouped into causes the simulator distinguishes. Units: GPU-side faults per GPU;
// NICs per NIC; host-side faults per node; switches and cables per GPU (a Clos fabric's link
// count grows with the GPUs it serves); software bugs per node (more processes, more crashes)
// [assumption: Table 5 does not say how bugs scale].
const Llama3Row kLlama3Rows[] = {
    {"gpu", "Faulty GPU", 148, FailureUnit::gpu, Detection::crash, "Xid errors end the process"},
    {"hbm", "GPU HBM3 memory", 72, FailureUnit::gpu, Detection::crash,
     "uncorrectable ECC aborts the process"},
    {"gpu_sram", "GPU SRAM", 19, FailureUnit::gpu, Detection::crash, ""},
    {"gpu_system_processor", "GPU system processor", 17, FailureUnit::gpu, Detection::crash, ""},
    {"gpu_thermal", "GPU thermal interface + sensor", 6, FailureUnit::gpu, Detection::crash, ""},
    {"silent_data_corruption", "Silent data corruption", 6, FailureUnit::gpu, Detection::crash,
     "found by checks, then restarted"},
    {"nic", "NIC", 7, FailureUnit::nic, Detection::network, "NCCL's IB transport times out"},
    {"network", "Network switch/cable", 35, FailureUnit::gpu, Detection::network, ""},
    {"nccl_watchdog", "NCCL watchdog timeouts", 7, FailureUnit::gpu, Detection::hang,
     "a collective hangs until the watchdog fires"},
    {"host_maintenance", "Unplanned host maintenance", 32, FailureUnit::node, Detection::crash, ""},
    {"host_hardware", "SSD 3, power supply 3, chassis/IO board/dependency/CPU/system memory 2 each",
     16, FailureUnit::node, Detection::crash, ""},
    {"software", "Software bug", 54, FailureUnit::node, Detection::crash, ""},
};

std::vector<FailureCause> llama3_causes() {
  std::vector<FailureCause> out;
  for (const auto& row : kLlama3Rows) {
    double exposure = llama3_gpu_hours();
    if (row.unit == FailureUnit::node) exposure = llama3_node_hours();
    if (row.unit == FailureUnit::nic) exposure = llama3_gpu_hours() * kLlama3NicsPerGpu;
    FailureCause c;
    c.name = row.name;
    c.description = row.description;
    c.rate_per_unit_hour = row.count / exposure;
    c.unit = row.unit;
    c.detection = row.detection;
    c.source = std::string(kLlama3Source) + ": " + std::to_string(static_cast<int>(row.count)) +
               " of 419 in " + (row.unit == FailureUnit::node ? "node" : "GPU") +
               "-hours of 16,384 GPUs x 54 days";
    out.push_back(std::move(c));
  }
  return out;
}

// RSC: the published total per node-day, split over causes in Llama 3's proportions (RSC's
// per-cause split is not in the sources at hand). Every cause is then counted per node.
std::vector<FailureCause> rsc_causes(double per_1000_node_days, const char* cluster) {
  std::vector<FailureCause> out;
  const double total_per_node_hour = per_1000_node_days / 1000.0 / kHoursPerDay;
  for (const auto& row : kLlama3Rows) {
    FailureCause c;
    c.name = row.name;
    c.description = row.description;
    c.rate_per_unit_hour = total_per_node_hour * row.count / kLlama3UnexpectedInterruptions;
    c.unit = FailureUnit::node;
    c.detection = row.detection;
    c.source = std::string("Meta RSC (HPCA'25) ") + cluster +
               " r_f = " + std::to_string(per_1000_node_days).substr(0, 4) +
               " per 1000 node-days, split by the Llama 3 Table 5 mix";
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

const char* to_string(FailureUnit u) {
  return kFailureUnitNames.name(u);
}

const char* to_string(Detection d) {
  return kDetectionNames.name(d);
}

double llama3_gpu_hours() {
  return kLlama3Gpus * kLlama3Days * kHoursPerDay;
}
double llama3_node_hours() {
  return llama3_gpu_hours() / kLlama3GpusPerNode;
}

const std::vector<std::string>& failure_model_names() {
  static const std::vector<std::string> names = {"llama3", "rsc1", "rsc2", "none"};
  return names;
}

std::vector<FailureCause> default_failure_causes(const std::string& model) {
  if (model == "llama3") return llama3_causes();
  if (model == "rsc1") return rsc_causes(kRsc1FailuresPer1000NodeDays, "RSC-1");
  if (model == "rsc2") return rsc_causes(kRsc2FailuresPer1000NodeDays, "RSC-2");
  if (model == "none") return {};
  throw std::invalid_argument("default_failure_causes: unknown model \"" + model + "\"");
}

}  // namespace clustersim
