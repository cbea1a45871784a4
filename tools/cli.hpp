// Small command-line parsing shared by the subcommands of `clustersim`.
//
// Usage errors (unknown flag, missing value, bad number) throw UsageError; main() prints the
// message with the subcommand's usage and exits 2.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace clustersim::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string name;        // long name without dashes, e.g. "json"
  std::string short_name;  // e.g. "b" for -b, may be empty
  bool takes_value = true;
  bool repeatable = false;  // may be given several times, or followed by several values
  std::string help;
};

class Args {
 public:
  // Parses `argv` (without the program and subcommand names) against `specs`.
  // `max_positional` limits bare arguments (-1 = unlimited).
  Args(const std::vector<std::string>& argv, const std::vector<OptionSpec>& specs,
       int max_positional);

  bool flag(const std::string& name) const;
  std::optional<std::string> value(const std::string& name) const;
  std::vector<std::string> values(const std::string& name) const;
  std::string value_or(const std::string& name, const std::string& fallback) const;
  long long int_or(const std::string& name, long long fallback) const;
  double number_or(const std::string& name, double fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

// The largest size a collective may be given: 1 TiB, more memory than any GPU has (a B200
// holds 192 GB), where nccl-tests allocates its buffers.
inline constexpr std::uint64_t kMaxSizeBytes = std::uint64_t(1) << 40;

// "8", "64K", "8M", "1G", "1.5K" (powers of 1024, as nccl-tests reads -b/-e) to whole bytes,
// rounded down. Refuses (UsageError) anything not finite, below 1 byte or above kMaxSizeBytes.
std::uint64_t parse_size(const std::string& text);

// Help text for the options of a subcommand.
std::string describe_options(const std::vector<OptionSpec>& specs);

// Path of a shipped data file: $CLUSTERSIM_DATA_DIR/relative, else the source tree.
std::string data_path(const std::string& relative);

// The current time in UTC as strftime formats it: "%Y-%m-%d" for the dates the files record.
std::string utc_now(const char* strftime_format);

}  // namespace clustersim::cli
