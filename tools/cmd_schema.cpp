// `clustersim schema [scenario|model|gpu|cluster] [-o FILE]`: prints the JSON Schema of a file
// kind, generated from the loader's own key tables (input/input_schema.hpp), for editors and
// for checks outside the simulator.
#include <algorithm>
#include <iostream>

#include "core/atomic_file.hpp"
#include "core/json_reader.hpp"
#include "input/input_schema.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/output.hpp"

namespace clustersim::cli {

namespace {

const std::vector<OptionSpec>& schema_options() {
  static const std::vector<OptionSpec> specs = {
      {"output", "o", true, false, "write the schema to FILE instead of standard output"},
  };
  return specs;
}

}  // namespace

std::string usage_schema() {
  return "usage: clustersim schema [scenario|model|gpu|cluster] [-o FILE]\n\n"
         "Prints the JSON Schema (Draft 2020-12) of a scenario (default), a model preset, a\n"
         "GPU preset or a cluster preset, generated from the loader's own key tables: every\n"
         "key with its type, range, accepted names and meaning; required keys; unknown keys\n"
         "refused. Rules across keys (tp dividing the heads, one failure rate per cause, ...)\n"
         "are checked by `clustersim check` only.\n\n" +
         describe_options(schema_options());
}

int cmd_schema(const std::vector<std::string>& argv) {
  const Args args(argv, schema_options(), 1);
  const std::string kind = args.positional().empty() ? "scenario" : args.positional().front();
  const auto& kinds = input::schema_kinds();
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    throw UsageError("no schema for \"" + kind + "\"; expected one of " + join_names(kinds));
  }
  const std::string text = json_text(input::input_schema(kind));
  if (const auto path = args.value("output")) {
    OutputFiles outputs;
    outputs.declare(*path);
    outputs.set(*path, text);
    outputs.commit();
  } else {
    std::cout << text;
  }
  return 0;
}

}  // namespace clustersim::cli
