#include "workload/grad_buckets.hpp"

#include <algorithm>

#include "models/transformer.hpp"

namespace clustersim::workload {

namespace {

// DeepSpeed 2021 stage 3 reduces a bucket on its reduction stream as allreduce_and_copy does
// (stage3.py v0.3.13): flatten the bucket's gradients into one tensor (read and write),
// divide it by the data-parallel size in place (read and write), all-reduce, copy each
// gradient's slice back (read and write): 6 B of HBM traffic per gradient byte.
constexpr double kDeepSpeed2021BucketBytesPerByte = 6;

bool in_fp32_groups(const Scenario& s, const std::string& group) {
  const auto& g = s.comm.fp32_layer_groups;
  return std::find(g.begin(), g.end(), group) != g.end();
}

// Fills buckets of one chunk and one group unit by unit (see pack_buckets).
class BucketPacker {
 public:
  BucketPacker(int chunk, Group group, const ReductionPlan& plan,
               const models::ComputeCostModel& compute, std::vector<GradBucket>& buckets)
      : chunk_(chunk), group_(group), plan_(plan), compute_(compute), buckets_(buckets) {}

  // Adds `params` of unit i's gradients (all of them, or its routed experts').
  void add(std::vector<GradUnit>& units, std::size_t i, double params);
  // Closes the bucket left open, if any, as one the last unit that added to it completes.
  void finish(std::vector<GradUnit>& units) {
    if (last_ < units.size()) close(units[last_], units[last_].name);
  }

 private:
  // Closes the open bucket (if any) as one that `at` completes; `last` ends its label.
  void close(GradUnit& at, const std::string& last);

  int chunk_;
  Group group_;
  const ReductionPlan& plan_;
  const models::ComputeCostModel& compute_;
  std::vector<GradBucket>& buckets_;
  double open_params_ = 0;
  Dtype open_dtype_ = Dtype::bf16;
  std::string open_first_;
  std::size_t last_ = static_cast<std::size_t>(-1);  // the last unit that added gradients
};

void BucketPacker::add(std::vector<GradUnit>& units, std::size_t i, double params) {
  if (!(params > 0)) return;
  GradUnit& unit = units[i];
  const double bytes_per = grad_bytes_per_element(unit.dtype);
  if (open_params_ > 0 && unit.dtype != open_dtype_) close(units[last_], units[last_].name);
  last_ = i;
  double left = params;
  while (left > 0) {
    if (open_params_ == 0) {
      open_dtype_ = unit.dtype;
      open_first_ = unit.name;
    }
    const double room = plan_.compressed_phase
                            ? left
                            : std::max(0.0, plan_.bucket_bytes / bytes_per - open_params_);
    const double take = std::min(left, room);
    const int open_id = static_cast<int>(buckets_.size());
    if (take > 0 && (unit.covering.empty() || unit.covering.back() != open_id)) {
      unit.covering.push_back(open_id);
    }
    open_params_ += take;
    left -= take;
    if (!plan_.compressed_phase && open_params_ * bytes_per >= plan_.bucket_bytes * (1 - 1e-12)) {
      close(unit, unit.name);
    }
  }
}

void BucketPacker::close(GradUnit& at, const std::string& last) {
  if (open_params_ <= 0) return;
  GradBucket bkt;
  bkt.id = static_cast<int>(buckets_.size());
  bkt.chunk = chunk_;
  bkt.params = open_params_;
  bkt.group = group_;
  bkt.calls = reduction_calls(plan_, open_params_, open_dtype_);
  if (plan_.deepspeed_2021) {
    bkt.stream_work_s = compute_
                            .pytorch_op(kDeepSpeed2021BucketBytesPerByte * open_params_ *
                                        grad_bytes_per_element(open_dtype_))
                            .time_s;
  }
  bkt.label = open_first_ == last ? open_first_ : open_first_ + " .. " + last;
  if (group_ == Group::expert_dp) bkt.label += " experts";
  at.buckets.push_back(bkt.id);
  buckets_.push_back(std::move(bkt));
  open_params_ = 0;
}

}  // namespace

UnitSizes unit_sizes(const Scenario& s) {
  const models::ParameterCounts counts = models::count_parameters(s.model);
  const int tp = s.parallelism.tp;
  UnitSizes u;
  u.layer = models::layer_parameters_per_tp_rank(s.model, tp);
  if (s.model.moe) {
    const models::LayerParameters moe = models::moe_layer_parameters_on_gpu(s.model, s.parallelism);
    u.moe_layer = moe.dense + moe.experts;
    u.moe_experts = moe.experts;
    for (int l = 0; l < s.model.num_layers; ++l) u.moe.push_back(s.model.is_moe_layer(l));
  }
  u.embedding = (counts.embedding) / tp + counts.position_embedding;
  const double head_params = (s.model.tied_embeddings ? counts.embedding : counts.lm_head) / tp;
  u.head = head_params + counts.final_norm;
  // Multi-token prediction modules live with the head on the last stage: each a layer like the
  // model's last plus its projection and norms (DeepSeek-V3 §2.2; models/memory.cpp).
  const int last = s.model.num_layers - 1;
  u.head +=
      s.model.mtp_layers * (u.of_layer(last) + models::mtp_module_own_parameters(s.model, tp));
  u.head_experts = s.model.mtp_layers * u.experts_of_layer(last);
  u.layer_dtype = s.comm.grad_dtype;
  u.embedding_dtype = in_fp32_groups(s, "embedding") ? Dtype::fp32 : s.comm.grad_dtype;
  u.head_dtype = in_fp32_groups(s, "lm_head") ? Dtype::fp32 : s.comm.grad_dtype;
  return u;
}

std::vector<GradUnit> grad_units(const UnitSizes& sizes, int vs, int num_vstages, int first_layer,
                                 int layers) {
  std::vector<GradUnit> u;
  if (vs == num_vstages - 1) {
    // The final norm goes with the head; tied embeddings on a separate last stage keep a copy
    // (Megatron-LM), synchronised with the first stage (add_embedding_sync_bucket).
    u.push_back({UnitKind::head,
                 sizes.head,
                 sizes.head_experts,
                 sizes.head_dtype,
                 -1,
                 "lm_head",
                 {},
                 {},
                 {}});
  }
  for (int l = first_layer + layers - 1; l >= first_layer; --l) {
    u.push_back({UnitKind::layer,
                 sizes.of_layer(l),
                 sizes.experts_of_layer(l),
                 sizes.layer_dtype,
                 l,
                 "layer " + std::to_string(l),
                 {},
                 {},
                 {}});
  }
  if (vs == 0) {
    u.push_back({UnitKind::embedding,
                 sizes.embedding,
                 0.0,
                 sizes.embedding_dtype,
                 -1,
                 "embedding",
                 {},
                 {},
                 {}});
  }
  return u;
}

ReductionPlan reduction_plan(const Scenario& s, bool compressed_phase) {
  const Parallelism& par = s.parallelism;
  ReductionPlan plan;
  plan.bucket_bytes = s.training.grad_bucket_bytes;
  plan.compressed_phase = compressed_phase;
  plan.deepspeed_2021 =
      par.zero_stage == 3 && par.zero3_implementation == Zero3Implementation::deepspeed_2021;
  // DeepSpeed 2021 stage 3 all-reduces each bucket and keeps its own slice (stage3.py
  // reduce_ipg_grads -> buffered_reduce_fallback -> allreduce_bucket with contiguous_gradients
  // off, its default).
  plan.reduce_scatter = par.zero_stage >= 1 && !plan.deepspeed_2021;
  plan.dp_ranks = par.dp * par.cp;  // gradients are reduced over dp x cp (Megatron-LM)
  plan.expert_buckets = s.model.moe && par.zero_stage < 3 && !compressed_phase;
  return plan;
}

std::vector<CommCall> reduction_calls(const ReductionPlan& plan, double params, Dtype dtype) {
  std::vector<CommCall> calls;
  if (plan.compressed_phase) {
    const double payload = onebit_payload_bytes(params, plan.dp_ranks);
    // Packed bits travel as bytes: no FP8 arithmetic in the reduction.
    calls.push_back({CollKind::all_to_all, payload, Dtype::bf16});
    calls.push_back({CollKind::all_gather, payload, Dtype::bf16});
  } else {
    calls.push_back({plan.reduce_scatter ? CollKind::reduce_scatter : CollKind::all_reduce,
                     params * grad_bytes_per_element(dtype), dtype});
  }
  return calls;
}

void pack_buckets(std::vector<GradUnit>& units, int chunk, const ReductionPlan& plan,
                  const models::ComputeCostModel& compute, std::vector<GradBucket>& buckets) {
  BucketPacker rest(chunk, Group::dp, plan, compute, buckets);
  for (std::size_t i = 0; i < units.size(); ++i) {
    rest.add(units, i, units[i].params - (plan.expert_buckets ? units[i].experts : 0.0));
  }
  rest.finish(units);
  if (!plan.expert_buckets) return;
  BucketPacker experts(chunk, Group::expert_dp, plan, compute, buckets);
  for (std::size_t i = 0; i < units.size(); ++i) experts.add(units, i, units[i].experts);
  experts.finish(units);
}

int add_embedding_sync_bucket(const Scenario& s, int stage, Dtype dtype,
                              std::vector<GradBucket>& buckets) {
  const int p = s.parallelism.pp;
  if (!s.model.tied_embeddings || p <= 1 || (stage != 0 && stage != p - 1)) return -1;
  GradBucket bkt;
  bkt.id = static_cast<int>(buckets.size());
  bkt.chunk = stage == 0 ? 0 : s.parallelism.vpp - 1;
  bkt.params = models::count_parameters(s.model).embedding / s.parallelism.tp;
  bkt.calls = {{CollKind::all_reduce, bkt.params * grad_bytes_per_element(dtype), dtype}};
  bkt.group = Group::embedding;
  bkt.label = "tied embedding gradients";
  buckets.push_back(std::move(bkt));
  return buckets.back().id;
}

}  // namespace clustersim::workload
