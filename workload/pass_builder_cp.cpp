// PassBuilder's context parallelism (parallelism.cp > 1): how K and V of the whole sequence reach
// each rank's attention, and the work each implementation adds around the attention kernel
// (core/scenario.hpp CpImplementation; docs/context-parallel.md).
#include "workload/kernel_traffic.hpp"
#include "workload/pass_builder.hpp"

namespace clustersim::workload {

using namespace kernel_traffic;
using models::OpCost;

namespace {

// `kernels` of PyTorch's eager kernels, one per tensor, moving `bytes` between them.
OpCost pytorch_kernels(const models::ComputeCostModel& c, double bytes, double kernels) {
  OpCost o = c.pytorch_op(bytes);
  o += c.launches(kernels - 1);
  return o;
}

}  // namespace

// K and V of the whole sequence, gathered across the CP group (elements -> bytes).
double PassBuilder::kv_bytes_elements() const {
  if (d_.mla) return d_.b * d_.S * d_.hl * (d_.d_nope + d_.d_rope + d_.d_v);
  return 2 * d_.b * d_.S * attention_kv_heads() * d_.d;
}

double PassBuilder::attention_kv_heads() const {
  return s_.training.repeat_kv ? d_.hl : d_.gl;
}

bool PassBuilder::torch_cp() const {
  return d_.cp > 1 && s_.parallelism.cp_implementation == CpImplementation::torch;
}

bool PassBuilder::p2p_cp() const {
  return d_.cp > 1 && s_.parallelism.cp_implementation == CpImplementation::p2p;
}

bool PassBuilder::gather_cp() const {
  return d_.cp > 1 && s_.parallelism.cp_implementation == CpImplementation::all_gather;
}

// The attention kernel's time that a P2P ring hides its transfers behind: each of the cp - 1
// hops travels while the step before it computes (Transformer Engine posts the next step's
// send/receive before launching the current step's attention), so cp - 1 of the cp steps.
double PassBuilder::ring_overlap_s(const OpCost& attention) const {
  return attention.time_s * (d_.cp - 1) / d_.cp;
}

// [K/V exchange], the attention kernel, and the merge of its steps' outputs.
void PassBuilder::context_attention_forward(Segments& out, OpCost& c) {
  const OpCost attention = attention_forward();
  if (d_.cp > 1) {
    flush(out, c);
    if (p2p_cp()) {
      // cp - 1 hops of one rank's K/V chunk each: an all-gather's bytes on the ring.
      out.push_back(
          coll(CollKind::all_gather, Group::cp, kv_bytes_elements(), "context KV ring (P2P)"));
      beside(out.back(), ring_overlap_s(attention));
    } else {
      // PyTorch issues its all-gather before the first ring step and waits for it at the second,
      // but the gather is taken as exposed: beside the attention kernel it would take SMs and
      // HBM bandwidth the model does not price for CP collectives (docs/context-parallel.md).
      out.push_back(
          coll(CollKind::all_gather, Group::cp, kv_bytes_elements(), "context KV all-gather"));
    }
  }
  c += attention;
  c += torch_cp_merge();
  c += p2p_cp_merge();
  c += gather_cp_forward();
}

// The attention backward and the dK/dV exchange.
void PassBuilder::context_attention_backward(Segments& out, OpCost& c) {
  const OpCost attention = attention_backward();
  if (torch_cp() || gather_cp()) {
    // PyTorch's backward and Transformer Engine's all-gather backward gather K and V again
    // rather than keeping the forward's (only this rank's chunk is saved).
    flush(out, c);
    out.push_back(
        coll(CollKind::all_gather, Group::cp, kv_bytes_elements(), "context KV all-gather"));
  }
  c += attention;
  c += torch_cp_accumulate();
  c += p2p_cp_accumulate();
  c += gather_cp_backward();
  if (d_.cp > 1) {
    flush(out, c);
    out.push_back(context_dkv_exchange());
    if (p2p_cp()) beside(out.back(), ring_overlap_s(attention));
  }
}

// The dK/dV exchange after the attention backward. all_gather: a reduce-scatter of the whole
// sequence's gradients in the activation dtype. torch: FP32 accumulators of this rank's K/V
// chunk passed to the next rank at each of cp ring steps, cp x chunk = the whole sequence's
// K/V in FP32 sent per rank, which a ring reduce-scatter sends for cp / (cp - 1) times that
// input. p2p: each backward step passes on the K/V chunk it used and the dK/dV accumulator of
// that chunk (Transformer Engine's p2p_comm_buffers hold both), 16-bit: twice the forward's
// ring bytes, as one all-gather of both.
Segment PassBuilder::context_dkv_exchange() {
  if (p2p_cp()) {
    return coll(CollKind::all_gather, Group::cp, 2 * kv_bytes_elements(),
                "context KV and dKV ring (P2P)");
  }
  if (!torch_cp()) {
    return coll(CollKind::reduce_scatter, Group::cp, kv_bytes_elements(),
                "context dKV reduce-scatter");
  }
  const double cp = d_.cp;
  return coll(CollKind::reduce_scatter, Group::cp, kv_bytes_elements() * cp / (cp - 1),
              "context dKV ring (FP32)", Dtype::fp32);
}

// Elements of this rank's attention output and of its query and K/V chunk gradients.
double PassBuilder::cp_output_elements() const {
  return d_.T * d_.hl * (d_.mla ? d_.d_v : d_.d);
}
double PassBuilder::cp_query_elements() const {
  return d_.T * d_.hl * (d_.mla ? d_.d_nope + d_.d_rope : d_.d);
}
// Elements of the K/V chunk this rank holds (and of its dK/dV): 1/cp of the whole sequence's.
double PassBuilder::cp_kv_chunk_elements() const {
  return kv_bytes_elements() / d_.cp;
}

// PyTorch CP's FP32 merge of the cp ring steps' outputs (forward, and its recomputation), and
// the copy of the K/V chunk into the send buffer before each step but the last.
OpCost PassBuilder::torch_cp_merge() const {
  if (!torch_cp()) return {};
  const double kv = cp_kv_chunk_elements();
  return c_.pytorch_op(cp_output_elements() *
                           (kTorchCpMergeBytes * (d_.cp - 1) + kTorchCpOutputCastBytes) +
                       kv * kTorchCpKvCatBytes * (d_.cp - 1));
}

// PyTorch CP's backward: each ring step's dQ, dK, dV added into FP32 accumulators of this
// rank's Q and its current K/V chunk, the K/V chunk copied before each send but the last, the
// FP32 dK/dV accumulator copied before every send, the accumulators' zero fill and final casts.
OpCost PassBuilder::torch_cp_accumulate() const {
  if (!torch_cp()) return {};
  const double kv = cp_kv_chunk_elements();
  const double grads = cp_query_elements() + kv;
  return c_.pytorch_op(
      grads * (kTorchCpAccumulateBytes * d_.cp + kTorchCpGradInitBytes + kTorchCpGradCastBytes) +
      kv * (kTorchCpKvCatBytes * (d_.cp - 1) + kTorchCpGradKvCatBytes * d_.cp));
}

// Transformer Engine's ring, forward: cp attention calls where one rank's K/V would need one
// (the attention kernel's FLOPs are the same), the first step's output rescaled into the running
// output and every later step's merged into it, each by one fused kernel, after a correction of
// the softmax statistics (a tensor head_dim times smaller: its kernels counted, its bytes not).
OpCost PassBuilder::p2p_cp_merge() const {
  if (!p2p_cp()) return {};
  const double steps_after_first = d_.cp - 1;
  OpCost c = c_.launches(steps_after_first);  // the further attention calls
  c += c_.launches(steps_after_first);        // the softmax statistics' corrections
  c += c_.memory_op(cp_output_elements() * kTeCpFirstStepBytes);
  for (int i = 1; i < d_.cp; ++i) c += c_.memory_op(cp_output_elements() * kTeCpStepMergeBytes);
  return c;
}

// Transformer Engine's ring, backward: cp attention backward calls; each step's dQ and its K/V
// chunk's dK and dV are copied (first step) or added (later steps) into their accumulators by
// PyTorch's copy_ and add_, one kernel per tensor.
OpCost PassBuilder::p2p_cp_accumulate() const {
  if (!p2p_cp()) return {};
  const double kv = cp_kv_chunk_elements();
  constexpr double kTensorsPerStep = 3;  // dQ, dK, dV
  OpCost c = c_.launches(d_.cp - 1);     // the further attention backward calls
  for (int i = 0; i < d_.cp; ++i) {
    const double bytes = i == 0 ? kTeCpGradFirstStepBytes : kTeCpGradStepAddBytes;
    c += pytorch_kernels(c_, (cp_query_elements() + kv) * bytes, kTensorsPerStep);
  }
  return c;
}

// Transformer Engine's all-gather CP, forward: the gathered K and V reordered into sequence order
// (one index_select each), a second attention call (one per local query chunk: rank r's chunks
// r and 2 cp - 1 - r, whose FLOPs add up to the one call priced), and the two calls' outputs
// copied into this rank's output.
OpCost PassBuilder::gather_cp_forward() const {
  if (!gather_cp()) return {};
  OpCost c = c_.launches(1);  // the second attention call
  c += pytorch_kernels(c_, kv_bytes_elements() * kTeCpKvReorderBytes, 2);   // K, V
  c += pytorch_kernels(c_, cp_output_elements() * kTeCpChunkCopyBytes, 2);  // one per call
  return c;
}

// Transformer Engine's all-gather CP, backward: the whole sequence's dK and dV zero-filled, the
// gathered K and V reordered, a second attention backward call, the two calls' dQ copied into
// this rank's, each call's dK and dV added into the accumulators over the keys it attended to
// (chunks 0 .. r and 0 .. 2 cp - 1 - r: 2 cp + 1 of the 2 cp chunks of the sequence together),
// and the accumulators reordered back before their reduce-scatter.
OpCost PassBuilder::gather_cp_backward() const {
  if (!gather_cp()) return {};
  const double kv = kv_bytes_elements();
  const double attended = (2.0 * d_.cp + 1) / (2.0 * d_.cp);
  OpCost c = c_.launches(1);                              // the second attention backward call
  c += pytorch_kernels(c_, kv * kTeCpGradZeroBytes, 2);   // dK, dV zeroed
  c += pytorch_kernels(c_, kv * kTeCpKvReorderBytes, 2);  // K, V reordered
  c += pytorch_kernels(c_, cp_query_elements() * kTeCpChunkCopyBytes, 2);  // one dQ per call
  c += pytorch_kernels(c_, kv * attended * kTeCpGradStepAddBytes, 4);      // dK, dV per call
  c += pytorch_kernels(c_, kv * kTeCpKvReorderBytes, 2);                   // dK, dV reordered
  return c;
}

}  // namespace clustersim::workload
