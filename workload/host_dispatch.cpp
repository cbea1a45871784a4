#include "workload/host_dispatch.hpp"

#include <utility>

namespace clustersim::workload {

namespace {

// The host issues a stretch of kernels one by one; ahead of the GPU it hides that time, but it
// cannot finish the stretch's launches sooner than their sum. The difference is added at the
// stretch's end.
void wait_at_end(Segments& stretch, double host_per_kernel_s) {
  const models::OpCost kernels = total(stretch);
  const double idle_s = kernels.kernels * host_per_kernel_s - kernels.time_s;
  if (!(idle_s > 0)) return;
  Segment wait;
  wait.cost.time_s = idle_s;
  wait.cost.host_s = idle_s;
  wait.cost.launch_s = idle_s;
  stretch.push_back(wait);
}

// A pass is the unit because the host's lead does not reliably carry over from one pass to the
// next; within a pass, a segment marked host_sync (the MoE dispatch's read of the token counts)
// ends the host's lead, so the kernels before it and those after it are two stretches.
void wait_for_host(Segments& pass, double host_per_kernel_s) {
  Segments out, stretch;
  for (const Segment& seg : pass) {
    if (seg.host_sync && !stretch.empty()) {
      wait_at_end(stretch, host_per_kernel_s);
      out.insert(out.end(), stretch.begin(), stretch.end());
      stretch.clear();
    }
    stretch.push_back(seg);
  }
  wait_at_end(stretch, host_per_kernel_s);
  out.insert(out.end(), stretch.begin(), stretch.end());
  pass = std::move(out);
}

}  // namespace

void wait_for_host(StepPasses& p, double host_per_kernel_s) {
  for (Segments* pass :
       {&p.layer_forward, &p.layer_backward, &p.layer_input_grad, &p.layer_weight_grad,
        &p.embedding_forward, &p.embedding_backward, &p.head_forward, &p.head_backward,
        &p.head_input_grad, &p.head_weight_grad, &p.moe_layer_forward, &p.moe_layer_backward,
        &p.moe_layer_input_grad, &p.moe_layer_weight_grad}) {
    wait_for_host(*pass, host_per_kernel_s);
  }
}

}  // namespace clustersim::workload
