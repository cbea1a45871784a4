// NCCL buffers per GPU (models/nccl_buffers.hpp) against hand counts from NCCL v2.30.7-1's
// allocation rules and the published logs they cite (NVIDIA/nccl issues 892, 1450, 1685).
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/json_reader.hpp"
#include "input/scenario_loader.hpp"
#include "models/deepep_buffers.hpp"
#include "models/memory.hpp"
#include "models/nccl_buffers.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

constexpr double MiB = 1024.0 * 1024.0;

// DeepSeek-V3 on 2048 H800 (dp 128, pp 16, ep 64, expert-dp 2, ZeRO-1, DeepEP) with parts
// replaced.
Scenario deepseek(const nlohmann::json& patch = nlohmann::json::object()) {
  std::ifstream in(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/deepseek-v3-2048-h800.json");
  nlohmann::json base = nlohmann::json::parse(in);
  base.merge_patch(patch);
  return load_scenario(JsonDocument::parse(base.dump(), "test.json"));
}

const NcclCommBuffers& comm(const NcclBufferEstimate& e, const std::string& name) {
  for (const NcclCommBuffers& c : e.comms) {
    if (c.name == name) return c;
  }
  FAIL("no communicator " << name);
  return e.comms.front();
}

}  // namespace

TEST_CASE("an NCCL connection is 10 MiB on the receiver and 2 MiB on the NVLink sender") {
  // Issue 1685's allocation log (8 x H100, P2P/CUMEM): buffers of 10,485,760 B and 2,097,152 B.
  // Receive set 4,194,304 + 4,915,200 + 524,288 = 9,633,792 B -> 5 granules of 2 MiB.
  NcclSettings nccl;
  CHECK(nccl_recv_connection_bytes(nccl) == 10485760.0);
  CHECK(nccl_nvlink_send_connection_bytes() == 2097152.0);
  // Network sender with GPUDirect RDMA: 4,194,304 + 4,915,200 = 9,109,504 B -> 10 MiB.
  CHECK(nccl_net_send_connection_bytes(nccl) == 10 * MiB);
  // NCCL_BUFFSIZE 8 MiB: 8,388,608 + 4,915,200 + 524,288 = 13,828,096 B -> 7 granules; the
  // network sender 13,303,808 B -> 7 granules too.
  nccl.buffsize_bytes = 8 * MiB;
  CHECK(nccl_recv_connection_bytes(nccl) == 14 * MiB);
  CHECK(nccl_net_send_connection_bytes(nccl) == 14 * MiB);
  // NCCL_PROTO does not change what is allocated (computeBuffSizes ignores it).
  nccl.buffsize_bytes = 4 * MiB;
  nccl.protos = {NcclProto::simple};
  CHECK(nccl_recv_connection_bytes(nccl) == 10 * MiB);
}

TEST_CASE("collective channels are 16 unless NCCL_MIN or NCCL_MAX_NCHANNELS say otherwise") {
  NcclSettings nccl;
  CHECK(nccl_collective_channels(nccl) == 16);
  nccl.min_channels = 32;
  CHECK(nccl_collective_channels(nccl) == 32);
  nccl.min_channels = 0;
  nccl.max_channels = 8;
  CHECK(nccl_collective_channels(nccl) == 8);
  nccl.min_channels = 4;
  nccl.max_channels = 4;
  CHECK(nccl_collective_channels(nccl) == 4);
}

TEST_CASE("a communicator's GPUs per node follow its rank stride") {
  CHECK(nccl_local_ranks(128, 1, 8) == 8);  // dp 128 at stride 1
  CHECK(nccl_local_ranks(2, 64, 8) == 1);   // expert-dp 2 at stride 64
  CHECK(nccl_local_ranks(4, 2, 8) == 4);    // pp 4 at stride tp 2
  CHECK(nccl_local_ranks(16, 128, 8) == 1);
  CHECK(nccl_local_ranks(4, 1, 8) == 4);
}

TEST_CASE("ring and tree connections per channel inside a node and across nodes") {
  const NcclSettings nccl;
  // One node, 8 GPUs: ring 10 + 2 MiB, the tree chain another 10 + 2 MiB: 24 MiB x 16 channels.
  CHECK(nccl_collective_comm_bytes(nccl, 16, 8, 8, true) == 384 * MiB);
  CHECK(nccl_collective_comm_bytes(nccl, 16, 8, 8, false) == 192 * MiB);
  // 16 nodes x 8 GPUs: ring (7 x 12 + 20) / 8 = 13 MiB; tree chain 12 MiB plus 3 network peers
  // x 20 MiB / 8 GPUs = 7.5 MiB; (13 + 19.5) x 16 = 520 MiB.
  CHECK(nccl_collective_comm_bytes(nccl, 16, 128, 8, true) == 520 * MiB);
  CHECK(nccl_collective_comm_bytes(nccl, 16, 64, 8, false) == 208 * MiB);
  // 2 nodes x 1 GPU: the ring's one peer over the network, 10 + 10 MiB x 16.
  CHECK(nccl_collective_comm_bytes(nccl, 16, 2, 1, false) == 320 * MiB);
  // There the tree's one peer is the ring's: nothing more. 8 nodes x 1 GPU: ring 20 MiB plus
  // 3 tree peers x 20 MiB = 80 MiB x 16 = 1,280 MiB; 3 nodes: 2 tree peers, 60 x 16 = 960 MiB.
  CHECK(nccl_collective_comm_bytes(nccl, 16, 2, 1, true) == 320 * MiB);
  CHECK(nccl_collective_comm_bytes(nccl, 16, 8, 1, true) == 1280 * MiB);
  CHECK(nccl_collective_comm_bytes(nccl, 16, 3, 1, true) == 960 * MiB);
  CHECK(nccl_collective_comm_bytes(nccl, 16, 1, 1, true) == 0);
}

TEST_CASE("point-to-point buffers per NVLink peer and the shared network pool") {
  const NcclSettings nccl;
  // Network peers only: 2 directions x 16 channels x 16 steps x 128 KiB = 64 MiB (issue 1450).
  CHECK(nccl_p2p_bytes(nccl, 16, 16, 16, 0, true) == 64 * MiB);
  // All-to-all in one 8-GPU node: 7 peers x 16 channels x 12 MiB = 1,344 MiB.
  CHECK(nccl_p2p_bytes(nccl, 16, 8, 1, 7, false) == 1344 * MiB);
  // 64 ranks over 8 nodes: 4 channels per peer halved while 8 batches x channels > 16: 2;
  // 7 x 2 x 12 + 64 = 232 MiB.
  CHECK(nccl_p2p_bytes(nccl, 16, 64, 8, 7, true) == 232 * MiB);
}

TEST_CASE("DeepEP's buffers are its size hints at the default configs plus 32 MiB") {
  // DeepSeek-V3 (hidden 7168: 14,336 B per BF16 token), 20 SMs = 10 channels; a token slot is
  // 14,336 + 8 (SourceMeta) + 128 x 12 (top-k) + 128 x 4 (scales) = 16,392 B.
  // EP 64 (8 NVLink x 8 RDMA ranks, 288 NVLink receive tokens, RDMA send 8 so 128 receive):
  // NVLink 10 x 8 x 19 x 4 + 10 x 8 x 288 x 16,392 = 377,677,760 -> 377,677,824 (128 B);
  // RDMA 10 x 8 x 18 x 2 x 4 + 10 x 8 x 128 x (16,392 + 16) x 2 + 1,048,576 = 337,095,936.
  const DeepEpBuffers ep64 = deepep_buffers(64, 7168, 20);
  CHECK(ep64.nvl_bytes == 377677824.0);
  CHECK(ep64.rdma_bytes == 337095936.0);
  CHECK(ep64.workspace_bytes == 32 * MiB);
  CHECK(ep64.bytes() == 748328192.0);
  // EP 16: RDMA receive tokens align(128, 20) = 140 (the dispatch config's send 20 wins);
  // NVLink 10 x 8 x 7 x 4 + 377,671,680 = 377,673,920 -> 377,673,984;
  // RDMA 10 x 2 x 18 x 2 x 4 + 10 x 2 x 140 x 16,408 x 2 + 1,048,576 = 92,936,256 -> 92,936,320.
  const DeepEpBuffers ep16 = deepep_buffers(16, 7168, 20);
  CHECK(ep16.nvl_bytes == 377673984.0);
  CHECK(ep16.rdma_bytes == 92936320.0);
  // EP 8, one NVLink domain: 256 receive tokens, no RDMA buffer.
  // 10 x 8 x 5 x 4 + 10 x 8 x 256 x 16,392 = 335,709,760 -> 335,709,824.
  const DeepEpBuffers ep8 = deepep_buffers(8, 7168, 0);
  CHECK(ep8.nvl_bytes == 335709824.0);
  CHECK(ep8.rdma_bytes == 0);
  CHECK(deepep_buffers(1, 7168, 20).bytes() == 0);
}

TEST_CASE("DeepSeek-V3 on 2048 H800 needs about 1.78 GiB of communication buffers per GPU") {
  // dp 128 (8 per node, ring + tree: the loss all-reduce) 520 MiB, ep 64 (ring only, DeepEP)
  // 208 MiB, expert-dp 2 (1 per node, ring: ZeRO-1 reduce-scatters) 320 MiB, pipeline sends
  // across nodes 64 MiB: 1,112 MiB of NCCL buffers; DeepEP's 748,328,192 B on top.
  const NcclBufferEstimate e = estimate_nccl_buffers(deepseek());
  CHECK(e.channels == 16);
  CHECK(comm(e, "dp").bytes == 520 * MiB);
  CHECK(comm(e, "dp").tree);
  CHECK(comm(e, "ep").bytes == 208 * MiB);
  CHECK(comm(e, "expert-dp").bytes == 320 * MiB);
  CHECK(comm(e, "pp").bytes == 64 * MiB);
  CHECK(comm(e, "deepep").bytes == 748328192.0);
  CHECK(e.bytes() == 1112 * MiB + 748328192.0);
  CHECK(e.collective_comms() == 3);
  const MemoryEstimate m = estimate_memory(deepseek());
  CHECK(m.worst().nccl_buffers_bytes == 1112 * MiB + 748328192.0);
}

TEST_CASE("NCCL_ALGO without Tree and the all-to-all dispatcher change what is connected") {
  // Ring only: dp 128 costs 13 MiB x 16 = 208 MiB.
  const NcclBufferEstimate ring =
      estimate_nccl_buffers(deepseek({{"comm", {{"nccl", {{"NCCL_ALGO", "Ring"}}}}}}));
  CHECK(comm(ring, "dp").bytes == 208 * MiB);
  CHECK_FALSE(comm(ring, "dp").tree);
  // The all-to-all dispatcher sends tokens over point-to-point: ep 64 costs 208 + 232 MiB.
  const NcclBufferEstimate a2a =
      estimate_nccl_buffers(deepseek({{"training", {{"moe_dispatcher", "alltoall"}}}}));
  CHECK(comm(a2a, "ep").bytes == 440 * MiB);
}

TEST_CASE("pipeline neighbours inside a node connect per NVLink peer") {
  // pp 4 at stride tp 2 in one node: two neighbours x 16 channels x 12 MiB = 384 MiB.
  const NcclBufferEstimate e = estimate_nccl_buffers(deepseek(
      {{"gpus", 8},
       {"parallelism",
        {{"dp", 1}, {"tp", 2}, {"pp", 4}, {"ep", 1}, {"layers_per_stage", {16, 15, 15, 15}}}}}));
  CHECK(comm(e, "pp").local_ranks == 4);
  CHECK(comm(e, "pp").bytes == 384 * MiB);
}

TEST_CASE("Transformer Engine's context-parallel ring connects one peer each way") {
  std::ifstream in(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/seed-optimized-1024.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["comm"].erase("nccl");  // NCCL's defaults: 16 collective channels
  j["parallelism"]["cp"] = 2;
  const auto estimate = [&](const char* implementation, int tp) {
    j["parallelism"]["cp_implementation"] = implementation;
    j["parallelism"]["tp"] = tp;
    j["parallelism"]["dp"] = 64 / tp * 8 / 2;
    return comm(estimate_nccl_buffers(load_scenario(JsonDocument::parse(j.dump(), "t.json"))),
                "cp");
  };
  // tp 8: the two CP ranks on two nodes: the network pool, 2 directions x 16 channels x 16
  // steps x 128 KiB = 64 MiB, on top of the all-gather's ring and tree connections.
  CHECK(estimate("p2p", 8).bytes - estimate("all_gather", 8).bytes == 64 * MiB);
  CHECK(estimate("p2p", 8).p2p);
  CHECK_FALSE(estimate("all_gather", 8).p2p);
  // tp 2: both in one node, one NVLink peer: 16 channels x (10 + 2) MiB = 192 MiB.
  CHECK(estimate("p2p", 2).bytes - estimate("all_gather", 2).bytes == 192 * MiB);
}
