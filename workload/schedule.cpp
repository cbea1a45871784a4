#include "workload/schedule.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace clustersim::workload {

const char* to_string(PassKind k) {
  switch (k) {
    case PassKind::forward: return "forward";
    case PassKind::backward: return "backward";
    case PassKind::weight_grad: return "weight_grad";
  }
  return "?";
}

namespace {

std::vector<PassSlot> gpipe(int m) {
  std::vector<PassSlot> order;
  for (int i = 0; i < m; ++i) order.push_back({PassKind::forward, i, 0});
  for (int i = 0; i < m; ++i) order.push_back({PassKind::backward, i, 0});
  return order;
}

std::vector<PassSlot> one_f_one_b(int p, int stage, int m) {
  const int warmup = std::min(p - stage - 1, m);
  std::vector<PassSlot> order;
  for (int i = 0; i < warmup; ++i) order.push_back({PassKind::forward, i, 0});
  for (int i = 0; i < m - warmup; ++i) {
    order.push_back({PassKind::forward, warmup + i, 0});
    order.push_back({PassKind::backward, i, 0});
  }
  for (int i = m - warmup; i < m; ++i) order.push_back({PassKind::backward, i, 0});
  return order;
}

// ZB-H1 (Qi et al. 2024 section 3.1): 1F1B with W of micro-batch i after B of i + stage in the
// steady state, after each B in the cool-down, and the rest at the end.
std::vector<PassSlot> zb_h1(int p, int stage, int m) {
  const int warmup = std::min(p - stage - 1, m);
  std::vector<PassSlot> order;
  int next_w = 0;
  auto weight_grad = [&] { order.push_back({PassKind::weight_grad, next_w++, 0}); };
  for (int i = 0; i < warmup; ++i) order.push_back({PassKind::forward, i, 0});
  for (int i = 0; i < m - warmup; ++i) {
    order.push_back({PassKind::forward, warmup + i, 0});
    order.push_back({PassKind::backward, i, 0});
    if (i >= stage) weight_grad();
  }
  for (int i = m - warmup; i < m; ++i) {
    order.push_back({PassKind::backward, i, 0});
    weight_grad();
  }
  while (next_w < m) weight_grad();
  return order;
}

// Megatron-LM schedules.py, forward_backward_pipelining_with_interleaving (group size p).
std::vector<PassSlot> interleaved(int p, int stage, int m, int v) {
  const int total = m * v;
  int warmup = 0;
  if (m == p) {
    warmup = total;  // "all_warmup_microbatches"
  } else {
    warmup = std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  }
  auto chunk_of = [&](int k, bool forward) {
    const int c = (k % (p * v)) / p;
    return forward ? c : v - 1 - c;
  };
  auto micro_batch_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  std::vector<PassSlot> order;
  for (int k = 0; k < warmup; ++k) {
    order.push_back({PassKind::forward, micro_batch_of(k), chunk_of(k, true)});
  }
  for (int k = 0; k < total - warmup; ++k) {
    const int f = k + warmup;
    order.push_back({PassKind::forward, micro_batch_of(f), chunk_of(f, true)});
    order.push_back({PassKind::backward, micro_batch_of(k), chunk_of(k, false)});
  }
  for (int k = total - warmup; k < total; ++k) {
    order.push_back({PassKind::backward, micro_batch_of(k), chunk_of(k, false)});
  }
  return order;
}

}  // namespace

std::vector<PassSlot> pipeline_order(PipelineSchedule schedule, int p, int stage, int m, int v) {
  if (p < 1)
    throw std::invalid_argument("pipeline_order: p must be >= 1, got " + std::to_string(p));
  if (m < 1)
    throw std::invalid_argument("pipeline_order: m must be >= 1, got " + std::to_string(m));
  if (v < 1)
    throw std::invalid_argument("pipeline_order: v must be >= 1, got " + std::to_string(v));
  if (stage < 0 || stage >= p) {
    throw std::invalid_argument("pipeline_order: stage " + std::to_string(stage) + " outside 0.." +
                                std::to_string(p - 1));
  }
  switch (schedule) {
    case PipelineSchedule::gpipe:
      if (v != 1) throw std::invalid_argument("pipeline_order: GPipe takes v = 1");
      return gpipe(m);
    case PipelineSchedule::one_f_one_b:
      if (v != 1) throw std::invalid_argument("pipeline_order: 1F1B takes v = 1");
      return one_f_one_b(p, stage, m);
    case PipelineSchedule::zb_h1:
      if (v != 1) throw std::invalid_argument("pipeline_order: ZB-H1 takes v = 1");
      return zb_h1(p, stage, m);
    case PipelineSchedule::interleaved:
      if (m % p != 0) {
        throw std::invalid_argument("pipeline_order: interleaving needs m (" + std::to_string(m) +
                                    ") divisible by p (" + std::to_string(p) + ")");
      }
      return interleaved(p, stage, m, v);
  }
  throw std::invalid_argument("pipeline_order: unknown schedule");
}

}  // namespace clustersim::workload
