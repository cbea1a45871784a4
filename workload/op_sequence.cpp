// Passes stored once per shape: a closed pass's micro-batch numbers become placeholders, its
// ops are hashed and compared bit for bit with the stored shapes of the same hash, and the pass
// keeps the id of the shape with the numbers to put back.
#include "workload/op_sequence.hpp"

#include <bit>
#include <stdexcept>
#include <string>
#include <utility>

namespace clustersim::workload {

namespace {

// Placeholders of a stored shape for the pass's micro-batch and its pair's (below the -1 that
// means "no micro-batch").
constexpr int kPassMicroBatch = -2;
constexpr int kPairedMicroBatch = -3;

std::uint64_t bits(double x) {
  return std::bit_cast<std::uint64_t>(x);
}

// Equal field by field, the doubles bit for bit: what is stored once is read back unchanged.
bool same(const Op& a, const Op& b) {
  return a.kind == b.kind && a.compute == b.compute && a.pass == b.pass &&
         bits(a.time_s) == bits(b.time_s) && bits(a.host_s) == bits(b.host_s) &&
         bits(a.flops) == bits(b.flops) && bits(a.kernels) == bits(b.kernels) &&
         bits(a.bytes) == bits(b.bytes) && a.index == b.index && a.micro_batch == b.micro_batch &&
         a.chunk == b.chunk && a.virtual_stage == b.virtual_stage && a.layer == b.layer &&
         bits(a.overlap_s) == bits(b.overlap_s) && a.beside == b.beside;
}

bool same(const std::vector<Op>& a, const std::vector<Op>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same(a[i], b[i])) return false;
  }
  return true;
}

// FNV-1a over the fields (Fowler, Noll and Vo; the 64-bit offset basis and prime).
constexpr std::uint64_t kFnvOffset = 14695981039346656037ull;
constexpr std::uint64_t kFnvPrime = 1099511628211ull;

void mix(std::uint64_t& h, std::uint64_t x) {
  h = (h ^ x) * kFnvPrime;
}

std::uint64_t hash(const std::vector<Op>& ops) {
  std::uint64_t h = kFnvOffset;
  for (const Op& op : ops) {
    mix(h, static_cast<std::uint64_t>(op.kind) | static_cast<std::uint64_t>(op.compute) << 8 |
               static_cast<std::uint64_t>(op.pass) << 16);
    mix(h, bits(op.time_s));
    mix(h, bits(op.host_s));
    mix(h, bits(op.flops));
    mix(h, bits(op.kernels));
    mix(h, bits(op.bytes));
    mix(h, bits(op.overlap_s));
    mix(h, op.beside ? 1 : 0);
    for (int x : {op.index, op.micro_batch, op.chunk, op.virtual_stage, op.layer}) {
      mix(h, static_cast<std::uint32_t>(x));
    }
  }
  return h;
}

}  // namespace

void OpSequence::push_back(const Op& op) {
  if (op.micro_batch < -1) {
    throw std::invalid_argument("OpSequence::push_back: micro-batch " +
                                std::to_string(op.micro_batch));
  }
  open_.push_back(op);
  ++size_;
}

void OpSequence::close_pass(int micro_batch, int paired_micro_batch) {
  if (open_.empty()) return;
  std::vector<Op> ops;
  ops.swap(open_);
  for (Op& op : ops) {
    if (op.micro_batch == micro_batch) {
      op.micro_batch = kPassMicroBatch;
    } else if (op.micro_batch == paired_micro_batch) {
      op.micro_batch = kPairedMicroBatch;
    }
  }
  passes_.push_back({shape_of(std::move(ops)), micro_batch, paired_micro_batch});
}

int OpSequence::shape_of(std::vector<Op>&& ops) {
  auto& ids = by_hash_[hash(ops)];
  for (int id : ids) {
    if (same(shapes_[static_cast<std::size_t>(id)], ops)) return id;
  }
  ids.push_back(static_cast<int>(shapes_.size()));
  shapes_.push_back(std::move(ops));
  return ids.back();
}

Op OpSequence::op_of(const Pass& pass, std::size_t k) const {
  Op op = shapes_[static_cast<std::size_t>(pass.shape)][k];
  if (op.micro_batch == kPassMicroBatch) {
    op.micro_batch = pass.micro_batch;
  } else if (op.micro_batch == kPairedMicroBatch) {
    op.micro_batch = pass.paired_micro_batch;
  }
  return op;
}

Op OpSequence::at(std::size_t i) const {
  if (i >= size_) throw std::out_of_range("OpSequence::at: " + std::to_string(i));
  for (const Pass& pass : passes_) {
    const std::size_t n = shapes_[static_cast<std::size_t>(pass.shape)].size();
    if (i < n) return op_of(pass, i);
    i -= n;
  }
  return open_[i];
}

std::vector<Op> OpSequence::to_vector() const {
  std::vector<Op> out;
  out.reserve(size_);
  for (const Op& op : *this) out.push_back(op);
  return out;
}

std::size_t OpSequence::stored_ops() const {
  std::size_t n = open_.size();
  for (const auto& shape : shapes_) n += shape.size();
  return n;
}

Op OpSequence::Iterator::operator*() const {
  if (pass_ < seq_->passes_.size()) return seq_->op_of(seq_->passes_[pass_], k_);
  return seq_->open_[k_];
}

OpSequence::Iterator& OpSequence::Iterator::operator++() {
  ++k_;
  if (pass_ < seq_->passes_.size()) {
    const Pass& pass = seq_->passes_[pass_];
    if (k_ == seq_->shapes_[static_cast<std::size_t>(pass.shape)].size()) {
      ++pass_;
      k_ = 0;
    }
  }
  return *this;
}

}  // namespace clustersim::workload
