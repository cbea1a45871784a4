// Running the built `clustersim` as a user does, for tests of exit codes and messages.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace clustersim::test {

struct CliRun {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;
  std::string err;
};

// A valid 8-GPU scenario that simulates in well under a second.
inline constexpr const char* kSmall =
    R"({"name": "small", "model": "llama3-8b", "cluster": "h800-128x8-rail",
  "gpus": 8, "parallelism": {"dp": 1, "tp": 8, "pp": 1, "sequence_parallel": true},
  "training": {"global_batch": 4, "micro_batch": 1, "seq_len": 2048}})";

// A scratch directory per test process, named after `tag`.
inline std::filesystem::path cli_scratch(const std::string& tag) {
  const std::filesystem::path d = std::filesystem::temp_directory_path() /
                                  ("clustersim-test-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

// Single-quotes a path or argument for the shell.
inline std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The text of a scenario shipped in the source tree's scenarios/ folder.
inline std::string shipped_scenario_text(const std::string& name) {
  return read_text(std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios" / name);
}

inline std::filesystem::path write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

// Runs `clustersim ARGS` (ARGS already shell-quoted where needed) in `dir`, capturing output.
inline CliRun run_cli(const std::string& args, const std::filesystem::path& dir) {
  const auto out = dir / "stdout.txt";
  const auto err = dir / "stderr.txt";
  const std::string cmd = "cd " + shell_quote(dir.string()) + " && " +
                          shell_quote(CLUSTERSIM_BINARY) + " " + args + " >" +
                          shell_quote(out.string()) + " 2>" + shell_quote(err.string());
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

}  // namespace clustersim::test
