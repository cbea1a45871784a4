// The rank and node counts an nccl-tests table was measured with, as far as they can be known:
// read from the log, given on the command line, or inferred from the table's own busbw/algbw.
//
// nccl-tests prints busbw = algbw x factor (doc/PERFORMANCE.md): factor 2(n-1)/n for
// all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all. Inverting it,
//   all-reduce:  n = 2 / (2 - busbw/algbw)      others: n = 1 / (1 - busbw/algbw).
// Both bandwidths are printed rounded (2 decimals below 1000 GB/s, 1 below 10000: nccl-tests
// src/util.cu), so each row bounds n to an interval; the rank count is inferred only when the
// intervals of all rows share exactly one integer. Broadcast, reduce and send/receive have
// factor 1 and say nothing about n.
#pragma once

#include <optional>
#include <string>

#include "validation/nccl_tests_log.hpp"

namespace clustersim::validation {

// What the command line says about the measurement (calibrate --ranks / --nodes).
struct RankOverride {
  std::optional<int> nranks;
  std::optional<int> nodes;
};

struct RankCount {
  int nranks = 0;       // 0 = unknown
  int nodes = 0;        // 0 = unknown
  std::string source;   // where nranks came from, for the report ("the device list", ...)
  std::string problem;  // why nranks or nodes is unknown ("" when both are known)
  std::string warning;  // an override that contradicts the log ("" if none)
};

// The integers n >= 2 that every row's busbw/algbw allows: {lo, hi} with lo <= hi, or nullopt
// when the rows disagree, constrain nothing (factor-1 collectives, no bandwidths) or leave no
// upper bound. Rows without both bandwidths are skipped.
struct RankInterval {
  int lo = 0, hi = 0;
  int rows = 0;  // rows that constrained it
};
std::optional<RankInterval> ranks_from_bandwidth_ratio(const NcclTestsTable& table,
                                                       std::string* why_not = nullptr);

// Resolves the counts of one table: an override wins (with a warning when the log disagrees),
// then the log's device list or declared ranks, then busbw/algbw. Nodes: the override, the
// log's host list, or 1 when one process ran every rank (nThread x nGpus = nranks).
RankCount resolve_rank_count(const NcclTestsTable& table, const RankOverride& given);

}  // namespace clustersim::validation
