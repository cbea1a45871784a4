#include "workload/param_gathers.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "models/transformer.hpp"

namespace clustersim::workload {

namespace {

// DeepSpeed 2021 ZeRO-3 (v0.3.13 .. v0.5.4, deepspeed/runtime/zero/partition_parameters.py
// _allgather_param, once per parameter tensor): torch.distributed.all_gather into a list of one
// view per rank, which PyTorch's ProcessGroupNCCL serves by gathering into a flat buffer and then
// copying each rank's piece into its view (`outputTensors[i][j].copy_(outputFlattened[i][j],
// true)`): one copy per rank reading and writing its bytes (2 B of traffic per gathered
// byte). DeepSpeed PR #1188 (v0.5.5) replaced it ("all_gather will do implicit memcpy at the end of
// each ncclAllgather").
constexpr double kGatherCopyBytesPerByte = 2;
// The same function first allocates the flat buffer with torch.zeros (v0.3.13 .. v0.5.5): a
// fill kernel writing each gathered byte.
constexpr double kGatherZeroFillBytesPerByte = 1;
// Each of those copies is `Tensor::copy_(src, non_blocking=true)` issued from ProcessGroupNCCL's
// C++ loop; between two contiguous CUDA tensors of one dtype PyTorch serves it with
// cudaMemcpyAsync. The pieces are small (a few hundred KB to a few MB), so the loop is bound by
// the host's cost per call, not by HBM: submitting one copy with cudaMemcpyAsync takes about
// 5-7 us (Wu et al., "DualPath", arXiv:2602.21548, section 5.2: "submitting a single copy
// operation via cudaMemcpyAsync incurs a latency overhead of approximately 5-7 us"); the
// midpoint is taken. It is not the host's time per kernel of a Python framework's modules
// (models/compute_cost.hpp kHostPerKernelS): this loop is C++. PyTorch's own work per copy
// comes on top (below).
// ProcessGroupNCCL issues these copies after enqueueing the all-gather (the `post` step of its
// collective()), so the host submits them while the GPU gathers.
constexpr double kCudaMemcpyAsyncCallS = 6e-6;
// Before each submission the same loop picks rank j's piece with `outputFlattened[i][j]`, a
// select through PyTorch's dispatcher, and dispatches `copy_`. Timed on the CPU by
// validation/microbench/host_loop_probe.py (validation/data/host-2026-12-04/, PyTorch 1.13, one
// EPYC core): `narrow`, the same kind of view op as select, 1.21 us; a tiny `copy_` between CPU
// tensors, dispatch and a 640-byte memcpy, 0.65 us. Lower bounds for SC'21's PyTorch 1.8; the
// loop's recordStream call per rank is not measured and left out.
constexpr double kPyTorchSelectS = 1.21e-6;
constexpr double kPyTorchCopyDispatchS = 0.65e-6;
// One rank's share of the copy-out loop's host time.
constexpr double kCopyOutPerRankS = kPyTorchSelectS + kPyTorchCopyDispatchS + kCudaMemcpyAsyncCallS;
// Before the all_gather call, _allgather_param builds the list of per-rank views in Python, one
// iteration per rank: `partitions.append(flat_tensor.narrow(...))` and a comparison with
// `torch.distributed.get_rank(group=...)`. Timed on the CPU by
// validation/microbench/host_loop_probe.py: 1.65-1.75 us per rank from 8 to 2240 ranks
// (validation/data/host-2026-12-04/, CPython 3.11, PyTorch 1.13, one EPYC core). SC'21's runs had
// CPython 3.6-3.8 and PyTorch 1.8, slower interpreters, so this is a lower bound. The GPU is idle
// while it runs: the synchronize came before it, the all-gather comes after it.
constexpr double kDeepSpeed2021PartitionViewS = 1.7e-6;
// Host time of one torch.distributed.all_gather call from _allgather_param, measured on 8 A100s
// with NVLink, PyTorch 1.8 and DeepSpeed 0.3.16 (DeepSpeed issue #1069, comment of 2021-06-21:
// "the launch takes 250us about", for a parameter of 320 elements per rank). It runs after
// DeepSpeed's torch.cuda.synchronize(), so the GPU waits for it. Its work per rank (the view and
// the copy submission above) is modelled on its own, so the measured ranks' share is taken out.
constexpr double kDeepSpeed2021AllGatherCallS = 250e-6;
constexpr int kDeepSpeed2021AllGatherCallRanks = 8;
// DeepSpeed's stage3_max_live_parameters default, 1e9 elements (deepspeed/runtime/zero/
// constants.py, v0.3.13 .. v0.4.0): gathered parameters are released beyond it, so a layer
// larger than this is gathered again for its backward after the recompute forward.
constexpr double kDeepSpeedMaxLiveParameters = 1e9;
// DeepSpeed's stage3_param_persistence_threshold default, 1e5 elements (deepspeed/runtime/zero/
// constants.py, v0.3.13 .. v0.5.x): stage3.py marks every parameter with fewer elements
// persistent (ds_persist). release_sub_module never partitions a persistent parameter, so
// fetch_sub_module finds it available and gathers only the others; instead _post_step gathers
// all persistent parameters once after each optimizer step (_allgather_params).
constexpr double kDeepSpeedParamPersistenceThreshold = 1e5;
// _allgather_params copies each persistent parameter out of the gathered partitions in Python,
// one iteration per rank holding part of it: `partitions[i].narrow(...)`,
// `replicated.view(-1).narrow(...)`, `.copy_(...)`. Timed on the CPU by host_loop_probe.py:
// 3.8-4.2 us an iteration from 8 to 2240 ranks with a CPU copy (validation/data/
// host-2026-12-04/); on a GPU the copy is a cudaMemcpyAsync, counted on top
// (kCudaMemcpyAsyncCallS). A lower bound, as kDeepSpeed2021PartitionViewS.
constexpr double kDeepSpeed2021PersistentCopyIterationS = 4.0e-6;

// The parameter tensors of one layer, in forward order of their sub-modules: the first norm,
// QKV, the output projection, the second norm, the FFN's first and second linear layers.
// stage3.py fetch_sub_module gathers each parameter of a sub-module that is not available with
// its own _allgather_param call (DeepSpeed v0.3.16). A column-parallel layer's bias is as wide
// as its output slice (its matrix over h), a row-parallel layer's is h wide.
std::vector<std::pair<double, std::string>> deepspeed_2021_layer_tensors(
    const ModelSpec& m, const std::vector<double>& matrices) {
  const double h = m.hidden;
  const bool norm_bias = m.norm != "rmsnorm";
  std::vector<std::pair<double, std::string>> out;
  const auto norm = [&](int n) {
    out.push_back({h, " norm " + std::to_string(n) + " weight"});
    if (norm_bias) out.push_back({h, " norm " + std::to_string(n) + " bias"});
  };
  const auto linear = [&](std::size_t k) {
    const std::string name = " matrix " + std::to_string(k + 1);
    out.push_back({matrices[k], name});
    const bool column_parallel = k == 0 || k == 2;
    if (m.linear_biases) out.push_back({column_parallel ? matrices[k] / h : h, name + " bias"});
  };
  norm(1);
  linear(0);
  linear(1);
  norm(2);
  linear(2);
  linear(3);
  return out;
}

bool persistent(double params) {
  return params < kDeepSpeedParamPersistenceThreshold;
}

// The tensors gathered before each use: those at or above the persistence threshold (the weight
// matrices of any model the suite holds; a norm or bias would need 1e5 elements).
std::vector<std::pair<double, std::string>> gathered_layer_tensors(
    const ModelSpec& m, const std::vector<double>& matrices) {
  std::vector<std::pair<double, std::string>> out = deepspeed_2021_layer_tensors(m, matrices);
  std::erase_if(out, [](const auto& t) { return persistent(t.first); });
  return out;
}

// Host time of `calls` calls of `each_s`, with the GPU idle.
models::OpCost host_calls(double calls, double each_s) {
  models::OpCost c;
  c.kernels = calls;
  c.launch_s = calls * each_s;
  c.host_s = c.launch_s;
  c.time_s = c.launch_s;
  return c;
}

ParamGather make_gather(int id, double params, Dtype dtype, std::string label) {
  ParamGather g;
  g.id = id;
  g.params = params;
  g.call = {CollKind::all_gather, params * bytes_per_element(dtype), dtype};
  g.label = std::move(label);
  return g;
}

}  // namespace

Dtype weight_dtype(const Scenario& s) {
  const Dtype precision = s.training.precision;
  return precision == Dtype::fp8 ? Dtype::bf16 : precision;
}

// Megatron-Core 0.15-era distributed optimizer (megatron/core/distributed/
// param_and_grad_buffer.py, reuse_grad_buf_for_mxfp8_param_ag, which Megatron-Bridge's
// bf16_with_mxfp8_mixed sets with fp8_param_gather): MXFP8 parameters are all-gathered through
// the gradient buffer in 16 bits, then _post_param_sync quantizes each bucket into the MXFP8
// weights (copy_tensors_to_quantized_params). Megatron-Core's MoE guide: "50% parameter
// all-gather — with FP8 primary weights (except MXFP8)".
bool mxfp8_params_requantized(const Scenario& s) {
  const Training& t = s.training;
  return t.fp8_param_gather && t.precision == Dtype::fp8 && t.fp8_recipe == Fp8Recipe::mxfp8;
}

Dtype gathered_param_dtype(const Scenario& s) {
  return s.training.fp8_param_gather && !mxfp8_params_requantized(s) ? Dtype::fp8 : weight_dtype(s);
}

void add_zero3_gathers(const Scenario& s, std::vector<std::vector<GradUnit>>& units_per_chunk,
                       std::vector<ParamGather>& gathers) {
  const Parallelism& par = s.parallelism;
  const bool ds2021 = par.zero3_implementation == Zero3Implementation::deepspeed_2021;
  const Dtype dtype = gathered_param_dtype(s);
  const std::vector<double> matrices = models::layer_weight_matrices_per_tp_rank(s.model, par.tp);
  for (auto& units : units_per_chunk) {
    for (auto& unit : units) {
      std::vector<std::pair<double, std::string>> pieces = {{unit.params, ""}};
      if (ds2021 && unit.layer >= 0) pieces = gathered_layer_tensors(s.model, matrices);
      for (const auto& [params, suffix] : pieces) {
        const int id = static_cast<int>(gathers.size());
        gathers.push_back(make_gather(id, params, dtype, unit.name + suffix + " parameters"));
        unit.gathers.push_back(id);
      }
    }
  }
}

void add_bucket_gathers(const Scenario& s, const std::vector<GradBucket>& buckets,
                        std::vector<ParamGather>& gathers) {
  const Dtype dtype = gathered_param_dtype(s);
  for (const auto& bkt : buckets) {
    if (bkt.group != Group::dp && bkt.group != Group::expert_dp) continue;
    const int id = static_cast<int>(gathers.size());
    gathers.push_back(make_gather(id, bkt.params, dtype, bkt.label + " parameters"));
    gathers.back().group = bkt.group;
  }
}

DeepSpeed2021Gathers::DeepSpeed2021Gathers(const Scenario& s,
                                           const models::ComputeCostModel& compute,
                                           const std::vector<ParamGather>& gathers,
                                           const std::vector<std::vector<GradUnit>>& units)
    : compute_(compute),
      gathers_(gathers),
      dp_ranks_(s.parallelism.dp * s.parallelism.cp),
      param_dtype_(gathered_param_dtype(s)) {
  double layers = 0;
  for (const auto& chunk : units) {
    layers += static_cast<double>(
        std::count_if(chunk.begin(), chunk.end(), [](const GradUnit& u) { return u.layer >= 0; }));
  }
  // _allgather_params copies a tensor of p elements from each of the ceil(p / partition) ranks
  // holding part of it, the partition being ceil(p / ranks) elements.
  const std::vector<double> matrices =
      models::layer_weight_matrices_per_tp_rank(s.model, s.parallelism.tp);
  for (const auto& [params, name] : deepspeed_2021_layer_tensors(s.model, matrices)) {
    if (!persistent(params)) continue;
    persistent_elements_ += layers * params;
    persistent_copies_ += layers * std::ceil(params / std::ceil(params / dp_ranks_));
  }
  const double fixed_s =
      kDeepSpeed2021AllGatherCallS -
      kDeepSpeed2021AllGatherCallRanks * (kDeepSpeed2021PartitionViewS + kCopyOutPerRankS);
  call_ = host_calls(1, fixed_s + dp_ranks_ * kDeepSpeed2021PartitionViewS);
}

models::OpCost DeepSpeed2021Gathers::copy_submissions() const {
  return host_calls(dp_ranks_, kCopyOutPerRankS);
}

models::OpCost DeepSpeed2021Gathers::copies(double gathered_bytes) const {
  models::OpCost c = compute_.pytorch_op(kGatherCopyBytesPerByte * gathered_bytes);
  c.kernels = 0;
  c.launch_s = 0;
  c.time_s = c.memory_s;
  return c;
}

void DeepSpeed2021Gathers::emit(OpBuilder& ops, const GradUnit& unit, const OpSite& at) const {
  const OpSite site = at.at_layer(unit.layer);
  for (int id : unit.gathers) {
    const double bytes = gathers_[static_cast<std::size_t>(id)].call.bytes;
    ops.compute(ComputeKind::gather_copy, compute_.pytorch_op(kGatherZeroFillBytesPerByte * bytes),
                site);
    ops.grad_wait(site);
    ops.compute(ComputeKind::gather_copy, call_, site);
    ops.gather_issue(id, site);
    ops.compute(ComputeKind::gather_copy, copy_submissions(), site);
    ops.gather_wait(id, site);
    ops.compute(ComputeKind::gather_copy, copies(bytes), site);
  }
}

void DeepSpeed2021Gathers::emit_persistent(OpBuilder& ops, const OpSite& site) const {
  if (persistent_copies_ == 0) return;
  // One _allgather_params call: the same view loop and all_gather call as a single gather, its
  // copy submissions (the all-gather itself, of a few MB, is not simulated), the GPU's
  // copy-out, then the Python copy of each parameter rank by rank and the GPU's copies.
  const double bytes = persistent_elements_ * bytes_per_element(param_dtype_);
  ops.compute(ComputeKind::gather_copy, call_, site);
  ops.compute(ComputeKind::gather_copy, copy_submissions(), site);
  ops.compute(ComputeKind::gather_copy, copies(bytes), site);
  ops.compute(ComputeKind::gather_copy,
              host_calls(persistent_copies_,
                         kDeepSpeed2021PersistentCopyIterationS + kCudaMemcpyAsyncCallS),
              site);
  ops.compute(ComputeKind::gather_copy, copies(bytes), site);
}

bool DeepSpeed2021Gathers::regathers_for_backward(const GradUnit& unit) {
  return unit.params > kDeepSpeedMaxLiveParameters;
}

}  // namespace clustersim::workload
