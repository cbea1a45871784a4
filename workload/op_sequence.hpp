// The ops of a stage program and the sequence that holds them. Every micro-batch's forward (or
// backward) of a stage runs the same ops but for the micro-batch number, so the sequence keeps
// each distinct shape of a pass once, and per pass only which shape it runs and for which
// micro-batches: memory grows with the distinct shapes (a few per model chunk: its first
// forward, its other forwards, the backwards that launch gradient reductions and those that do
// not, the step's start and tail) and 12 bytes per pass, not with the ops of every micro-batch.
// Reading it gives back exactly the ops appended, in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <unordered_map>
#include <vector>

#include "workload/schedule.hpp"

namespace clustersim::workload {

// What a compute op is for: the breakdown and the trace use it.
enum class ComputeKind : unsigned char {
  forward,      // layer forward
  backward,     // layer backward
  recompute,    // forward repeated for activation recomputation
  embedding,    // input embedding (forward or backward)
  lm_head,      // final norm, logits and loss (forward or backward)
  optimizer,    // optimizer update
  compression,  // 1-bit Adam compression with error feedback
  gather_copy,  // ZeRO-3 copies: DeepSpeed 2021's zero-fill, call, copy-out; FSDP2's copy-out/in;
                // the quantization of gathered MXFP8 parameters
  grad_accumulation,  // a micro-batch's gradients added into the step's
                      // (training.grad_accumulation)
};
const char* to_string(ComputeKind k);

enum class OpKind : unsigned char {
  compute,       // busy GPU: time_s on a healthy GPU
  collective,    // blocking TP/CP collective: `index` into Workload::collectives
  send,          // hand a pipeline message to the next/previous virtual stage (asynchronous)
  recv,          // wait for a pipeline message
  recv_post,     // post the receive of this rank's next `pass` in that direction (overlap_p2p_comm)
  grad_ready,    // gradient bucket `index` of this stage is complete: start its reduction
  grad_wait,     // wait until every reduction this stage started is complete
  gather_issue,  // start ZeRO parameter all-gather `index` of this stage (prefetch)
  gather_wait,   // wait for parameter all-gather `index`
};
const char* to_string(OpKind k);

struct Op {
  OpKind kind = OpKind::compute;
  ComputeKind compute = ComputeKind::forward;
  PassKind pass = PassKind::forward;  // the pass an op belongs to
  double time_s = 0;                  // compute: duration on a healthy GPU
  double host_s = 0;   // compute: of time_s, CPU time with the GPU idle (OpCost::host_s)
  double flops = 0;    // compute: FLOPs the kernels execute
  double kernels = 0;  // compute: kernel launches (OpCost::kernels)
  double bytes = 0;    // send/recv: bytes each TP rank sends
  int index = -1;      // collective: Workload::collectives; grad_*: bucket; gather_*: gather
  int micro_batch = -1;
  int chunk = -1;          // model chunk on this pipeline rank
  int virtual_stage = -1;  // of this op (send/recv: the receiving virtual stage)
  int layer = -1;          // global layer index, -1 outside layers
  // collective: healthy-GPU time of the GEMM it is pipelined with (tp_comm_overlap), 0 = none
  double overlap_s = 0;
  // collective: overlap_s is a GEMM run beside it as a whole, not pipelined (tp_async_backward)
  bool beside = false;
};

// The ops of one program in order. Appended a pass at a time: push_back adds to the open pass,
// close_pass ends it. Reading (size, iteration, at, to_vector) covers the closed passes and then
// the open one.
class OpSequence {
 public:
  // Appends `op` to the open pass. Precondition: op.micro_batch >= -1.
  void push_back(const Op& op);
  // The last op of the open pass. Precondition: the open pass is not empty.
  Op& back() { return open_.back(); }
  // Ends the open pass (nothing when it is empty). Its ops naming `micro_batch` or
  // `paired_micro_batch` (a DualPipe pair runs two micro-batches; -1 where there is none) are
  // stored with these numbers as placeholders, and the pass shares the stored shape of any
  // earlier pass whose ops are then the same, bit for bit.
  void close_pass(int micro_batch, int paired_micro_batch = -1);

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Op `i` (< size()). Walks the passes: O(passes), for tests and small programs.
  Op at(std::size_t i) const;
  std::vector<Op> to_vector() const;
  // What the sequence holds in memory: the ops of its distinct pass shapes and of the open
  // pass, the distinct shapes, and the closed passes.
  std::size_t stored_ops() const;
  std::size_t shapes() const { return shapes_.size(); }
  std::size_t passes() const { return passes_.size(); }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Op;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Op;
    Iterator() = default;
    Op operator*() const;
    Iterator& operator++();
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) {
      return a.pass_ == b.pass_ && a.k_ == b.k_;
    }

   private:
    friend class OpSequence;
    Iterator(const OpSequence* seq, std::size_t pass, std::size_t k)
        : seq_(seq), pass_(pass), k_(k) {}
    const OpSequence* seq_ = nullptr;
    std::size_t pass_ = 0;  // passes_.size(): the open pass
    std::size_t k_ = 0;     // op in the pass
  };
  Iterator begin() const { return {this, 0, 0}; }
  Iterator end() const { return {this, passes_.size(), open_.size()}; }

 private:
  struct Pass {
    int shape = 0;
    int micro_batch = -1;
    int paired_micro_batch = -1;
  };
  Op op_of(const Pass& pass, std::size_t k) const;
  int shape_of(std::vector<Op>&& ops);

  std::vector<std::vector<Op>> shapes_;
  std::vector<Pass> passes_;
  std::vector<Op> open_;
  std::size_t size_ = 0;
  std::unordered_map<std::uint64_t, std::vector<int>> by_hash_;  // shape ids by their hash
};

}  // namespace clustersim::workload
