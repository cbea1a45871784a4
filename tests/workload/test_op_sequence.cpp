// The op sequence of a stage program: passes stored once per shape and read back unchanged.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "workload/op_sequence.hpp"

using namespace clustersim::workload;

namespace {

Op op(OpKind kind, int micro_batch, double time_s = 0) {
  Op o;
  o.kind = kind;
  o.micro_batch = micro_batch;
  o.time_s = time_s;
  return o;
}

// A forward of micro-batch `mb`: receive, two kernels, send, and a wait tied to no micro-batch.
std::vector<Op> forward(int mb) {
  return {op(OpKind::recv, mb), op(OpKind::compute, mb, 1e-3), op(OpKind::compute, mb, 2e-3),
          op(OpKind::send, mb), op(OpKind::gather_wait, -1)};
}

void append(OpSequence& seq, const std::vector<Op>& ops, int mb, int paired = -1) {
  for (const Op& o : ops) seq.push_back(o);
  seq.close_pass(mb, paired);
}

void same_ops(const std::vector<Op>& got, const std::vector<Op>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].kind == want[i].kind);
    CHECK(got[i].micro_batch == want[i].micro_batch);
    CHECK(got[i].time_s == want[i].time_s);
  }
}

}  // namespace

TEST_CASE("An op sequence keeps one copy of passes that differ only in their micro-batch") {
  OpSequence seq;
  std::vector<Op> all;
  for (int mb = 0; mb < 100; ++mb) {
    append(seq, forward(mb), mb);
    for (const Op& o : forward(mb)) all.push_back(o);
  }
  // 100 passes of 5 ops: 500 ops read back, 5 stored, one shape.
  CHECK(seq.size() == 500);
  CHECK(seq.passes() == 100);
  CHECK(seq.shapes() == 1);
  CHECK(seq.stored_ops() == 5);
  same_ops(seq.to_vector(), all);
  // Reading by position gives the same ops: op 7 is the third of micro-batch 1's pass.
  CHECK(seq.at(7).micro_batch == 1);
  CHECK(seq.at(7).time_s == 2e-3);
  CHECK(seq.at(9).micro_batch == -1);
}

TEST_CASE("A pair's two micro-batches are both put back, and other numbers kept as written") {
  OpSequence seq;
  // DualPipe pairs (forward of one micro-batch, backward of another) and a tail that names a
  // micro-batch of its own (a deferred reduction launched after the last backward).
  append(seq, {op(OpKind::compute, 4), op(OpKind::compute, 9)}, 4, 9);
  append(seq, {op(OpKind::compute, 5), op(OpKind::compute, 10)}, 5, 10);
  append(seq, {op(OpKind::grad_ready, 3), op(OpKind::grad_wait, -1)}, -1);
  CHECK(seq.shapes() == 2);
  same_ops(seq.to_vector(),
           {op(OpKind::compute, 4), op(OpKind::compute, 9), op(OpKind::compute, 5),
            op(OpKind::compute, 10), op(OpKind::grad_ready, 3), op(OpKind::grad_wait, -1)});
}

TEST_CASE("Passes that differ in any field, even the sign of a zero, are stored apart") {
  OpSequence seq;
  append(seq, {op(OpKind::compute, 0, 0.0)}, 0);
  append(seq, {op(OpKind::compute, 1, -0.0)}, 1);
  append(seq, {op(OpKind::compute, 2, 1e-3)}, 2);
  append(seq, {op(OpKind::send, 3, 1e-3)}, 3);
  CHECK(seq.shapes() == 4);
  const std::vector<Op> ops = seq.to_vector();
  REQUIRE(ops.size() == 4);
  CHECK(!std::signbit(ops[0].time_s));
  CHECK(std::signbit(ops[1].time_s));
}

TEST_CASE("The open pass is read after the closed ones and an empty pass is no pass") {
  OpSequence seq;
  CHECK(seq.begin() == seq.end());
  seq.close_pass(-1);
  CHECK(seq.passes() == 0);
  append(seq, forward(0), 0);
  seq.push_back(op(OpKind::compute, 1, 5e-3));
  seq.back().time_s = 6e-3;  // the open pass's last op may still be filled in
  CHECK(seq.size() == 6);
  CHECK(seq.stored_ops() == 6);
  int n = 0;
  for (const Op& o : seq) n += o.kind == OpKind::compute;
  CHECK(n == 3);
  CHECK(seq.at(5).time_s == 6e-3);
  CHECK_THROWS_AS(seq.at(6), std::out_of_range);
  CHECK_THROWS_AS(seq.push_back(op(OpKind::compute, -2)), std::invalid_argument);
}
