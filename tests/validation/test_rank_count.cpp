// Rank counts of nccl-tests tables whose "#  Rank" lines were trimmed, and the fits calibrate
// refuses. The trimmed log is the shipped GCP A3 Mega transcription (16 ranks on 2 hosts) with
// its device list removed, as logs pasted into issues usually are.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "validation/calibration.hpp"
#include "validation/nccl_tests_log.hpp"
#include "validation/rank_count.hpp"

using namespace clustersim::validation;

namespace {

const std::string kGcpLog = "/validation/data/nccl-tests/gcp-a3mega-2x8-allreduce.v2.13-layout.txt";

std::string shipped_text() {
  std::ifstream in(std::string(CLUSTERSIM_SOURCE_DIR) + kGcpLog);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The log without its "#  Rank N Group G Pid P on HOST device D [...] NAME" lines.
std::string trimmed_text() {
  static const std::regex rank_line(R"(^#\s*Rank\s+\d+ )");
  std::istringstream in(shipped_text());
  std::string out, line;
  while (std::getline(in, line))
    if (!std::regex_search(line, rank_line)) out += line + "\n";
  return out;
}

NcclTestsTable trimmed_table(const std::string& text = trimmed_text()) {
  const auto log = parse_nccl_tests_text(text, "trimmed.log");
  REQUIRE(log.tables.size() == 1);
  return log.tables[0];
}

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("without its Rank lines a log says only nThread x nGpus, which is not the run") {
  REQUIRE(trimmed_text().find("Rank  0") == std::string::npos);
  const NcclTestsTable t = trimmed_table();
  CHECK(t.nranks == 1);  // "# nThread 1 nGpus 1": one GPU per process under mpirun -np 16
  CHECK_FALSE(t.nranks_known);
  CHECK(t.nodes == 0);
  // The untrimmed log knows both.
  const auto full = parse_nccl_tests_text(shipped_text(), "full.log");
  CHECK(full.tables[0].nranks_known);
  CHECK(full.tables[0].nranks == 16);
  CHECK(full.tables[0].nodes == 2);
}

TEST_CASE("busbw/algbw of every row gives the 16 ranks of the all-reduce") {
  // By hand, 1 MiB row: busbw/algbw = 9.68/5.16 within +-0.005 each is 1.8732 .. 1.8788, so
  // n = 2/(2 - ratio) is 15.77 .. 16.50; 8 GiB row: 338.82/180.71 gives 15.98 .. 16.002.
  // The 8-byte row (0.00 GB/s) says nothing.
  const auto interval = ranks_from_bandwidth_ratio(trimmed_table());
  REQUIRE(interval);
  CHECK(interval->lo == 16);
  CHECK(interval->hi == 16);
  CHECK(interval->rows == 4);
}

TEST_CASE("rows whose busbw/algbw disagree give no rank count") {
  // 1 MiB row's busbw 9.68 -> 9.20: 9.20/5.16 = 1.783 means n = 9.2, the other rows 16.
  std::string text = trimmed_text();
  const auto at = text.find("5.16    9.68");
  REQUIRE(at != std::string::npos);
  text.replace(at, 12, "5.16    9.20");
  std::string why;
  CHECK_FALSE(ranks_from_bandwidth_ratio(trimmed_table(text), &why));
  CHECK(why.find("disagree") != std::string::npos);
  const RankCount c = resolve_rank_count(trimmed_table(text), {});
  CHECK(c.nranks == 0);
  CHECK(c.problem.find("give --ranks N") != std::string::npos);
}

TEST_CASE("a broadcast's busbw equals its algbw and says nothing about the ranks") {
  std::string text = trimmed_text();
  text = std::regex_replace(text, std::regex("op=all_reduce"), "op=broadcast");
  text = std::regex_replace(text, std::regex("all_reduce_perf"), "broadcast_perf");
  std::string why;
  CHECK_FALSE(ranks_from_bandwidth_ratio(trimmed_table(text), &why));
  CHECK(why.find("busbw/algbw is 1 for broadcast") != std::string::npos);
}

TEST_CASE("the node count of a trimmed log is unknown unless given or one process ran all") {
  const RankCount inferred = resolve_rank_count(trimmed_table(), {});
  CHECK(inferred.nranks == 16);
  CHECK(inferred.nodes == 0);
  CHECK(inferred.problem.find("node count unknown") != std::string::npos);
  const RankCount given = resolve_rank_count(trimmed_table(), {std::nullopt, 2});
  CHECK(given.nranks == 16);
  CHECK(given.nodes == 2);
  CHECK(given.problem.empty());
}

TEST_CASE("an explicit rank count is honoured, and said when the device list disagrees") {
  const RankCount trimmed = resolve_rank_count(trimmed_table(), {16, 2});
  CHECK(trimmed.nranks == 16);
  CHECK(trimmed.source == "--ranks");
  CHECK(trimmed.warning.empty());
  const auto full = parse_nccl_tests_text(shipped_text(), "full.log");
  const RankCount over = resolve_rank_count(full.tables[0], {8, std::nullopt});
  CHECK(over.nranks == 8);
  CHECK(over.nodes == 2);
  CHECK(over.warning.find("overrides the log's 16 ranks") != std::string::npos);
}

TEST_CASE("calibrate refuses the trimmed log and fits it once the counts are known") {
  const auto log = parse_nccl_tests_text(trimmed_text(), "trimmed.log");
  const Calibration refused = calibrate({log}, {}, {});
  CHECK(refused.network.empty());
  CHECK(any_contains(refused.refusals, "node count unknown"));

  const Calibration fitted = calibrate({log}, {}, {}, {std::nullopt, 2});
  CHECK(fitted.refusals.empty());
  REQUIRE(fitted.network.size() == 1);
  CHECK(fitted.network[0].nranks == 16);
  CHECK(fitted.network[0].link_class == "inter_node");
  CHECK(any_contains(fitted.notes, "16 ranks (from busbw/algbw of 4 measurements) on 2 nodes"));
  // The same fit as the untrimmed log's, whose device list names 16 ranks on 2 hosts.
  const Calibration full = calibrate({parse_nccl_tests_text(shipped_text(), "full.log")}, {}, {});
  REQUIRE(full.network.size() == 1);
  REQUIRE(full.network[0].regimes.size() == fitted.network[0].regimes.size());
  CHECK(fitted.network[0].regimes[0].latency_us == full.network[0].regimes[0].latency_us);
  CHECK(fitted.network[0].peak_busbw_GBps == full.network[0].peak_busbw_GBps);
  CHECK(fitted.network[0].r2 >= kMinNetworkFitR2);
}

TEST_CASE("one rank of an all-reduce (the old reading of the trimmed log) is refused") {
  // busbw factor 2(n-1)/n = 0 at n = 1: no time can depend on the bus bandwidth.
  const auto log = parse_nccl_tests_text(trimmed_text(), "trimmed.log");
  const Calibration c = calibrate({log}, {}, {}, {1, 2});
  CHECK(any_contains(c.refusals, "busbw is infinite in every size regime"));
}

TEST_CASE("a table the alpha-beta model cannot describe is refused for its R^2") {
  // Times that fall as messages grow: the best non-negative fit is a flat line, R^2 <= 0.
  NcclTestsTable t = trimmed_table();
  double time = 50000;
  for (auto& row : t.rows) {
    row.out_of_place.time_us = time;
    time /= 4;
  }
  t.nranks = 16;
  t.nranks_known = true;
  t.nodes = 2;
  const auto fit = fit_network_table(t, "falling");
  CHECK(fit.r2 < kMinNetworkFitR2);
  CHECK(any_contains(untrusted_fit_reasons(fit), "is below 0.95"));
}

TEST_CASE("a busbw/algbw at or past its limit is refused and never read as a rank count") {
  // All-reduce busbw/algbw = 2(n-1)/n stays below 2 for every n: 25.00 / 10.00 = 2.5 is none.
  const std::string text =
      "# Collective test starting: all_reduce_perf\n"
      "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
      "  1048576 262144 float sum -1 104.9 10.00 25.00 0 104.9 10.00 25.00 0\n";
  std::string why;
  CHECK_FALSE(ranks_from_bandwidth_ratio(trimmed_table(text), &why));
  CHECK(why.find("at or past its limit (2)") != std::string::npos);
}
