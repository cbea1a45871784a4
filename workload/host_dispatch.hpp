// The host's share of a pass: a Python training loop issues kernels one at a time
// (models::ComputeCostModel::host_per_kernel_s), and a pass whose kernels the GPU runs faster
// than the host issues them waits for the host (docs/system-calibration.md#host-dispatch).
#pragma once

#include "workload/pass_builder.hpp"

namespace clustersim::workload {

// Appends to each pass of `p` whose kernels take the GPU less time than the host needs to issue
// them (kernels x host_per_kernel_s) one segment of host time with the GPU idle, the
// difference. Passes the GPU keeps busy longer are left as they are. A segment marked host_sync
// splits its pass in two, each stretch judged alone (the wait of the first goes before it).
void wait_for_host(StepPasses& p, double host_per_kernel_s);

}  // namespace clustersim::workload
