// Checkpoint interval formulas.
//
// Both give the compute time between the end of one checkpoint and the start of the next,
// for a checkpoint that stops training for `save_s` seconds and a job mean time between
// failures of `mtbf_s` seconds (failures that roll the job back to its last checkpoint).
#pragma once

namespace clustersim::campaign {

// Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974:
// tau = sqrt(2 * delta * M). Preconditions: save_s > 0, mtbf_s > 0.
double young_interval_s(double save_s, double mtbf_s);

// Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
// FGCS 22(3), 2006, eq. (37): for delta < 2M,
//   tau = sqrt(2 delta M) * [1 + (1/3) sqrt(delta / 2M) + (1/9) (delta / 2M)] - delta,
// else tau = M. Preconditions: save_s > 0, mtbf_s > 0.
double daly_interval_s(double save_s, double mtbf_s);

// First-order fraction of time spent training (Young/Daly's waste model;
// docs/faults.md#checkpoint-and-restart): 1 - delta/tau - (tau/2 + R)/M, clamped at 0. Used for
// reports, not by the Monte Carlo.
double first_order_goodput(double interval_s, double save_s, double restart_s, double mtbf_s);

}  // namespace clustersim::campaign
