#include "validation/nccl_tests_log.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/errors.hpp"
#include "core/json_reader.hpp"

namespace clustersim::validation {
namespace {

struct OpName {
  NcclTestsOp op;
  const char* canonical;
  std::vector<std::string> spellings;  // lower case, without "_perf"
};

const std::vector<OpName>& op_table() {
  static const std::vector<OpName> table = {
      {NcclTestsOp::all_reduce, "all_reduce", {"all_reduce", "allreduce"}},
      {NcclTestsOp::all_gather, "all_gather", {"all_gather", "allgather"}},
      {NcclTestsOp::reduce_scatter, "reduce_scatter", {"reduce_scatter", "reducescatter"}},
      {NcclTestsOp::alltoall, "alltoall", {"alltoall", "all_to_all", "alltoallv"}},
      {NcclTestsOp::sendrecv, "sendrecv", {"sendrecv", "send_recv"}},
      {NcclTestsOp::broadcast, "broadcast", {"broadcast"}},
      {NcclTestsOp::reduce, "reduce", {"reduce"}},
  };
  return table;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> tokens(std::string_view s) {
  std::vector<std::string> out;
  std::istringstream in{std::string(s)};
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

// Finds an nccl-tests program name ("all_reduce_perf") inside free text such as a command line.
NcclTestsOp op_in_text(std::string_view text, std::string* program) {
  static const std::regex perf(R"(([A-Za-z_]+)_perf\b)");
  std::match_results<std::string_view::const_iterator> m;
  if (std::regex_search(text.begin(), text.end(), m, perf)) {
    const NcclTestsOp op = nccl_tests_op_from_name(m[1].str());
    if (op != NcclTestsOp::unknown) {
      if (program) *program = m[1].str() + "_perf";
      return op;
    }
  }
  return NcclTestsOp::unknown;
}

// A number as nccl-tests prints it; "N/A", "nan" and blanks are absent.
std::optional<double> number_or_absent(const std::string& text) {
  const std::string t = lower(trim(text));
  if (t.empty() || t == "n/a" || t == "nan" || t == "-nan") return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Bounds on the whole numbers of a log. 131,072 ranks is the largest cluster the simulator is
// exercised at and above any published nccl-tests run;
// a larger figure is a corrupt or mistyped file, and refusing it keeps every product of rank
// counts inside 64 bits. Element counts stay below 2^53, where a double is still exact.
constexpr std::int64_t kMaxRanks = std::int64_t{1} << 17;
constexpr std::int64_t kMaxCount = std::int64_t{1} << 53;
constexpr std::int64_t kMaxWrong = 2147483647;       // out-of-bounds values: an int
constexpr std::int64_t kMaxVersionCode = 999999999;  // NCCL_VERSION_CODE: X*10000 + Y*100 + Z
// nccl-tests and NCCL_DEBUG=INFO lines are a few hundred characters. The line patterns are
// std::regex, whose matcher recurses once per character: a line of ~30,000 characters overflows
// the stack under AddressSanitizer, so longer lines are refused before any pattern sees them.
constexpr std::size_t kMaxLineChars = 4096;

// A whole number in [lo, hi] (bounds within ±2^53); nullopt when `v` is not one.
std::optional<std::int64_t> whole_in(std::optional<double> v, std::int64_t lo, std::int64_t hi) {
  if (!v || *v != std::floor(*v) || *v < static_cast<double>(lo) || *v > static_cast<double>(hi))
    return std::nullopt;
  return static_cast<std::int64_t>(*v);
}

std::string range_text(std::int64_t lo, std::int64_t hi) {
  return "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
}

bool is_integer(const std::string& t) {
  if (t.empty()) return false;
  std::size_t i = (t[0] == '-') ? 1 : 0;
  if (i == t.size()) return false;
  for (; i < t.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
  return true;
}

// Column positions of one table, found by name in its header line.
struct Columns {
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  int time[2] = {-1, -1}, algbw[2] = {-1, -1}, busbw[2] = {-1, -1}, check[2] = {-1, -1};
  std::size_t width = 0;
  bool timestamp = false;
  std::string check_name;
};

std::optional<Columns> read_header(const std::vector<std::string>& names) {
  Columns c;
  int time_seen = 0, alg_seen = 0, bus_seen = 0, check_seen = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    const int at = static_cast<int>(i);
    if (n == "size")
      c.size = at;
    else if (n == "count")
      c.count = at;
    else if (n == "type")
      c.type = at;
    else if (n == "redop")
      c.redop = at;
    else if (n == "root")
      c.root = at;
    else if ((n == "time" || n == "cputime") && time_seen < 2)
      c.time[time_seen++] = at;
    else if (n == "algbw" && alg_seen < 2)
      c.algbw[alg_seen++] = at;
    else if (n == "busbw" && bus_seen < 2)
      c.busbw[bus_seen++] = at;
    else if ((n == "#wrong" || n == "error") && check_seen < 2) {
      c.check[check_seen++] = at;
      c.check_name = n;
    } else if (n == "timestamp")
      c.timestamp = true;
  }
  if (c.size != 0 || c.count < 0 || time_seen == 0 || alg_seen == 0 || bus_seen == 0)
    return std::nullopt;
  c.width = names.size() - (c.timestamp ? 1 : 0);
  return c;
}

// Facts a transcription states with "# clustersim-env KEY=VALUE" lines when it has no device
// list or command line: ranks, nodes, op, device.
struct Declared {
  int ranks = 0;
  int nodes = 0;
  NcclTestsOp op = NcclTestsOp::unknown;
  std::string device;
};

struct RunContext {
  std::string program;
  NcclTestsOp op = NcclTestsOp::unknown;
  int nthread_ngpus = 0;  // nThread × nGpus of one process
  std::vector<std::string> devices;
  std::vector<std::string> hosts;
};

int count_hosts(const std::vector<std::string>& hosts) {
  return static_cast<int>(hosts.size());
}

// Infers the collective from the ratio busbw / algbw when nothing names it.
NcclTestsOp op_from_ratio(const NcclTestsTable& t) {
  if (t.nranks < 3) return NcclTestsOp::unknown;
  for (const auto& r : t.rows) {
    const auto& m = r.best();
    if (!m.algbw_GBps || !m.busbw_GBps || *m.algbw_GBps < 1.0) continue;
    const double ratio = *m.busbw_GBps / *m.algbw_GBps;
    const double n = t.nranks;
    if (std::fabs(ratio - 2 * (n - 1) / n) < 0.02) return NcclTestsOp::all_reduce;
    return NcclTestsOp::unknown;  // (n−1)/n is shared by several collectives: cannot tell
  }
  return NcclTestsOp::unknown;
}

void finish_table(NcclTestsLog& log, NcclTestsTable& table, const RunContext& run,
                  const Declared& declared, const std::string& file) {
  if (table.rows.empty()) return;
  table.nranks = !run.devices.empty() ? static_cast<int>(run.devices.size()) : run.nthread_ngpus;
  if (declared.ranks > 0 && run.devices.empty()) table.nranks = declared.ranks;
  table.nranks_known = !run.devices.empty() || declared.ranks > 0;
  table.nodes = count_hosts(run.hosts);
  if (declared.nodes > 0 && run.hosts.empty()) table.nodes = declared.nodes;
  table.op = run.op;
  table.program = run.program;
  if (table.op == NcclTestsOp::unknown) table.op = declared.op;
  if (table.op == NcclTestsOp::unknown) {
    std::string program;
    const auto slash = file.find_last_of('/');
    table.op = op_in_text(slash == std::string::npos ? file : file.substr(slash + 1), &program);
    if (table.op != NcclTestsOp::unknown) table.program = program;
  }
  if (table.op == NcclTestsOp::unknown) {
    table.op = op_from_ratio(table);
    if (table.op != NcclTestsOp::unknown)
      log.warnings.push_back("table at line " + std::to_string(table.header_line) +
                             ": collective inferred from busbw/algbw = 2(n-1)/n: all_reduce");
  }
  if (table.op == NcclTestsOp::unknown)
    throw ConfigError(file, "",
                      "line " + std::to_string(table.header_line) +
                          ": cannot tell which collective this table measures; keep the "
                          "\"# Collective test starting: NAME\" line or the command line in "
                          "the log, or name the file after the binary (all_reduce_perf.log)");
  log.tables.push_back(std::move(table));
  table = NcclTestsTable{};
}

}  // namespace

const char* to_string(NcclTestsOp op) {
  for (const auto& e : op_table())
    if (e.op == op) return e.canonical;
  return "unknown";
}

NcclTestsOp nccl_tests_op_from_name(std::string_view name) {
  std::string n = lower(trim(name));
  const auto slash = n.find_last_of('/');
  if (slash != std::string::npos) n = n.substr(slash + 1);
  const std::string suffix = "_perf";
  if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
    n.resize(n.size() - suffix.size());
  for (const auto& e : op_table())
    for (const auto& s : e.spellings)
      if (n == s) return e.op;
  return NcclTestsOp::unknown;
}

std::vector<std::string> nccl_tests_op_names() {
  std::vector<std::string> out;
  for (const auto& e : op_table()) out.emplace_back(e.canonical);
  return out;
}

std::string nccl_version_from_code(long code) {
  if (code <= 0) return "";
  long major = 0, minor = 0, patch = 0;
  if (code >= 10000) {  // NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9
    major = code / 10000;
    minor = (code % 10000) / 100;
    patch = code % 100;
  } else {  // X*1000 + Y*100 + Z before
    major = code / 1000;
    minor = (code % 1000) / 100;
    patch = code % 100;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

namespace {

// Reads a text log line by line: provenance anywhere, then comments (collective, run, device
// list, footer, column header), command lines and table rows.
class TextParser {
 public:
  explicit TextParser(const std::string& file) { log_.file = file; }
  NcclTestsLog parse(const std::string& text);

 private:
  void provenance(const std::string& line);
  bool env_declaration(const std::string& line);
  void comment(const std::string& t);
  void command(const std::string& t);
  void row(const std::string& t);
  void header(const std::string& t, const std::vector<std::string>& names);
  // Closes the table and starts a run of collective `op`.
  void new_run(NcclTestsOp op, const std::string& program);
  void close_table() {
    finish_table(log_, table_, run_, declared_, log_.file);
    columns_.reset();
  }
  void finish();
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(log_.file, "", "line " + std::to_string(line_no_) + ": " + what);
  }
  // `text` as a whole number in [lo, hi]; anything else refuses the log at this line, `field`
  // naming what the number is.
  std::int64_t whole(const std::string& text, std::int64_t lo, std::int64_t hi,
                     const std::string& field) const {
    const auto v = whole_in(number_or_absent(text), lo, hi);
    if (!v) fail(field + " " + text + " is not " + range_text(lo, hi));
    return *v;
  }

  NcclTestsLog log_;
  RunContext run_;
  Declared declared_;
  NcclTestsTable table_;
  std::optional<Columns> columns_;
  int line_no_ = 0;
};

NcclTestsLog TextParser::parse(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    ++line_no_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > kMaxLineChars) {
      fail("a line of " + std::to_string(line.size()) + " characters; nccl-tests prints none " +
           "longer than " + std::to_string(kMaxLineChars) + " (is this an nccl-tests log?)");
    }
    // Provenance that may appear anywhere (NCCL_DEBUG=INFO lines are interleaved).
    provenance(line);
    if (env_declaration(line)) continue;
    const std::string t = trim(line);
    if (t.empty()) continue;
    if (t[0] == '#') {
      comment(t);
    } else if (!columns_ && !std::isdigit(static_cast<unsigned char>(t[0]))) {
      command(t);
    } else {
      row(t);
    }
  }
  close_table();
  finish();
  return std::move(log_);
}

void TextParser::provenance(const std::string& line) {
  static const std::regex nccl_version(R"(NCCL version (\d+\.\d+\.\d+)(?:\+cuda(\d+\.\d+))?)");
  static const std::regex tests_version(
      R"(nccl-tests version (\S+)(?:\s+nccl-headers=\d+\s+nccl-library=(\d+))?)");
  NcclTestsProvenance& p = log_.provenance;
  std::smatch m;
  if (std::regex_search(line, m, nccl_version)) {
    if (p.nccl_version.empty()) p.nccl_version = m[1].str();
    if (m[2].matched && p.cuda_version.empty()) p.cuda_version = m[2].str();
  }
  if (std::regex_search(line, m, tests_version)) {
    p.nccl_tests_version = m[1].str();
    if (m[2].matched && p.nccl_version.empty()) {
      const auto code = whole(m[2].str(), 0, kMaxVersionCode, "nccl-library");
      p.nccl_version = nccl_version_from_code(static_cast<long>(code));
    }
  }
}

// "# clustersim-env KEY=VALUE": false when the line is not one.
bool TextParser::env_declaration(const std::string& line) {
  static const std::regex env_line(R"(^#\s*clustersim-env\s+([A-Za-z_]+)=(.*)$)");
  std::smatch m;
  if (!std::regex_search(line, m, env_line)) return false;
  NcclTestsProvenance& p = log_.provenance;
  const std::string key = m[1].str();
  const std::string value = trim(m[2].str());
  if (key == "driver") {
    p.driver_version = value;
  } else if (key == "cuda" && p.cuda_version.empty()) {
    p.cuda_version = value;
  } else if (key == "date") {
    p.date = value;
  } else if (key == "nccl" && p.nccl_version.empty()) {
    p.nccl_version = value;
  } else if (key == "ranks" || key == "nodes") {
    (key == "ranks" ? declared_.ranks : declared_.nodes) =
        static_cast<int>(whole(value, 1, kMaxRanks, key));
  } else if (key == "op") {
    declared_.op = nccl_tests_op_from_name(value);
    if (declared_.op == NcclTestsOp::unknown)
      fail("op=" + value + " is not one of " + join_names(nccl_tests_op_names()));
  } else if (key == "device") {
    declared_.device = value;
  }
  return true;
}

void TextParser::new_run(NcclTestsOp op, const std::string& program) {
  close_table();
  run_ = RunContext{};
  run_.op = op;
  run_.program = program;
}

void TextParser::comment(const std::string& t) {
  static const std::regex rank_line(
      R"(^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(.*)$)");
  static const std::regex nthread(R"(^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+))");
  static const std::regex starting(R"(Collective test starting:\s*(\S+))");
  static const std::regex footer_oob(R"(^#\s*Out of bounds values\s*:\s*(\d+))");
  static const std::regex footer_avg(R"(^#\s*Avg bus bandwidth\s*:\s*(\S+))");
  std::smatch m;
  if (std::regex_search(t, m, starting)) {
    std::string program;
    NcclTestsOp op = op_in_text(m[1].str(), &program);
    if (op == NcclTestsOp::unknown) {
      op = nccl_tests_op_from_name(m[1].str());
      program = m[1].str();
    }
    new_run(op, program);
  } else if (t.rfind("# command:", 0) == 0) {  // written by run_nccl_tests.sh
    std::string program;
    const NcclTestsOp op = op_in_text(t, &program);
    if (op != NcclTestsOp::unknown) new_run(op, program);
  } else if (std::regex_search(t, m, nthread)) {
    // A new run: keep a collective named just before (starting line or command line).
    new_run(run_.op, std::string(run_.program));
    const std::int64_t threads = whole(m[1].str(), 1, kMaxRanks, "nThread");
    const std::int64_t gpus = whole(m[2].str(), 1, kMaxRanks, "nGpus");
    if (threads * gpus > kMaxRanks)
      fail("nThread " + m[1].str() + " nGpus " + m[2].str() + ": more than " +
           std::to_string(kMaxRanks) + " GPUs in one process");
    run_.nthread_ngpus = static_cast<int>(threads * gpus);
  } else if (std::regex_match(t, m, rank_line)) {
    run_.devices.push_back(trim(m[3].str()));
    const std::string host = m[2].str();
    if (std::find(run_.hosts.begin(), run_.hosts.end(), host) == run_.hosts.end())
      run_.hosts.push_back(host);
  } else if (std::regex_search(t, m, footer_oob)) {
    table_.out_of_bounds =
        static_cast<int>(whole(m[1].str(), 0, kMaxWrong, "out of bounds values"));
  } else if (std::regex_search(t, m, footer_avg)) {
    table_.avg_busbw_GBps = number_or_absent(m[1].str());
    close_table();
  } else {
    const auto names = tokens(std::string_view(t).substr(1));
    if (!names.empty() && names[0] == "size") header(t, names);
    // Other comments: units line, "Using devices", blank "#".
  }
}

void TextParser::header(const std::string& t, const std::vector<std::string>& names) {
  const auto columns = read_header(names);
  if (!columns)
    fail("a column header without size, count, time, algbw and busbw columns: \"" + t + "\"");
  close_table();
  columns_ = columns;
  table_ = NcclTestsTable{};
  table_.header_line = line_no_;
  table_.check_column = columns->check_name;
  table_.has_root_column = columns->root >= 0;
}

// A command line naming the binary (e.g. "mpirun ... ./build/all_reduce_perf -b 8").
void TextParser::command(const std::string& t) {
  std::string program;
  const NcclTestsOp op = op_in_text(t, &program);
  if (op != NcclTestsOp::unknown) new_run(op, program);
}

void TextParser::row(const std::string& t) {
  const auto row_tokens = tokens(t);
  if (!columns_ || row_tokens.empty() || !is_integer(row_tokens[0])) return;  // stray output
  const Columns& c = *columns_;
  const std::size_t expected = c.width;
  bool only_in_place = false;
  if (row_tokens.size() == expected || (c.timestamp && row_tokens.size() == expected + 2)) {
    // full row (a timestamp prints as date and time: two tokens)
  } else if (c.time[1] >= 0 && row_tokens.size() + 4 == expected) {
    only_in_place = true;  // blank out-of-place block (writeBenchMarkLineNullBody)
  } else {
    fail(std::to_string(row_tokens.size()) + " columns, but the header on line " +
         std::to_string(table_.header_line) + " has " + std::to_string(expected));
  }
  auto at = [&](int index) -> std::string {
    if (index < 0) return "";
    std::size_t i = static_cast<std::size_t>(index);
    if (only_in_place && index > c.time[0]) i -= 4;
    return i < row_tokens.size() ? row_tokens[i] : "";
  };
  NcclTestsRow row;
  row.line = line_no_;
  const auto size = number_or_absent(at(c.size));
  if (!size || *size < 0) fail("size must be a number of bytes");
  row.size_bytes = *size;
  row.count = whole(at(c.count), 0, kMaxCount, "count");
  row.type = at(c.type);
  row.redop = at(c.redop);
  if (c.root >= 0) {
    const std::string r = at(c.root);
    if (is_integer(r)) row.root = static_cast<int>(whole(r, -1, kMaxRanks, "root"));
  }
  for (int k = 0; k < 2; ++k) {
    if (c.time[k] < 0 || (only_in_place && k == 0)) continue;
    NcclTestsMeasurement& meas = (k == 0) ? row.out_of_place : row.in_place;
    meas.time_us = number_or_absent(at(c.time[k]));
    meas.algbw_GBps = number_or_absent(at(c.algbw[k]));
    meas.busbw_GBps = number_or_absent(at(c.busbw[k]));
    meas.check = number_or_absent(at(c.check[k]));
  }
  table_.rows.push_back(std::move(row));
}

// Provenance from the last run's device list; a log without a table is an error.
void TextParser::finish() {
  NcclTestsProvenance& p = log_.provenance;
  if (!run_.devices.empty() || !log_.tables.empty()) {
    p.devices = run_.devices;
    p.hosts = run_.hosts;
    if (p.devices.empty() && !declared_.device.empty())
      p.devices.assign(static_cast<std::size_t>(std::max(1, declared_.ranks)), declared_.device);
    p.nranks =
        !log_.tables.empty() ? log_.tables.back().nranks : static_cast<int>(run_.devices.size());
  }
  if (log_.tables.empty())
    throw ConfigError(log_.file, "",
                      "no nccl-tests result table found (expected a \"#  size  count  type ...\" "
                      "header followed by rows)");
}

}  // namespace

NcclTestsLog parse_nccl_tests_text(const std::string& text, const std::string& file) {
  return TextParser(file).parse(text);
}

namespace {

std::optional<double> json_number(const JsonNode& parent, std::string_view key) {
  const auto node = parent.find(key);
  if (!node || node->is_null()) return std::nullopt;
  if (node->is_string()) return number_or_absent(node->as_string());  // "nan"
  return node->as_number();
}

// A whole number at `key` in [lo, hi]; absent when missing or null, an error when out of range.
std::optional<std::int64_t> json_whole(const JsonNode& parent, std::string_view key,
                                       std::int64_t lo, std::int64_t hi) {
  const auto v = json_number(parent, key);
  if (!v) return std::nullopt;
  const auto whole = whole_in(v, lo, hi);
  if (!whole) parent.fail_at(key, "not " + range_text(lo, hi));
  return whole;
}

NcclTestsMeasurement json_measurement(const JsonNode& row, std::string_view key) {
  NcclTestsMeasurement meas;
  const auto node = row.find(key);
  if (!node || node->is_null()) return meas;
  node->require_object();
  meas.time_us = json_number(*node, "time");
  if (!meas.time_us) meas.time_us = json_number(*node, "cpu_time");
  meas.algbw_GBps = json_number(*node, "alg_bw");
  meas.busbw_GBps = json_number(*node, "bus_bw");
  meas.check = json_number(*node, "nwrong");
  return meas;
}

}  // namespace

namespace {

// Versions, date, collective (from the command line in args) and the run script's env.
void json_provenance(const JsonNode& root, NcclTestsLog& log, NcclTestsTable& table) {
  if (const auto v = root.find("nccl_version"); v && v->is_number())
    log.provenance.nccl_version =
        nccl_version_from_code(static_cast<long>(v->as_int_in(0, kMaxVersionCode)));
  if (const auto v = root.find("start_time"); v && v->is_string())
    log.provenance.date = v->as_string();
  if (const auto args = root.find("args"); args && args->is_array()) {
    for (const auto& a : args->items()) {
      if (!a.is_string()) continue;
      std::string program;
      const NcclTestsOp op = op_in_text(a.as_string(), &program);
      if (op != NcclTestsOp::unknown) {
        table.op = op;
        table.program = program;
        break;
      }
    }
  }
  if (const auto env = root.find("env"); env && env->is_array()) {
    for (const auto& e : env->items()) {
      if (!e.is_string()) continue;
      const std::string s = e.as_string();
      if (s.rfind("CLUSTERSIM_DRIVER=", 0) == 0) log.provenance.driver_version = s.substr(18);
      if (s.rfind("CLUSTERSIM_CUDA=", 0) == 0) log.provenance.cuda_version = s.substr(16);
    }
  }
}

// Devices and hosts of "config", and the ranks they make.
void json_config(const JsonNode& root, NcclTestsLog& log, NcclTestsTable& table) {
  int nthreads = 1, ngpus = 1;
  if (const auto config = root.find("config")) {
    config->require_object();
    nthreads = static_cast<int>(config->int_or("nthreads", 1, 1, kMaxRanks));
    ngpus = static_cast<int>(config->int_or("ngpus", 1, 1, kMaxRanks));
    if (const auto devices = config->find("devices")) {
      for (const auto& d : devices->items()) {
        d.require_object();
        log.provenance.devices.push_back(d.string_or("device_info", ""));
        const std::string host = d.string_or("hostname", "");
        if (std::find(log.provenance.hosts.begin(), log.provenance.hosts.end(), host) ==
            log.provenance.hosts.end())
          log.provenance.hosts.push_back(host);
      }
    }
  }
  // With MPI, each process reports nThread × nGpus devices in one gathered line; the parsed
  // device list then holds one entry per process (util.cu parseRankInfo reads the first).
  const auto processes = static_cast<std::int64_t>(log.provenance.devices.size());
  std::int64_t ranks = std::max<std::int64_t>(1, processes);  // each factor <= kMaxRanks
  for (const std::int64_t factor : {std::int64_t{nthreads}, std::int64_t{ngpus}}) {
    if (ranks > kMaxRanks || ranks * factor > kMaxRanks)
      root.fail_at("config", "devices x nthreads x ngpus is more than " +
                                 std::to_string(kMaxRanks) + " ranks");
    ranks *= factor;
  }
  table.nranks = static_cast<int>(ranks);
  table.nranks_known = processes > 0;
  table.nodes = static_cast<int>(log.provenance.hosts.size());
  log.provenance.nranks = table.nranks;
}

// One entry of "results"; names the collective from experiment_name when nothing did yet.
NcclTestsRow json_row(const JsonNode& r, NcclTestsTable& table) {
  r.require_object();
  NcclTestsRow row;
  const auto size = json_number(r, "size");
  if (!size) r.fail_at("size", "missing or not a number");
  row.size_bytes = *size;
  row.count = json_whole(r, "count", 0, kMaxCount).value_or(0);
  row.type = r.string_or("type", "");
  row.redop = r.string_or("redop", "");
  if (const auto root_node = r.find("root"); root_node && !root_node->is_null()) {
    if (root_node->is_string()) {
      const std::string s = trim(root_node->as_string());
      if (is_integer(s)) row.root = static_cast<int>(*json_whole(r, "root", -1, kMaxRanks));
    } else {
      row.root = static_cast<int>(root_node->as_int_in(-1, kMaxRanks));
    }
  }
  row.out_of_place = json_measurement(r, "out_of_place");
  row.in_place = json_measurement(r, "in_place");
  if (table.op == NcclTestsOp::unknown) {
    if (const auto name = r.find("experiment_name"); name && name->is_string()) {
      std::string program;
      table.op = op_in_text(name->as_string(), &program);
      if (table.op == NcclTestsOp::unknown) table.op = nccl_tests_op_from_name(name->as_string());
    }
  }
  return row;
}

}  // namespace

NcclTestsLog parse_nccl_tests_json(const std::string& text, const std::string& file) {
  const JsonDocument doc = JsonDocument::parse(text, file);
  const JsonNode root = doc.root();
  root.require_object();
  NcclTestsLog log;
  log.file = file;
  NcclTestsTable table;
  table.check_column = "nwrong";
  table.has_root_column = true;
  json_provenance(root, log, table);
  json_config(root, log, table);

  const JsonNode results = root.at("results");
  for (const auto& r : results.items()) table.rows.push_back(json_row(r, table));
  if (const auto oob = root.find("out_of_bounds"); oob && oob->is_object())
    if (const auto c = json_whole(*oob, "count", 0, kMaxWrong))
      table.out_of_bounds = static_cast<int>(*c);
  if (const auto avg = root.find("average_bus_bandwidth"); avg && avg->is_object())
    table.avg_busbw_GBps = json_number(*avg, "bandwidth");
  if (table.op == NcclTestsOp::unknown) {
    const auto slash = file.find_last_of('/');
    table.op =
        op_in_text(slash == std::string::npos ? file : file.substr(slash + 1), &table.program);
  }
  if (table.op == NcclTestsOp::unknown)
    root.fail_at("args",
                 "cannot tell which collective this file measures (no *_perf program "
                 "in args, no experiment_name, no hint in the file name)");
  if (table.rows.empty()) results.fail("no results");
  log.tables.push_back(std::move(table));
  return log;
}

NcclTestsLog load_nccl_tests_log(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot open the file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw ConfigError(path, "", "the file is empty");
  if (text[first] == '{') return parse_nccl_tests_json(text, path);
  return parse_nccl_tests_text(text, path);
}

}  // namespace clustersim::validation
