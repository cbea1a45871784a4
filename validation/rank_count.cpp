#include "validation/rank_count.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace clustersim::validation {
namespace {

// Half the last printed digit of a bandwidth: nccl-tests prints it in 6 (or 7) characters with
// 2 decimals, then 1, then 0, whichever fits (src/util.cu); the 6-character tiers are the
// coarser, so they bound both.
double half_unit(double GBps) {
  const double v = std::fabs(GBps);
  return v < 1000 ? 0.005 : v < 10000 ? 0.05 : 0.5;
}

// n from busbw/algbw (header comment); +infinity at or beyond the ratio's limit.
double ranks_for_ratio(NcclTestsOp op, double ratio) {
  const double limit = op == NcclTestsOp::all_reduce ? 2.0 : 1.0;
  if (ratio >= limit) return std::numeric_limits<double>::infinity();
  return limit / (limit - ratio);
}

// The most ranks a calibration file records (validation/calibration.cpp reads nranks up to 2^24);
// a larger inferred count means the printed ratio sits at its limit.
constexpr double kMaxInferredRanks = 1 << 24;

bool ratio_tells_ranks(NcclTestsOp op) {
  return op == NcclTestsOp::all_reduce || op == NcclTestsOp::all_gather ||
         op == NcclTestsOp::reduce_scatter || op == NcclTestsOp::alltoall;
}

}  // namespace

std::optional<RankInterval> ranks_from_bandwidth_ratio(const NcclTestsTable& table,
                                                       std::string* why_not) {
  auto fail = [&](const std::string& why) -> std::optional<RankInterval> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  if (!ratio_tells_ranks(table.op))
    return fail(std::string("busbw/algbw is 1 for ") + to_string(table.op) +
                " whatever the rank count");
  double lo = 2, hi = std::numeric_limits<double>::infinity();
  int rows = 0;
  for (const auto& row : table.rows)
    for (const NcclTestsMeasurement* m : {&row.out_of_place, &row.in_place}) {
      if (!m->algbw_GBps || !m->busbw_GBps) continue;
      const double alg = *m->algbw_GBps, bus = *m->busbw_GBps;
      if (alg - half_unit(alg) <= 0) continue;  // 0.00 GB/s: no ratio
      const double ratio_lo = std::max(0.0, bus - half_unit(bus)) / (alg + half_unit(alg));
      const double ratio_hi = (bus + half_unit(bus)) / (alg - half_unit(alg));
      lo = std::max(lo, ranks_for_ratio(table.op, ratio_lo));
      hi = std::min(hi, ranks_for_ratio(table.op, ratio_hi));
      ++rows;
    }
  if (rows == 0) return fail("no row has a non-zero algbw and a busbw");
  const double first = std::ceil(lo - 1e-9), last = std::floor(hi + 1e-9);
  if (first > kMaxInferredRanks)  // also +infinity: a ratio at or past its limit
    return fail("busbw/algbw is at or past its limit (" +
                std::string(table.op == NcclTestsOp::all_reduce ? "2" : "1") +
                "): no rank count gives it");
  if (first > last)
    return fail("the rows' busbw/algbw disagree: no rank count fits all " + std::to_string(rows) +
                " of them");
  if (!std::isfinite(last) || last > first)
    return fail("busbw/algbw allows " + std::to_string(static_cast<long>(first)) +
                (std::isfinite(last) ? " to " + std::to_string(static_cast<long>(last))
                                     : std::string(" or more")) +
                " ranks at the printed precision");
  return RankInterval{static_cast<int>(first), static_cast<int>(last), rows};
}

RankCount resolve_rank_count(const NcclTestsTable& table, const RankOverride& given) {
  RankCount c;
  if (given.nranks) {
    c.nranks = *given.nranks;
    c.source = "--ranks";
    if (table.nranks_known && table.nranks != c.nranks)
      c.warning = "--ranks " + std::to_string(c.nranks) + " overrides the log's " +
                  std::to_string(table.nranks) + " ranks";
  } else if (table.nranks_known) {
    c.nranks = table.nranks;
    c.source = "the log";
  } else {
    std::string why;
    if (const auto interval = ranks_from_bandwidth_ratio(table, &why)) {
      c.nranks = interval->lo;
      c.source = "busbw/algbw of " + std::to_string(interval->rows) + " measurements";
    } else {
      c.problem = "rank count unknown: the log has no \"#  Rank\" device lines and " + why +
                  "; give --ranks N";
    }
  }
  if (given.nodes) {
    c.nodes = *given.nodes;
  } else if (table.nodes > 0) {
    c.nodes = table.nodes;
  } else if (!table.nranks_known && c.nranks > 0 && table.nranks == c.nranks) {
    c.nodes = 1;  // one process ran every rank (nThread x nGpus = ranks): one host
  } else if (c.problem.empty()) {
    c.problem =
        "node count unknown: the log has no \"#  Rank\" device lines naming the hosts; "
        "give --nodes N";
  }
  return c;
}

}  // namespace clustersim::validation
