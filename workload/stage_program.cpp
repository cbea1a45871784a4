#include "workload/stage_program.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "models/memory.hpp"
#include "models/pipeline.hpp"
#include "models/transformer.hpp"
#include "workload/grad_buckets.hpp"
#include "workload/kernel_traffic.hpp"
#include "workload/op_builder.hpp"
#include "workload/param_gathers.hpp"
#include "workload/schedule.hpp"

namespace clustersim::workload {

namespace {

// Mixed-precision Adam update per parameter (Rajbhandari et al. 2020 section 3.1 state sizes):
// read the master weight, momentum and variance (3 x 4 B in FP32) and the FP32 main gradient,
// write the three states back and the 16-bit model weight: 30 B with FP32 states.
constexpr double kAdamGradientReadBytes = 4;
constexpr double kAdamWeightWriteBytes = 2;
// Global gradient-norm clipping reads each FP32 main gradient once more (Megatron-LM
// clip_grads.py, multi-tensor L2 norm).
constexpr double kGradNormBytesPerParam = 4;
// training.optimizer_kernels "foreach": torch.optim.AdamW with foreach=True and capturable off
// (_multi_tensor_adamw in torch/optim/adamw.py, PyTorch 2.x; torchtitan 9dec370 passes
// foreach = not optimizer.fused, and fused defaults to false). Its passes over every parameter,
// each a full read or write of one tensor list: the decoupled weight decay (_foreach_mul_ of the
// parameters: 2 parameter accesses), the momentum (_foreach_lerp_: momentum read and written,
// gradient read), the variance (_foreach_mul_ then _foreach_addcmul_: 4 variance accesses and one
// gradient read; both gradient arguments are the same tensor, one DRAM read), the denominator
// (_foreach_sqrt reads the variance into a new list, _foreach_div_ and _foreach_add_ read and
// write it, _foreach_addcdiv_ reads it: 6 accesses in the moments' dtype) and the update
// (_foreach_addcdiv_: parameter read and written, momentum read).
constexpr double kForeachAdamParamAccesses = 2 + 2;
constexpr double kForeachAdamMomentsAccesses = 3 + (4 + 1) + 6;
constexpr double kForeachAdamGradientReadBytes = 4 + 4;  // FP32 main gradient, lerp and addcmul
// torch.nn.utils.clip_grad_norm_ (torch/nn/utils/clip_grad.py; torchtitan 9dec370 utils.py with
// foreach=True): the norm reads every FP32 gradient and _foreach_mul_ then scales every gradient
// by the clamped coefficient, unconditionally ("avoids a `if clip_coef < 1:` conditional which
// can require a CPU <=> device synchronization"): 3 accesses of 4 B.
constexpr double kClipGradNormForeachBytesPerParam = 3 * 4;
// 1-bit Adam error feedback (Tang et al. 2021, Algorithm 1): per element the worker reads the
// momentum and its error buffer (FP32), writes the new error and reads the compensated value
// again for the scale (4 x 4 B); the server repeats this on its 1/n chunk.
constexpr double kOnebitErrorFeedbackBytesPerElement = 16;
// training.grad_accumulation, per parameter: the bytes the kernels adding one micro-batch's
// weight gradient into the step's move, and their kernels per parameter tensor.
// autograd: PyTorch's AccumulateGrad with grad mode off runs `variable_grad += new_grad`
// (torch/csrc/autograd/functions/accumulate_grad.h): it reads both gradients and writes one, in
// the 16-bit parameter dtype (times bytes per element).
constexpr double kAutogradAccumulateElementAccesses = 3;
// deepspeed_bf16: BF16_Optimizer.update_hp_grads (deepspeed/runtime/bf16_optimizer.py, BigScience
// branch 5ea1c60f8, 2022-03) runs `hp_grad.add_(lp.grad.to(hp_grad.dtype))` per tensor: the cast
// reads the BF16 gradient and writes an FP32 copy, the add reads it and the FP32 gradient and
// writes the sum.
constexpr double kDeepSpeedBf16AccumulateBytes = (2 + 4) + (4 + 4 + 4);
constexpr double kDeepSpeedBf16AccumulateKernels = 2;
// PyTorch FSDP2 (Zero3Implementation::fsdp2; torch/distributed/_composable/fsdp/
// _fsdp_collectives.py, PyTorch 2.5): after waiting for a unit's all-gather on the compute stream,
// foreach_all_gather_copy_out copies the gathered buffer into the unsharded parameters
// (split_with_sizes_copy: each gathered byte read once and written once).
constexpr double kFsdp2CopyOutBytesPerByte = 2;

double adam_bytes_per_param(Dtype master_dtype, Dtype moments_dtype) {
  return 2 * models::adam_state_bytes_per_param(master_dtype, moments_dtype) +
         kAdamGradientReadBytes + kAdamWeightWriteBytes;
}

// Bytes Adam's update and the gradient clipping before it move per parameter.
double optimizer_bytes_per_param(const Training& tr) {
  if (tr.optimizer_kernels == OptimizerKernels::foreach_) {
    return kForeachAdamParamAccesses * bytes_per_element(tr.optimizer_state_dtype) +
           kForeachAdamMomentsAccesses * bytes_per_element(tr.optimizer_moments_dtype) +
           kForeachAdamGradientReadBytes + kClipGradNormForeachBytesPerParam;
  }
  return adam_bytes_per_param(tr.optimizer_state_dtype, tr.optimizer_moments_dtype) +
         kGradNormBytesPerParam;
}

double layer_count(const std::vector<int>& v, int from, int to) {
  double n = 0;
  for (int i = from; i < to; ++i) n += v[static_cast<std::size_t>(i)];
  return n;
}

// Builds one stage's program: units, buckets and gathers first, then the ops pass by pass.
class StageBuilder {
 public:
  StageBuilder(const StepPlan& plan, int stage);
  StageBuilder(const StageBuilder&) = delete;
  StageBuilder& operator=(const StageBuilder&) = delete;
  StageProgram build();

 private:
  void add_grad_units();
  void add_buckets();
  void add_gathers();
  void step_start();
  void forward(const PassSlot& slot);
  void backward(const PassSlot& slot);
  void pair(const PassSlot& f, const PassSlot& b);
  void receive(const OpSite& at);
  void hand_on(const OpSite& at);
  void post_receives(std::size_t i);
  bool receives(PassKind pass, int virtual_stage) const;
  bool receives(const PassSlot& slot) const {
    return receives(slot.kind, chain_.virtual_stage(stage_, slot.chunk));
  }
  void forward_kernels(const PassSlot& slot, const OpSite& at);
  void backward_kernels(const PassSlot& slot, const OpSite& at);
  void weight_grad(const PassSlot& slot);
  bool reducing(const PassSlot& slot) const {
    return tr_.reduce_per_micro_batch ||
           slot.micro_batch == last_backward_mb_[static_cast<std::size_t>(slot.chunk)];
  }
  // Whether the slot completes its micro-batch's weight gradients: a weight-gradient pass, or a
  // backward that computes them itself.
  static bool completes_gradients(const PassSlot& slot) {
    return slot.kind == PassKind::weight_grad ||
           (slot.kind == PassKind::backward && !slot.weight_deferred);
  }
  // A chunk's first forward (its micro-batches run in order, from chunk x m / chunks on).
  bool first_forward(const PassSlot& slot) const {
    return slot.micro_batch == first_micro_batch_[static_cast<std::size_t>(slot.chunk)];
  }
  void after_gradients(const OpSite& at);
  void tail();

  int first_layer(int vs) const { return static_cast<int>(layer_count(vstage_layers_, 0, vs)); }
  OpSite site_of(const PassSlot& slot) const;
  std::vector<const GradUnit*> pass_units(const PassSlot& slot) const;
  void gather_before(const std::vector<const GradUnit*>& units, std::size_t i, const OpSite& at,
                     bool first_forward);
  void await_zero12(const GradUnit& unit, int chunk);
  void wait_bucket_gather(int gather, const OpSite& at);
  enum class LayerPass { forward, backward, input_grad, weight_grad };
  const Segments& layer_pass(const GradUnit& unit, LayerPass pass) const;
  void unit_forward(const GradUnit& unit, const OpSite& at);
  void unit_backward(const GradUnit& unit, const OpSite& at, bool weight_deferred);
  void unit_weight_grad(const GradUnit& unit, const OpSite& at);
  void accumulate_gradients(const GradUnit& unit, const PassSlot& slot, const OpSite& at);
  void launch_reductions(const GradUnit& unit, const OpSite& at);
  void reduce_after_micro_batch(const OpSite& at);
  void optimizer();

  const StepPlan& plan_;
  const Scenario& s_;
  const Training& tr_;
  const int stage_;
  const StageChain chain_;
  const int zero_, dp_ranks_;
  const bool ds2021_, fsdp2_, zero12_overlap_, reduce_inline_;
  const int layer_tensors_;  // parameter tensors of a layer (models::layer_param_tensors)
  const std::vector<int> vstage_layers_;  // layers per model stage
  const std::vector<PassSlot> order_;     // this rank's passes in schedule order
  StageProgram prog_;
  OpBuilder ops_{prog_};
  std::vector<std::vector<GradUnit>> units_;  // per chunk, in backward order
  int embedding_sync_bucket_ = -1;
  std::optional<DeepSpeed2021Gathers> ds2021_gathers_;
  // Which micro-batch's backward (its weight-gradient pass when deferred) of a chunk launches
  // its reductions: the last one this rank runs (gradient accumulation), unless every one does.
  std::vector<int> last_backward_mb_;
  std::vector<int> first_micro_batch_;  // per chunk, of its first forward
  // Per pass in order_, the index of the next pass of the same kind (order_.size(): none), and
  // the index of the first backward (order_.size(): none).
  std::vector<std::size_t> next_same_kind_;
  std::size_t first_backward_;
  std::vector<bool> zero12_waited_;            // per ZeRO-1/2 gather
  std::vector<std::pair<int, int>> deferred_;  // (bucket, micro_batch) launched after backward
};

StageBuilder::StageBuilder(const StepPlan& plan, int stage)
    : plan_(plan),
      s_(plan.scenario),
      tr_(plan.scenario.training),
      stage_(stage),
      chain_(StageChain::of(s_.parallelism.schedule, s_.parallelism.pp, s_.parallelism.vpp)),
      zero_(s_.parallelism.zero_stage),
      dp_ranks_(s_.parallelism.dp * s_.parallelism.cp),
      ds2021_(zero_ == 3 &&
              s_.parallelism.zero3_implementation == Zero3Implementation::deepspeed_2021),
      fsdp2_(zero_ == 3 && s_.parallelism.zero3_implementation == Zero3Implementation::fsdp2),
      zero12_overlap_(zero_ >= 1 && zero_ < 3 && tr_.overlap_param_gather),
      // PyTorch's pipeline stage runs FSDP2's post-backward (its reduce-scatters) for all of a
      // stage's units after the step's last backward (backward_maybe_with_nosync).
      reduce_inline_(tr_.overlap_grad_reduce && !plan.compressed_phase &&
                     !s_.parallelism.fsdp2_keeps_gathered()),
      layer_tensors_(models::layer_param_tensors(s_.model)),
      vstage_layers_(models::layers_per_virtual_stage(s_)),
      order_(pipeline_order(s_.parallelism.schedule, chain_.p, stage,
                            static_cast<int>(s_.micro_batches()), s_.parallelism.vpp)),
      last_backward_mb_(static_cast<std::size_t>(chain_.chunks()), -1),
      first_micro_batch_(static_cast<std::size_t>(chain_.chunks()), -1),
      next_same_kind_(order_.size(), order_.size()),
      first_backward_(order_.size()) {
  prog_.stage = stage;
  for (const auto& slot : order_) {
    const auto c = static_cast<std::size_t>(slot.chunk);
    if (completes_gradients(slot)) last_backward_mb_[c] = slot.micro_batch;
    if (slot.kind == PassKind::forward && first_micro_batch_[c] < 0)
      first_micro_batch_[c] = slot.micro_batch;
  }
  std::size_t next[3] = {order_.size(), order_.size(), order_.size()};  // per PassKind
  for (std::size_t i = order_.size(); i-- > 0;) {
    const auto k = static_cast<std::size_t>(order_[i].kind);
    next_same_kind_[i] = next[k];
    next[k] = i;
  }
  first_backward_ = next[static_cast<std::size_t>(PassKind::backward)];
}

StageProgram StageBuilder::build() {
  add_grad_units();
  add_buckets();
  add_gathers();
  step_start();
  prog_.ops.close_pass(-1);
  for (std::size_t i = 0; i < order_.size(); ++i) {
    const PassSlot& slot = order_[i];
    if (slot.paired && i + 1 < order_.size()) {
      pair(slot, order_[i + 1]);
      prog_.ops.close_pass(slot.micro_batch, order_[++i].micro_batch);
      continue;
    }
    switch (slot.kind) {
      case PassKind::forward: forward(slot); break;
      case PassKind::backward: backward(slot); break;
      case PassKind::weight_grad: weight_grad(slot); break;
    }
    if (tr_.overlap_p2p_comm) post_receives(i);
    prog_.ops.close_pass(slot.micro_batch);
  }
  tail();
  prog_.ops.close_pass(-1);
  return std::move(prog_);
}

void StageBuilder::add_grad_units() {
  const UnitSizes sizes = unit_sizes(s_);
  units_.resize(static_cast<std::size_t>(chain_.chunks()));
  for (int c = 0; c < chain_.chunks(); ++c) {
    const int ms = chain_.model_stage(chain_.virtual_stage(stage_, c));
    const int layers = vstage_layers_[static_cast<std::size_t>(ms)];
    auto& u = units_[static_cast<std::size_t>(c)];
    u = grad_units(sizes, ms, chain_.model_stages(), first_layer(ms), layers);
    for (const auto& unit : u) {
      prog_.params += unit.params;
      prog_.expert_params += unit.experts;
    }
    prog_.layers += layers;
  }
}

void StageBuilder::add_buckets() {
  const ReductionPlan plan = reduction_plan(s_, plan_.compressed_phase);
  for (int c = 0; c < chain_.chunks(); ++c) {
    pack_buckets(units_[static_cast<std::size_t>(c)], c, plan, plan_.compute, prog_.buckets);
  }
  embedding_sync_bucket_ =
      add_embedding_sync_bucket(s_, stage_, unit_sizes(s_).embedding_dtype, prog_.buckets);
}

// ZeRO-3: one gather per unit, issued before every forward and backward use. ZeRO-1/2: one per
// gradient bucket, after the optimizer (or at the start of the step when overlapped with the
// first forward, Megatron-LM overlap_param_gather).
void StageBuilder::add_gathers() {
  if (zero_ == 3) {
    add_zero3_gathers(s_, units_, prog_.gathers);
  } else if (zero_ >= 1) {
    add_bucket_gathers(s_, prog_.buckets, prog_.gathers);
  }
  if (ds2021_) ds2021_gathers_.emplace(s_, plan_.compute, prog_.gathers, units_);
}

// ZeRO-1/2 gathers overlapped with the first forward: issued at the start of the step in
// forward order (the reverse of bucket order); a unit's first forward waits for the gathers of
// every bucket holding its parameters (await_zero12).
void StageBuilder::step_start() {
  if (zero12_overlap_) {
    for (int g = static_cast<int>(prog_.gathers.size()) - 1; g >= 0; --g) {
      ops_.gather_issue(g, OpSite{PassKind::forward});
    }
  }
  zero12_waited_.assign(prog_.gathers.size(), false);
}

OpSite StageBuilder::site_of(const PassSlot& slot) const {
  return {slot.kind, slot.micro_batch, slot.chunk, chain_.virtual_stage(stage_, slot.chunk), -1};
}

// Units in the order the pass visits them (units_ are in backward order).
std::vector<const GradUnit*> StageBuilder::pass_units(const PassSlot& slot) const {
  std::vector<const GradUnit*> out;
  for (const auto& unit : units_[static_cast<std::size_t>(slot.chunk)]) out.push_back(&unit);
  if (slot.kind == PassKind::forward) std::reverse(out.begin(), out.end());
  return out;
}

void StageBuilder::forward(const PassSlot& slot) {
  const OpSite at = site_of(slot);
  receive(at);
  forward_kernels(slot, at);
  hand_on(at);
}

// A backward pass. With its weight gradients deferred (zero-bubble schedules): the input
// gradient only, sent to the previous stage as soon as it is computed; the reductions wait for
// the weight-gradient pass.
void StageBuilder::backward(const PassSlot& slot) {
  const OpSite at = site_of(slot);
  receive(at);
  backward_kernels(slot, at);
  hand_on(at);
  if (!slot.weight_deferred) after_gradients(at);
}

// DualPipe's overlapped forward-backward chunk, as its reference implementation runs it
// (deepseek-ai/DualPipe, _forward_backward_chunk): receive both inputs, compute the forward and
// the backward, send both outputs. The kernels run one after the other; the overlap of one's
// all-to-alls with the other's compute is training.moe_comm_overlap's.
void StageBuilder::pair(const PassSlot& f, const PassSlot& b) {
  const OpSite fa = site_of(f);
  const OpSite ba = site_of(b);
  receive(fa);
  receive(ba);
  forward_kernels(f, fa);
  backward_kernels(b, ba);
  hand_on(fa);
  hand_on(ba);
  if (!b.weight_deferred) after_gradients(ba);
}

// The activation (forward) or gradient (backward) a pass waits for, unless its virtual stage
// starts the chain in that direction.
void StageBuilder::receive(const OpSite& at) {
  if (!receives(at.pass, at.virtual_stage)) return;
  ops_.recv(plan_.message_bytes, at);
  if (plan_.message_gather >= 0) ops_.tp_collective(plan_.message_gather, 0, at);
}

// Whether a pass of `virtual_stage` waits for a pipeline message: unless it starts the chain in
// its direction (a backward: from the chain's end).
bool StageBuilder::receives(PassKind pass, int virtual_stage) const {
  return pass == PassKind::forward ? !chain_.chain_start(virtual_stage)
                                   : !chain_.chain_end(virtual_stage);
}

// overlap_p2p_comm (Megatron-Core forward_backward_pipelining_with_interleaving): when pass `i`
// has sent its output, the receive of the next pass in its direction is posted, and after the
// last warm-up forward also the first backward's (send_backward_recv_backward at k = warm-up -
// 1). Only where that pass has something to receive, as recv_prev and recv_next say.
void StageBuilder::post_receives(std::size_t i) {
  const PassKind kind = order_[i].kind;
  if (kind != PassKind::forward && kind != PassKind::backward) return;
  const std::size_t next = next_same_kind_[i];
  if (next < order_.size() && receives(order_[next])) ops_.recv_post(kind);
  // The last warm-up forward: the pass after it is a forward followed by the first backward
  // (none when every forward is warm-up, m = p: the first backward receives when it starts).
  const bool all_warmup = s_.micro_batches() == static_cast<std::int64_t>(chain_.p);
  const bool last_warmup = kind == PassKind::forward && !all_warmup && i + 2 == first_backward_ &&
                           order_[i + 1].kind == PassKind::forward;
  if (last_warmup && receives(order_[i + 2])) ops_.recv_post(PassKind::backward);
}

// The activation or gradient a pass sends on, unless it ends the chain in that direction.
void StageBuilder::hand_on(const OpSite& at) {
  const bool last = at.pass == PassKind::forward ? chain_.chain_end(at.virtual_stage)
                                                 : chain_.chain_start(at.virtual_stage);
  if (!last) ops_.send(plan_.message_bytes, at);
}

void StageBuilder::forward_kernels(const PassSlot& slot, const OpSite& at) {
  const std::vector<const GradUnit*> units = pass_units(slot);
  for (std::size_t i = 0; i < units.size(); ++i) {
    gather_before(units, i, at, first_forward(slot));
    if (first_forward(slot)) await_zero12(*units[i], slot.chunk);
    unit_forward(*units[i], at);
  }
}

void StageBuilder::backward_kernels(const PassSlot& slot, const OpSite& at) {
  const std::vector<const GradUnit*> units = pass_units(slot);
  for (std::size_t i = 0; i < units.size(); ++i) {
    gather_before(units, i, at, false);
    unit_backward(*units[i], at, slot.weight_deferred);
    if (slot.weight_deferred) continue;
    accumulate_gradients(*units[i], slot, at);
    if (reducing(slot)) launch_reductions(*units[i], at);
  }
}

// The weight gradients of a split backward, unit by unit in backward order; each unit's
// buckets become ready after its W.
void StageBuilder::weight_grad(const PassSlot& slot) {
  const OpSite at = site_of(slot);
  for (const GradUnit* unit : pass_units(slot)) {
    unit_weight_grad(*unit, at);
    accumulate_gradients(*unit, slot, at);
    if (reducing(slot)) launch_reductions(*unit, at);
  }
  after_gradients(at);
}

// ZeRO-3 gathers before unit i of a pass; prefetched one unit ahead when overlapped (FSDP
// forward_prefetch / BackwardPrefetch.BACKWARD_PRE). FSDP2 under pipeline parallelism gathers
// only in a chunk's first forward (`first_forward`) and keeps the parameters to the step's end.
void StageBuilder::gather_before(const std::vector<const GradUnit*>& units, std::size_t i,
                                 const OpSite& at, bool first_forward) {
  if (zero_ != 3) return;
  if (s_.parallelism.fsdp2_keeps_gathered() && !first_forward) return;
  if (ds2021_) {
    ds2021_gathers_->emit(ops_, *units[i], at);
    return;
  }
  auto issue = [&](std::size_t k) {
    for (int id : units[k]->gathers) ops_.gather_issue(id, at.at_layer(units[k]->layer));
  };
  if (tr_.overlap_param_gather) {
    if (i == 0) issue(0);
    if (i + 1 < units.size()) issue(i + 1);
  } else {
    issue(i);
  }
  const OpSite site = at.at_layer(units[i]->layer);
  for (int id : units[i]->gathers) ops_.gather_wait(id, site);
  if (!fsdp2_) return;
  for (int id : units[i]->gathers) {
    const double bytes = prog_.gathers[static_cast<std::size_t>(id)].call.bytes;
    ops_.compute(ComputeKind::gather_copy,
                 plan_.compute.pytorch_op(kFsdp2CopyOutBytesPerByte * bytes), site);
  }
}

void StageBuilder::await_zero12(const GradUnit& unit, int chunk) {
  if (!zero12_overlap_) return;
  for (int bid : unit.covering) {
    if (zero12_waited_[static_cast<std::size_t>(bid)]) continue;
    zero12_waited_[static_cast<std::size_t>(bid)] = true;
    wait_bucket_gather(bid, OpSite{PassKind::forward, -1, chunk, -1, unit.layer});
  }
}

// A ZeRO-1/2 bucket's gathered parameters in use: under MXFP8 parameters Megatron-Core first
// quantizes the gathered 16-bit weights into them (mxfp8_params_requantized).
void StageBuilder::wait_bucket_gather(int gather, const OpSite& at) {
  ops_.gather_wait(gather, at);
  if (!mxfp8_params_requantized(s_)) return;
  const double params = prog_.gathers[static_cast<std::size_t>(gather)].params;
  ops_.compute(ComputeKind::gather_copy,
               plan_.compute.memory_op(kernel_traffic::kMxfp8QuantizeBytes * params), at);
}

// A pass of a Transformer layer: the MoE layer's for a layer with the MoE FFN, else the dense
// one.
const Segments& StageBuilder::layer_pass(const GradUnit& unit, LayerPass pass) const {
  const StepPasses& p = plan_.passes;
  const bool moe = s_.model.is_moe_layer(unit.layer);
  switch (pass) {
    case LayerPass::forward: return moe ? p.moe_layer_forward : p.layer_forward;
    case LayerPass::backward: return moe ? p.moe_layer_backward : p.layer_backward;
    case LayerPass::input_grad: return moe ? p.moe_layer_input_grad : p.layer_input_grad;
    case LayerPass::weight_grad: break;
  }
  return moe ? p.moe_layer_weight_grad : p.layer_weight_grad;
}

void StageBuilder::unit_forward(const GradUnit& unit, const OpSite& at) {
  const StepPasses& passes = plan_.passes;
  const OpSite here = at.at_layer(unit.layer);
  switch (unit.kind) {
    case UnitKind::layer:
      ops_.pass(layer_pass(unit, LayerPass::forward), ComputeKind::forward, here);
      break;
    case UnitKind::embedding:
      ops_.pass(passes.embedding_forward, ComputeKind::embedding, here);
      break;
    case UnitKind::head: ops_.pass(passes.head_forward, ComputeKind::lm_head, here); break;
  }
}

void StageBuilder::unit_backward(const GradUnit& unit, const OpSite& at, bool weight_deferred) {
  const StepPasses& passes = plan_.passes;
  const OpSite here = at.at_layer(unit.layer);
  const int first = first_layer(chain_.model_stage(at.virtual_stage));
  switch (unit.kind) {
    case UnitKind::layer:
      if (models::layer_recomputed(s_, unit.layer - first)) {
        ops_.pass(layer_pass(unit, LayerPass::forward), ComputeKind::recompute, here);
        // The recompute forward gathered the layer's matrices again (its module hooks fire);
        // DeepSpeed keeps them for the backward only while they fit under
        // stage3_max_live_parameters, else it releases and gathers them once more.
        if (ds2021_ && DeepSpeed2021Gathers::regathers_for_backward(unit)) {
          ds2021_gathers_->emit(ops_, unit, at);
        }
      }
      ops_.pass(layer_pass(unit, weight_deferred ? LayerPass::input_grad : LayerPass::backward),
                ComputeKind::backward, here);
      break;
    case UnitKind::embedding:  // all weight gradient: the W pass's when deferred
      if (!weight_deferred) ops_.pass(passes.embedding_backward, ComputeKind::embedding, here);
      break;
    case UnitKind::head:
      ops_.pass(weight_deferred ? passes.head_input_grad : passes.head_backward,
                ComputeKind::lm_head, here);
      break;
  }
}

void StageBuilder::unit_weight_grad(const GradUnit& unit, const OpSite& at) {
  const StepPasses& passes = plan_.passes;
  const OpSite here = at.at_layer(unit.layer);
  switch (unit.kind) {
    case UnitKind::layer:
      ops_.pass(layer_pass(unit, LayerPass::weight_grad), ComputeKind::backward, here);
      break;
    case UnitKind::embedding:
      ops_.pass(passes.embedding_backward, ComputeKind::embedding, here);
      break;
    case UnitKind::head: ops_.pass(passes.head_weight_grad, ComputeKind::lm_head, here); break;
  }
}

// A unit's weight gradients of this micro-batch added into the step's (training.grad_accumulation):
// nothing when the GEMM accumulates them itself; under autograd from the chunk's second
// micro-batch on (the first one's gradient becomes .grad as it is); under DeepSpeed's
// BF16_Optimizer after every micro-batch. One launch per kernel and parameter tensor; an MoE
// layer is counted with a dense layer's tensors, the embedding and the LM head as one each.
void StageBuilder::accumulate_gradients(const GradUnit& unit, const PassSlot& slot,
                                        const OpSite& at) {
  double bytes_per_param = 0;
  double kernels_per_tensor = 0;
  switch (tr_.grad_accumulation) {
    case GradAccumulation::fused: return;
    case GradAccumulation::autograd:
      if (first_forward(slot)) return;
      bytes_per_param = kAutogradAccumulateElementAccesses * bytes_per_element(weight_dtype(s_));
      kernels_per_tensor = 1;
      break;
    case GradAccumulation::deepspeed_bf16:
      bytes_per_param = kDeepSpeedBf16AccumulateBytes;
      kernels_per_tensor = kDeepSpeedBf16AccumulateKernels;
      break;
  }
  const int tensors = unit.kind == UnitKind::layer ? layer_tensors_ : 1;
  models::OpCost cost = plan_.compute.pytorch_op(bytes_per_param * unit.params);
  cost += plan_.compute.launches(kernels_per_tensor * tensors - 1);
  ops_.compute(ComputeKind::grad_accumulation, cost, at.at_layer(unit.layer));
}

// The buckets this unit completes start reducing now (overlap_grad_reduce) or after the pass.
// FSDP2 first copies the unit's gradients into the reduce-scatter input on the compute stream
// (foreach_reduce_scatter_copy_in, one chunk_cat kernel): each 16-bit gradient read, written in
// the reduce dtype.
void StageBuilder::launch_reductions(const GradUnit& unit, const OpSite& at) {
  if (fsdp2_) {
    const double bytes_per_param =
        bytes_per_element(weight_dtype(s_)) + bytes_per_element(unit.dtype);
    ops_.compute(ComputeKind::gather_copy, plan_.compute.pytorch_op(bytes_per_param * unit.params),
                 at.at_layer(unit.layer));
  }
  for (int bid : unit.buckets) {
    if (reduce_inline_) {
      ops_.grad_ready(bid, at.at_layer(unit.layer));
    } else {
      deferred_.push_back({bid, at.micro_batch});
    }
  }
}

// Without overlap, a per-micro-batch reduction blocks right after the pass that completes the
// micro-batch's gradients.
void StageBuilder::after_gradients(const OpSite& at) {
  if (!reduce_inline_ && !plan_.compressed_phase && tr_.reduce_per_micro_batch) {
    reduce_after_micro_batch(at);
  }
}

// Without overlap, a per-micro-batch reduction blocks right after its backward pass.
void StageBuilder::reduce_after_micro_batch(const OpSite& at) {
  for (const auto& [bid, mb] : deferred_) {
    ops_.grad_ready(bid, OpSite{at.pass, mb, at.chunk, at.virtual_stage, -1});
  }
  deferred_.clear();
  ops_.grad_wait(at);
}

// After the last backward: 1-bit Adam compression, deferred reductions, tied-embedding sync,
// the optimizer, and without overlap the ZeRO-1/2 gathers of the updated parameters.
void StageBuilder::tail() {
  const OpSite end{PassKind::backward};
  if (plan_.compressed_phase) {
    const double elements = prog_.params;
    const models::OpCost comp = plan_.compute.memory_op(kOnebitErrorFeedbackBytesPerElement *
                                                        elements * (1.0 + 1.0 / dp_ranks_));
    ops_.compute(ComputeKind::compression, comp, end);
  }
  for (const auto& [bid, mb] : deferred_) {
    const int chunk = prog_.buckets[static_cast<std::size_t>(bid)].chunk;
    ops_.grad_ready(bid, OpSite{PassKind::backward, mb, chunk, -1, -1});
  }
  if (embedding_sync_bucket_ >= 0) ops_.grad_ready(embedding_sync_bucket_, end);
  ops_.grad_wait(end);
  optimizer();
  if (ds2021_) ds2021_gathers_->emit_persistent(ops_, end);
  if (zero_ >= 1 && zero_ < 3 && !tr_.overlap_param_gather) {
    const OpSite update{PassKind::forward};
    for (const auto& g : prog_.gathers) ops_.gather_issue(g.id, update);
    for (const auto& g : prog_.gathers) wait_bucket_gather(g.id, update);
  }
}

// Adam over this GPU's shard: under ZeRO the routed experts' states are sharded over the
// expert-data-parallel ranks (Megatron-Core's distributed optimizer; models/memory.cpp counts
// them so), the rest over dp x cp.
void StageBuilder::optimizer() {
  const double experts = prog_.expert_params;
  const double shard =
      zero_ >= 1 ? (prog_.params - experts) / dp_ranks_ + experts / s_.parallelism.expert_dp()
                 : prog_.params;
  ops_.compute(ComputeKind::optimizer,
               plan_.compute.memory_op(optimizer_bytes_per_param(tr_) * shard),
               OpSite{PassKind::backward});
}

}  // namespace

StageProgram build_stage_program(const StepPlan& plan, int stage) {
  return StageBuilder(plan, stage).build();
}

}  // namespace clustersim::workload
