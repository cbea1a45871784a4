// clustersim: simulate GPU training clusters. See README.md.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "tools/commands.hpp"
#include "tools/exit_codes.hpp"

namespace {

void print_help() {
  std::cout << "clustersim — a discrete-event simulator of GPU training clusters\n\n"
               "usage: clustersim COMMAND [ARGS...]\n"
               "       clustersim COMMAND --help\n"
               "       clustersim --version\n\ncommands:\n";
  for (const auto& c : clustersim::cli::commands()) {
    std::string name = c.name;
    name.resize(12, ' ');
    std::cout << "  " << name << c.summary << "\n";
  }
  std::cout << "\nWithout a scenario, `run` and `check` use the seed's optimized layout:\n  "
            << clustersim::cli::default_scenario_path() << "\n\n"
            << clustersim::cli::exit_codes_help();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_help();
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") args[0] = "version";
  const std::string name = args[0];
  args.erase(args.begin());
  for (const auto& c : clustersim::cli::commands()) {
    if (name != c.name) continue;
    for (const auto& a : args) {
      if (a == "--help" || a == "-h") {
        std::cout << c.usage();
        return 0;
      }
    }
    return clustersim::cli::run_command(c, args);
  }
  std::cerr << "error: unknown command \"" << name << "\"; run `clustersim --help`\n";
  return 2;
}
