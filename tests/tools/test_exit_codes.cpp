// One set of exit codes for every command (tools/exit_codes.hpp), and outputs that are checked
// before any work and written all together or not at all.
#include <catch2/catch.hpp>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"
#include "tests/tools/cli_runner.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

using clustersim::test::CliRun;
using clustersim::test::kSmall;
using clustersim::test::run_cli;
using clustersim::test::shell_quote;
using clustersim::test::write_text;
namespace cli = clustersim::cli;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path dir = clustersim::test::cli_scratch("exit-codes");
  return dir;
}

// What a command throws, for run_command.
int throws_config(const std::vector<std::string>&) {
  throw clustersim::ConfigError("x.json", "/gpus", "bad");
}
int throws_usage(const std::vector<std::string>&) {
  throw cli::UsageError("--frob");
}
int throws_environment(const std::vector<std::string>&) {
  throw clustersim::EnvironmentError("cannot write out.json");
}
int throws_bad_alloc(const std::vector<std::string>&) {
  throw std::bad_alloc();
}
int throws_internal(const std::vector<std::string>&) {
  throw clustersim::InternalError("the simulation deadlocked");
}
int throws_logic(const std::vector<std::string>&) {
  throw std::logic_error("impossible");
}
int throws_int(const std::vector<std::string>&) {
  throw 42;
}
int returns_one(const std::vector<std::string>&) {
  return 1;
}
std::string no_usage() {
  return "usage: test\n";
}

struct Outcome {
  int code;
  std::string err;
};

Outcome run_command(int (*body)(const std::vector<std::string>&),
                    const std::vector<std::string>& args = {}) {
  const cli::Command command{"test", "", body, no_usage};
  std::ostringstream captured;
  std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
  const int code = cli::run_command(command, args);
  std::cerr.rdbuf(old);
  return {code, captured.str()};
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("every kind of failure maps to its documented exit code", "[tools]") {
  CHECK(run_command(returns_one).code == 1);
  CHECK(run_command(throws_config).code == 2);
  CHECK(has(run_command(throws_config).err, "error: x.json:/gpus: bad"));
  CHECK(run_command(throws_usage).code == 2);
  CHECK(has(run_command(throws_usage).err, "usage: test"));
  CHECK(run_command(throws_environment).code == 3);
  CHECK(run_command(throws_bad_alloc).code == 3);
  CHECK(has(run_command(throws_bad_alloc).err, "out of memory"));
  for (auto body : {throws_internal, throws_logic, throws_int}) {
    const Outcome o = run_command(body);
    CHECK(o.code == 4);
    CHECK(has(o.err, "internal error: "));
    CHECK(has(o.err, "please report it"));
  }
}

TEST_CASE("an internal error names the files of the command line with their hashes", "[tools]") {
  // FNV-1a 64 of "abc", worked out by hand from its offset basis and prime: e71fa2190541574b.
  const fs::path input = write_text(scratch() / "input.json", "abc");
  const Outcome o = run_command(throws_internal, {"--json", "none.json", input.string()});
  CHECK(has(o.err, "the simulation deadlocked"));
  CHECK(has(o.err, "clustersim test --json none.json " + input.string()));
  CHECK(has(o.err, input.string() + "  fnv1a64 e71fa2190541574b"));
}

TEST_CASE("clustersim --help documents the exit codes", "[tools][cli]") {
  const CliRun r = run_cli("--help", scratch());
  CHECK(r.exit_code == 0);
  for (const char* line : {"  0  success", "  1  a negative verdict", "  2  bad input",
                           "  3  the environment failed", "  4  internal error"}) {
    CHECK(has(r.out, line));
  }
}

TEST_CASE("an output that cannot be written stops run before it simulates, writing nothing",
          "[tools][cli]") {
  const fs::path scenario = write_text(scratch() / "small.json", kSmall);
  const fs::path not_a_dir = write_text(scratch() / "file.txt", "x");
  const fs::path json = scratch() / "ok.json";
  fs::remove(json);
  const CliRun r =
      run_cli("run " + shell_quote(scenario.string()) + " --json " + shell_quote(json.string()) +
                  " --trace " + shell_quote((not_a_dir / "t.json").string()),
              scratch());
  CHECK(r.exit_code == 3);
  CHECK(has(r.err, "file.txt"));
  CHECK_FALSE(has(r.out, "step time"));  // no simulation ran
  CHECK_FALSE(fs::exists(json));
  // A directory where a file is wanted is refused as well.
  const CliRun dir = run_cli(
      "check " + shell_quote(scenario.string()) + " --json " + shell_quote(scratch().string()),
      scratch());
  CHECK(dir.exit_code == 3);
}

TEST_CASE("run creates missing output directories and writes every output", "[tools][cli]") {
  const fs::path scenario = write_text(scratch() / "small.json", kSmall);
  const fs::path out = scratch() / "new" / "deeper";
  fs::remove_all(scratch() / "new");
  const CliRun r = run_cli("run " + shell_quote(scenario.string()) + " --json " +
                               shell_quote((out / "r.json").string()) + " --trace " +
                               shell_quote((out / "t.json").string()),
                           scratch());
  CHECK(r.exit_code == 0);
  CHECK(fs::is_regular_file(out / "r.json"));
  CHECK(fs::is_regular_file(out / "t.json"));
  // Nothing but the two outputs: no temporaries left behind.
  CHECK(std::distance(fs::directory_iterator(out), fs::directory_iterator()) == 2);
}

TEST_CASE("collective sizes that cannot end or do not fit a GPU are refused", "[tools][cli]") {
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"-e inf", "\"inf\" is not a size"},
      {"-e nan", "\"nan\" is not a size"},
      {"-e 1e30", "\"1e30\" is outside 1 byte .. 1T"},
      {"-b 8 -e 1M --stepbytes 1e-300", "\"1e-300\" is outside 1 byte .. 1T"},
      {"-b 8 -e 1G --stepbytes 1", "has more than 4096 sizes"},
      {"-b 8 -e 8G -f 1.0000001", "has more than 4096 sizes"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    const CliRun r =
        run_cli(std::string("collective --op allreduce --gpus 8 ") + c.args, scratch());
    CHECK(r.exit_code == 2);
    CHECK(has(r.err, c.message));
  }
}

TEST_CASE("sizes are whole bytes, rounded down", "[tools]") {
  CHECK(cli::parse_size("8") == 8);
  CHECK(cli::parse_size("1.5K") == 1536);
  CHECK(cli::parse_size("1.0001") == 1);
  CHECK(cli::parse_size("1T") == cli::kMaxSizeBytes);
  CHECK_THROWS_AS(cli::parse_size("0.5"), cli::UsageError);
  CHECK_THROWS_AS(cli::parse_size("2T"), cli::UsageError);
}

TEST_CASE("check reports every mistake of a file in one run, each at its path", "[tools][cli]") {
  const fs::path file = write_text(scratch() / "three-mistakes.json", R"({
    "model": "llama3-8b", "cluster": "h800-128x8-rail", "gpus": 8,
    "parallelism": {"tp": 8, "pipeline_model_parallel_size": 1},
    "training": {"global_batch": 0, "micro_batch": 1, "seq_len": 2048, "precision": "bf61"}})");
  const CliRun r = run_cli("check " + shell_quote(file.string()), scratch());
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  const std::string at = "error: " + file.string() + ":";
  CHECK(has(r.err, at + "/parallelism/pipeline_model_parallel_size: "));
  CHECK(has(r.err, "write \"pp\" in \"parallelism\""));
  CHECK(has(r.err, at + "/training/global_batch: 0 is out of range"));
  CHECK(has(r.err, at + "/training/precision: \"bf61\" is not one of: bf16, fp16, fp8"));
}
