#include "tools/exit_codes.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>

#include "core/config_errors.hpp"
#include "core/errors.hpp"
#include "sweep/sweep_spec.hpp"
#include "tools/cli.hpp"

namespace clustersim::cli {

namespace {

// "  scenarios/x.json  fnv1a64 0123456789abcdef" for every argument that names a file, so that
// a report identifies the exact input (the default scenario when `run`/`check` got none).
std::string input_hashes(const std::string& command, const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const auto& a : args) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(a, ec)) files.push_back(a);
  }
  if (files.empty() && (command == "run" || command == "check")) {
    files.push_back(default_scenario_path());
  }
  std::string out;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    out += "  " + f + "  fnv1a64 " + sweep::fnv1a64_hex(bytes.str()) + "\n";
  }
  return out.empty() ? "  (no input files)\n" : out;
}

int internal_error(const Command& command, const std::vector<std::string>& args,
                   const std::string& what) {
  std::cerr
      << "internal error: " << what
      << "\nThis is a bug in clustersim: please report it with the command line\n  clustersim "
      << command.name;
  for (const auto& a : args) std::cerr << " " << a;
  std::cerr << "\nand the files it names:\n" << input_hashes(command.name, args);
  return kExitInternal;
}

}  // namespace

std::string exit_codes_help() {
  return "exit codes:\n"
         "  0  success\n"
         "  1  a negative verdict (does not fit in memory, the step hangs, a regression,\n"
         "     a validation error above threshold)\n"
         "  2  bad input or usage (the message names the file and JSON path); nothing written\n"
         "  3  the environment failed (an output that cannot be written, out of memory)\n"
         "  4  internal error: please report it (the message gives the input files' hashes)\n";
}

int run_command(const Command& command, const std::vector<std::string>& args) {
  try {
    return command.run(args);
  } catch (const ConfigError& e) {
    std::cerr << describe_config_error(e);
    return kExitBadInput;
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n\n" << command.usage();
    return kExitBadInput;
  } catch (const EnvironmentError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitEnvironment;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitEnvironment;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return kExitEnvironment;
  } catch (const std::exception& e) {
    return internal_error(command, args, e.what());
  } catch (...) {
    return internal_error(command, args, "an exception that is not a std::exception");
  }
}

}  // namespace clustersim::cli
