#include "workload/host_dispatch.hpp"

namespace clustersim::workload {

namespace {

// The host issues a pass's kernels one by one; ahead of the GPU it hides that time, but it
// cannot finish a pass's launches sooner than their sum. A pass is the unit because the host's
// lead does not reliably carry over from one to the next (Megatron-Core's MoE dispatcher waits
// for the GPU once per MoE layer); the difference is added at the pass's end.
void wait_for_host(Segments& pass, double host_per_kernel_s) {
  const models::OpCost kernels = total(pass);
  const double idle_s = kernels.kernels * host_per_kernel_s - kernels.time_s;
  if (!(idle_s > 0)) return;
  Segment wait;
  wait.cost.time_s = idle_s;
  wait.cost.host_s = idle_s;
  wait.cost.launch_s = idle_s;
  pass.push_back(wait);
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
