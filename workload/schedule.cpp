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
    order.push_back({PassKind::backward, i, 0, true});
    if (i >= stage) weight_grad();
  }
  for (int i = m - warmup; i < m; ++i) {
    order.push_back({PassKind::backward, i, 0, true});
    weight_grad();
  }
  while (next_w < m) weight_grad();
  return order;
}

// DualPipe's pass order on one rank (schedule.hpp). `phase` is the reference implementation's
// chunk index, swapped on the ranks of the second half; chunk c runs micro-batches c m/2 on.
class DualPipeOrder {
 public:
  DualPipeOrder(int p, int stage, int m) : second_half_(stage >= p / 2), half_m_(m / 2) {}
  // `paired`: run with the backward added next, as DualPipe's overlapped forward-backward chunk.
  void forward(int phase, bool paired = false) {
    const int c = chunk(phase);
    order_.push_back({PassKind::forward, c * half_m_ + next_f_[c]++, c, false, paired});
  }
  void backward(int phase, bool split) {
    const int c = chunk(phase);
    const int mb = c * half_m_ + next_b_[c]++;
    order_.push_back({PassKind::backward, mb, c, split});
    if (split) deferred_.push_back({PassKind::weight_grad, mb, c});
  }
  void weight_grad() { order_.push_back(deferred_.at(next_w_++)); }
  std::vector<PassSlot> take() { return std::move(order_); }

 private:
  int chunk(int phase) const { return phase ^ (second_half_ ? 1 : 0); }
  const bool second_half_;
  const int half_m_;
  int next_f_[2] = {0, 0};
  int next_b_[2] = {0, 0};
  std::size_t next_w_ = 0;
  std::vector<PassSlot> deferred_;  // W passes owed, first in, first out
  std::vector<PassSlot> order_;
};

std::vector<PassSlot> dualpipe(int p, int stage, int m) {
  const int half_p = p / 2;
  const int h = std::min(stage, p - 1 - stage);
  const int edge = half_p - h - 1;
  DualPipeOrder o(p, stage, m);
  for (int i = 0; i < 2 * edge; ++i) o.forward(0);
  for (int i = 0; i <= h; ++i) {
    o.forward(0);
    o.forward(1);
  }
  for (int i = 0; i < edge; ++i) {
    o.backward(1, true);
    o.weight_grad();
    o.forward(1);
  }
  for (int i = 0; i < m / 2 - p + h + 1; ++i) {
    o.forward(0, true);
    o.backward(1, false);
    o.forward(1, true);
    o.backward(0, false);
  }
  for (int i = 0; i < edge; ++i) {
    o.backward(1, false);
    o.forward(1, true);
    o.backward(0, false);
  }
  // The second half of these backwards is split (from the middle pair on, from its second
  // backward when h is even).
  for (int i = 0; i <= h; ++i) {
    const bool split = i > (h + 1) / 2 || (i == (h + 1) / 2 && h % 2 == 1);
    o.backward(1, split);
    o.backward(0, i >= (h + 1) / 2);
  }
  for (int i = 0; i < edge; ++i) {
    o.weight_grad();
    o.backward(0, true);
  }
  for (int i = 0; i <= h; ++i) o.weight_grad();
  return o.take();
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
    case PipelineSchedule::dualpipe:
      if (v != 1) throw std::invalid_argument("pipeline_order: DualPipe takes v = 1");
      if (p % 2 != 0 || m % 2 != 0 || m < 2 * p) {
        throw std::invalid_argument("pipeline_order: DualPipe needs p (" + std::to_string(p) +
                                    ") and m (" + std::to_string(m) + ") even and m >= 2p");
      }
      return dualpipe(p, stage, m);
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
