// The exit codes of `clustersim`, one set for every command (README.md, `clustersim --help`):
//   0 success
//   1 a negative verdict (does not fit in memory, a step that hangs, a regression, a
//     validation error above threshold)
//   2 bad input or usage: the message names the file and JSON path; nothing is written
//   3 the environment failed: an output that cannot be written, a process that cannot be
//     started, memory exhausted; nothing (more) is written
//   4 an internal error: a result the simulator must never produce (a deadlock, a time that
//     is not finite) or an unexpected exception; the message asks for a report and gives the
//     hashes of the files on the command line
#pragma once

#include <string>
#include <vector>

#include "tools/commands.hpp"

namespace clustersim::cli {

enum ExitCode : int {
  kExitSuccess = 0,
  kExitNegativeVerdict = 1,
  kExitBadInput = 2,
  kExitEnvironment = 3,
  kExitInternal = 4,
};

// The exit codes as `--help` prints them.
std::string exit_codes_help();

// Runs `command` on `args`, turning every exception into its message on stderr and its exit
// code. Never throws.
int run_command(const Command& command, const std::vector<std::string>& args);

}  // namespace clustersim::cli
