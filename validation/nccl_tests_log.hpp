// Reading nccl-tests results: the text tables that all_reduce_perf & co. print, and the `-J`
// JSON file that recent versions write.
//
// Text layouts (NVIDIA/nccl-tests src/common.cu and src/util.cu):
//   - up to v2.12: `size count type redop [root] | time algbw busbw error | (in-place, same)`,
//     where `error` is the largest deviation (%5.0le) or "N/A" without validation;
//   - v2.13 and later: `size count type redop root | time algbw busbw #wrong | ...`.
// The parser reads the column header of each table and maps the columns by name, so either
// layout (and a future one that only reorders or adds columns) is read. A log may hold several
// tables (several collectives run back to back, or several runs concatenated); each is
// returned with its own collective, rank count and footer.
//
// Lines the parser also reads: "NCCL version X.Y.Z+cudaA.B" (NCCL_DEBUG=VERSION or INFO),
// "# nccl-tests version V nccl-headers=C nccl-library=C", "# Collective test starting: NAME",
// a command line naming the binary ("mpirun ... all_reduce_perf ..."), "# command: ..." and
// "# clustersim-env KEY=VALUE" lines written by validation/microbench/run_nccl_tests.sh (date,
// driver, cuda, nccl) or by a transcription that has no device list (ranks, nodes, op, device).
//
// Units: sizes in bytes, times in microseconds, bandwidths in GB/s (1e9 bytes per second), as
// nccl-tests prints them (algbw = size / time / 1e3 with time in µs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/calibration.hpp"

namespace clustersim::validation {

// NcclTestsOp and busbw_factor are plain data in core/calibration.hpp.
using clustersim::busbw_factor;
using clustersim::NcclTestsOp;

const char* to_string(NcclTestsOp op);
// Accepts "all_reduce_perf", "all_reduce", "allreduce", "AllReduce", ... Returns unknown if none.
NcclTestsOp nccl_tests_op_from_name(std::string_view name);
// The operations `clustersim calibrate` knows, for error messages.
std::vector<std::string> nccl_tests_op_names();

// One direction of one row (out-of-place or in-place). Absent values ("N/A", a blank
// out-of-place block) are std::nullopt.
struct NcclTestsMeasurement {
  std::optional<double> time_us;
  std::optional<double> algbw_GBps;
  std::optional<double> busbw_GBps;
  // `#wrong` (count of wrong elements, newer layout) or `error` (max deviation, older layout);
  // nullopt for "N/A" (run with -c 0).
  std::optional<double> check;
  bool present() const { return time_us.has_value(); }
};

struct NcclTestsRow {
  double size_bytes = 0;
  std::int64_t count = 0;
  std::string type;         // "float", "half", "bfloat16", ...
  std::string redop;        // "sum", "none", ... ("" when the layout has no redop column)
  std::optional<int> root;  // -1 for rootless collectives; absent in old AllReduce tables
  NcclTestsMeasurement out_of_place;
  NcclTestsMeasurement in_place;
  int line = 0;  // 1-based line in the text (0 for JSON)
  // Out-of-place if measured, else in-place; nullptr-equivalent (not present) if neither.
  const NcclTestsMeasurement& best() const {
    return out_of_place.present() ? out_of_place : in_place;
  }
};

struct NcclTestsTable {
  NcclTestsOp op = NcclTestsOp::unknown;
  std::string program;       // "all_reduce_perf" when known
  std::string check_column;  // "#wrong" (v2.13+) or "error" (older); "nwrong" from JSON
  bool has_root_column = false;
  int nranks = 0;  // ranks of the run the table belongs to
  // Whether nranks was read from the device list ("#  Rank" lines, JSON config) or a
  // "# clustersim-env ranks=" line. When false it is only nThread x nGpus, the ranks of one
  // process: the device list was trimmed and the run may have had more processes.
  bool nranks_known = true;
  int nodes = 0;  // distinct hosts in the device list (0 = unknown)
  std::vector<NcclTestsRow> rows;
  std::optional<double> avg_busbw_GBps;  // footer "# Avg bus bandwidth"
  std::optional<int> out_of_bounds;      // footer "# Out of bounds values"
  int header_line = 0;
};

// Where and with what the numbers were measured, as far as the log tells.
struct NcclTestsProvenance {
  std::string nccl_tests_version;    // "2.13.9" from "# nccl-tests version ..."
  std::string nccl_version;          // "2.18.5" from NCCL INFO lines, the version header or JSON
  std::string cuda_version;          // "12.2" from "NCCL version 2.18.5+cuda12.2"
  std::string driver_version;        // from "# clustersim-env driver=..." (run_nccl_tests.sh)
  std::string date;                  // "# clustersim-env date=..." or the JSON start_time
  std::vector<std::string> devices;  // device name per rank, rank order
  std::vector<std::string> hosts;    // distinct host names, first-seen order
  int nranks = 0;
};

struct NcclTestsLog {
  std::string file;
  NcclTestsProvenance provenance;
  std::vector<NcclTestsTable> tables;
  std::vector<std::string> warnings;  // lines skipped, ambiguous inference, ...
};

// Parses the text output of one or more nccl-tests runs. `file` is used in messages and as a
// hint for the collective (e.g. "all_gather_perf.log"). Throws ConfigError (file, "line N: ...")
// when a table is malformed or no table is found.
NcclTestsLog parse_nccl_tests_text(const std::string& text, const std::string& file);

// Parses the JSON written by `-J file.json` (nccl-tests util.cu, JSON_FILE_VERSION 2): keys
// version, start_time, args, env, nccl_version, config{..., devices[]}, results[{size, count,
// type, redop, root, out_of_place{time|cpu_time, alg_bw, bus_bw, nwrong}, in_place{...}}],
// out_of_bounds, average_bus_bandwidth. Throws ConfigError with the JSON pointer.
NcclTestsLog parse_nccl_tests_json(const std::string& text, const std::string& file);

// Reads `path` and dispatches on its first non-blank character ('{' = JSON, else text).
NcclTestsLog load_nccl_tests_log(const std::string& path);

// "21805" -> "2.18.5" (NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch;
// before: major*1000 + minor*100 + patch).
std::string nccl_version_from_code(long code);

}  // namespace clustersim::validation
