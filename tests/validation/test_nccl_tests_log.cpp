// Parsing nccl-tests output: both text layouts, the -J JSON file, several tables per log.
#include <catch2/catch.hpp>
#include <string>

#include "core/errors.hpp"
#include "validation/nccl_tests_log.hpp"

using namespace clustersim::validation;

namespace {
std::string data(const std::string& name) {
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/tests/validation/data/" + name;
}

// The DGX H100 AllReduce table as docs/microbenchmarks.md#nccl-tests quotes it (out-of-place).
struct Published {
  double size, time_us, algbw, busbw;
};
const Published kDgx[] = {{8, 13.67, 0, 0},
                          {65536, 19.54, 3.35, 5.87},
                          {1048576, 27.37, 38.31, 67.04},
                          {16777216, 123.8, 135.55, 237.21},
                          {134217728, 586.4, 228.88, 400.53},
                          {1073741824, 4029.4, 266.48, 466.33},
                          {8589934592.0, 31307, 274.38, 480.16},
                          {17179869184.0, 62648, 274.23, 479.90}};

void check_dgx_table(const NcclTestsTable& t) {
  CHECK(t.op == NcclTestsOp::all_reduce);
  CHECK(t.nranks == 8);
  REQUIRE(t.rows.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) {
    CHECK(t.rows[i].size_bytes == kDgx[i].size);
    CHECK(t.rows[i].count == static_cast<std::int64_t>(kDgx[i].size / 4));
    CHECK(t.rows[i].type == "float");
    CHECK(t.rows[i].redop == "sum");
    REQUIRE(t.rows[i].out_of_place.time_us);
    CHECK(*t.rows[i].out_of_place.time_us == Approx(kDgx[i].time_us));
    CHECK(*t.rows[i].out_of_place.algbw_GBps == Approx(kDgx[i].algbw));
    CHECK(*t.rows[i].out_of_place.busbw_GBps == Approx(kDgx[i].busbw));
    CHECK_FALSE(t.rows[i].out_of_place.check);  // N/A
    CHECK_FALSE(t.rows[i].in_place.present());  // N/A: not published
  }
}
}  // namespace

TEST_CASE("busbw factors are the ones nccl-tests documents") {
  CHECK(busbw_factor(NcclTestsOp::all_reduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(busbw_factor(NcclTestsOp::all_gather, 16) == Approx(15.0 / 16));
  CHECK(busbw_factor(NcclTestsOp::reduce_scatter, 4) == Approx(0.75));
  CHECK(busbw_factor(NcclTestsOp::alltoall, 2) == Approx(0.5));
  CHECK(busbw_factor(NcclTestsOp::sendrecv, 2) == 1.0);
}

TEST_CASE("collective names are read in every spelling nccl-tests and users use") {
  CHECK(nccl_tests_op_from_name("all_reduce_perf") == NcclTestsOp::all_reduce);
  CHECK(nccl_tests_op_from_name("./build/all_gather_perf") == NcclTestsOp::all_gather);
  CHECK(nccl_tests_op_from_name("ReduceScatter") == NcclTestsOp::reduce_scatter);
  CHECK(nccl_tests_op_from_name("alltoall_perf") == NcclTestsOp::alltoall);
  CHECK(nccl_tests_op_from_name("sendrecv") == NcclTestsOp::sendrecv);
  CHECK(nccl_tests_op_from_name("gather") == NcclTestsOp::unknown);
}

TEST_CASE("NCCL version codes decode as NCCL_VERSION_CODE defines them") {
  CHECK(nccl_version_from_code(21805) == "2.18.5");
  CHECK(nccl_version_from_code(22703) == "2.27.3");
  CHECK(nccl_version_from_code(2804) == "2.8.4");
}

TEST_CASE("the DGX H100 transcription parses identically in both text layouts") {
  SECTION("v2.13+ layout with root and #wrong") {
    const auto log = load_nccl_tests_log(data("dgx-h100-allreduce-nvls.v2.13-layout.txt"));
    REQUIRE(log.tables.size() == 1);
    CHECK(log.tables[0].check_column == "#wrong");
    CHECK(log.tables[0].has_root_column);
    CHECK(log.tables[0].rows[0].root == -1);
    CHECK(log.tables[0].nodes == 1);
    check_dgx_table(log.tables[0]);
    CHECK(log.provenance.devices.size() == 8);
  }
  SECTION("v2.11 layout with the error column and no root") {
    const auto log = load_nccl_tests_log(data("dgx-h100-allreduce-nvls.v2.11-layout.txt"));
    REQUIRE(log.tables.size() == 1);
    CHECK(log.tables[0].check_column == "error");
    CHECK_FALSE(log.tables[0].has_root_column);
    CHECK_FALSE(log.tables[0].rows[0].root);
    check_dgx_table(log.tables[0]);
  }
}

TEST_CASE("the GCP two-node transcription keeps its 16 ranks on 2 hosts in both layouts") {
  for (const char* name :
       {"gcp-a3mega-2x8-allreduce.v2.13-layout.txt", "gcp-a3mega-2x8-allreduce.v2.11-layout.txt"}) {
    const auto log = load_nccl_tests_log(data(name));
    REQUIRE(log.tables.size() == 1);
    const auto& t = log.tables[0];
    CHECK(t.nranks == 16);
    CHECK(t.nodes == 2);
    CHECK(t.op == NcclTestsOp::all_reduce);
    REQUIRE(t.rows.size() == 5);
    CHECK(*t.rows[2].out_of_place.time_us == Approx(1652.2));
    CHECK(*t.rows[4].out_of_place.busbw_GBps == Approx(338.82));
    CHECK(log.provenance.devices[15] == "NVIDIA H100 80GB HBM3");
    CHECK(log.provenance.hosts.size() == 2);
  }
}

TEST_CASE("a real v2.11 log with interleaved INFO lines and the error column parses") {
  const auto log = load_nccl_tests_log(data("abci-a100-2node-allreduce.v2.11-error-column.txt"));
  REQUIRE(log.tables.size() == 1);
  const auto& t = log.tables[0];
  CHECK(t.op == NcclTestsOp::all_reduce);  // from the mpirun command line
  CHECK(t.program == "all_reduce_perf");
  CHECK(t.nranks == 16);
  CHECK(t.nodes == 2);
  CHECK(t.check_column == "error");
  REQUIRE(t.rows.size() == 15);
  CHECK(*t.rows[0].out_of_place.check == Approx(4e-7));
  CHECK(*t.rows[14].in_place.time_us == Approx(38163));
  CHECK(*t.rows[14].in_place.busbw_GBps == Approx(105.51));
  REQUIRE(t.avg_busbw_GBps);
  CHECK(*t.avg_busbw_GBps == Approx(29.0317));
  CHECK(t.out_of_bounds == 0);
  CHECK(log.provenance.devices[0] == "NVIDIA A100-SXM4-40GB");
}

TEST_CASE("the -J JSON file parses to the same table as the text layouts") {
  const auto log = load_nccl_tests_log(data("dgx-h100-allreduce-nvls.nccl-tests-J.json"));
  REQUIRE(log.tables.size() == 1);
  CHECK(log.tables[0].check_column == "nwrong");
  CHECK(log.tables[0].program == "all_reduce_perf");
  check_dgx_table(log.tables[0]);
  CHECK_FALSE(log.tables[0].avg_busbw_GBps);  // "nan"
}

TEST_CASE("several tables in one log are returned separately with their own collective") {
  const std::string text =
      "# nccl-tests version 2.13.9 nccl-headers=21805 nccl-library=21805\n"
      "# Collective test starting: all_gather_perf\n"
      "# nThread 1 nGpus 4 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n"
      "#\n# Using devices\n"
      "#  Rank  0 Group  0 Pid   1 on      host1 device  0 [0000:18:00] NVIDIA H800\n"
      "#  Rank  1 Group  0 Pid   1 on      host1 device  1 [0000:2a:00] NVIDIA H800\n"
      "#  Rank  2 Group  0 Pid   1 on      host1 device  2 [0000:3a:00] NVIDIA H800\n"
      "#  Rank  3 Group  0 Pid   1 on      host1 device  3 [0000:5d:00] NVIDIA H800\n"
      "host1:1:1 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n"
      "#\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      "(us)  (GB/s)  (GB/s)\n"
      "        1024            64     float    none      -1    10.00    0.10    0.08      0    "
      "10.50    0.10    0.07      0\n"
      "        2048           128     float    none      -1    11.00    0.19    0.14      0    "
      "11.50    0.18    0.13      0\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 0.105 \n#\n"
      "# Collective test concluded: all_gather_perf\n"
      "# Collective test starting: reduce_scatter_perf\n"
      "# nThread 1 nGpus 4 minBytes 1024 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 0 graph: 0\n"
      "#\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "        1024            64     float     sum      -1    12.00    0.09    0.06    N/A    "
      "12.50    0.08    0.06    N/A\n"
      "# Avg bus bandwidth    : 0.06 \n";
  const auto log = parse_nccl_tests_text(text, "mixed.log");
  REQUIRE(log.tables.size() == 2);
  CHECK(log.tables[0].op == NcclTestsOp::all_gather);
  CHECK(log.tables[0].nranks == 4);
  CHECK(log.tables[0].rows.size() == 2);
  CHECK(log.tables[0].rows[1].in_place.time_us == Approx(11.5));
  CHECK(log.tables[1].op == NcclTestsOp::reduce_scatter);
  CHECK(log.tables[1].nranks == 4);  // nThread 1 × nGpus 4, no device list in this run
  CHECK_FALSE(log.tables[1].rows[0].out_of_place.check);
  CHECK(log.provenance.nccl_version == "2.18.5");  // the INFO line wins over the code
  CHECK(log.provenance.cuda_version == "12.2");
  CHECK(log.provenance.nccl_tests_version == "2.13.9");
}

TEST_CASE("malformed logs are rejected with the file and line") {
  SECTION("a row with a missing column") {
    const std::string text =
        "# Collective test starting: all_reduce_perf\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
        "time   algbw   busbw #wrong\n"
        "        1024           256     float     sum      -1    10.00    0.10    0.18      0\n"
        "        2048           512     float     sum      -1    11.00    0.19\n";
    try {
      parse_nccl_tests_text(text, "bad.log");
      FAIL("expected a ConfigError");
    } catch (const clustersim::ConfigError& e) {
      CHECK(e.file() == "bad.log");
      CHECK(std::string(e.what()).find("line 4") != std::string::npos);
    }
  }
  SECTION("no table at all") {
    CHECK_THROWS_AS(parse_nccl_tests_text("hello\n# nothing here\n", "empty.log"),
                    clustersim::ConfigError);
  }
  SECTION("a JSON file without results names the pointer") {
    try {
      parse_nccl_tests_json(R"({"version": 2, "args": ["all_reduce_perf"]})", "x.json");
      FAIL("expected a ConfigError");
    } catch (const clustersim::ConfigError& e) {
      CHECK(e.pointer() == "/results");
    }
  }
}

namespace {
const char* kHeader =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n";
const char* kRow =
    "        1024           256     float     sum      -1    10.00    0.10    0.18      0"
    "    10.00    0.10    0.18      0\n";

// The line number a text log is refused at.
std::string refused_at(const std::string& text) {
  try {
    parse_nccl_tests_text(text, "hostile.log");
  } catch (const clustersim::ConfigError& e) {
    CHECK(e.file() == "hostile.log");
    const std::string what = e.what();
    const auto at = what.find("line ");
    return at == std::string::npos ? what : what.substr(at, what.find(':', at) - at);
  }
  return "accepted";
}

// The JSON pointer a -J file is refused at.
std::string refused_pointer(const std::string& text) {
  try {
    parse_nccl_tests_json(text, "hostile.json");
  } catch (const clustersim::ConfigError& e) {
    return e.pointer();
  }
  return "accepted";
}
}  // namespace

TEST_CASE("numbers beyond any real run are refused at their line and never overflow") {
  const std::string start = "# Collective test starting: all_reduce_perf\n";
  SECTION("an element count past 2^53") {
    CHECK(refused_at(start + kHeader + " 1024 1e300 float sum -1 10 0.1 0.18 0 10 0.1 0.18 0\n") ==
          "line 3");
  }
  SECTION("threads times GPUs of one process past 131,072 ranks") {
    CHECK(refused_at(start + "# nThread 99999 nGpus 99999\n" + kHeader + kRow) == "line 2");
    CHECK(refused_at(start + "# nThread 99999999999 nGpus 1\n" + kHeader + kRow) == "line 2");
  }
  SECTION("a declared rank count too large for an int") {
    CHECK(refused_at("# clustersim-env ranks=1e20\n" + start + kHeader + kRow) == "line 1");
  }
  SECTION("an out-of-bounds footer and a root past an int") {
    CHECK(refused_at(start + kHeader + kRow + "# Out of bounds values : 99999999999 OK\n") ==
          "line 4");
    CHECK(refused_at(start + kHeader +
                     " 1024 256 float sum 99999999999 10 0.1 0.18 0 10 0.1 0.18 0\n") == "line 3");
  }
  SECTION("a line long enough to exhaust the pattern matcher's stack") {
    CHECK(refused_at(start + "# clustersim-env device=" + std::string(200000, 'x') + "\n" +
                     kHeader + kRow) == "line 2");
  }
  SECTION("the same numbers in a -J file name their JSON pointer") {
    CHECK(refused_pointer(R"({"args": ["all_reduce_perf"], "config": {"nthreads": 131072,)"
                          R"( "ngpus": 131072}, "results": [{"size": 8, "count": 2}]})") ==
          "/config");
    CHECK(refused_pointer(R"({"args": ["all_reduce_perf"], "nccl_version": 1e300,)"
                          R"( "results": [{"size": 8, "count": 2}]})") == "/nccl_version");
    CHECK(refused_pointer(R"({"args": ["all_reduce_perf"],)"
                          R"( "results": [{"size": 8, "count": 1e300}]})") == "/results/0/count");
    CHECK(refused_pointer(R"({"args": ["all_reduce_perf"],)"
                          R"( "results": [{"size": 8, "count": 2, "root": "99999999999"}]})") ==
          "/results/0/root");
  }
}
