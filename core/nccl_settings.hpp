// NCCL environment settings as a scenario gives them (`comm.nccl`), parsed by their real names
// and validated with NCCL's own ranges (NVIDIA/nccl docs/userguide env.rst, v2.30.7-1).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/name_table.hpp"

namespace clustersim {

enum class NcclAlgo { ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain, pat };
enum class NcclProto { ll, ll128, simple };
// Names as NCCL prints them (its ncclAlgoStr / ncclProtoStr tables); NCCL_ALGO and NCCL_PROTO
// compare them without case.
inline const NameTable<NcclAlgo> kNcclAlgoNames = {{NcclAlgo::ring, "Ring"},
                                                   {NcclAlgo::tree, "Tree"},
                                                   {NcclAlgo::nvls, "NVLS"},
                                                   {NcclAlgo::nvls_tree, "NVLSTree"},
                                                   {NcclAlgo::collnet_direct, "CollNetDirect"},
                                                   {NcclAlgo::collnet_chain, "CollNetChain"},
                                                   {NcclAlgo::pat, "PAT"}};
inline const NameTable<NcclProto> kNcclProtoNames = {
    {NcclProto::ll, "LL"}, {NcclProto::ll128, "LL128"}, {NcclProto::simple, "Simple"}};
const char* to_string(NcclAlgo a);
const char* to_string(NcclProto p);

// Topology distance levels used by NCCL_NET_GDR_LEVEL and NCCL_P2P_LEVEL, closest first.
// The legacy integer spellings map as NCCL documents them: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 SYS.
enum class PathLevel { loc, nvl, pix, pxb, phb, sys };
inline const NameTable<PathLevel> kPathLevelNames = {
    {PathLevel::loc, "LOC"}, {PathLevel::nvl, "NVL"}, {PathLevel::pix, "PIX"},
    {PathLevel::pxb, "PXB"}, {PathLevel::phb, "PHB"}, {PathLevel::sys, "SYS"}};
const char* to_string(PathLevel l);

// How one setting is treated by the simulator, for the report.
struct NcclSettingNote {
  std::string name;
  std::string value;
  bool modelled = false;
  std::string explanation;
};

struct NcclSettings {
  // Every NCCL_* variable exactly as given, for reports.
  std::map<std::string, std::string> given;
  // NCCL_ALGO / NCCL_PROTO: the allowed sets after applying the list (empty = NCCL's default).
  std::vector<NcclAlgo> algos;
  std::vector<NcclProto> protos;
  // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS after capping at NCCL's MAXCHANNELS (0 = automatic).
  int min_channels = 0;
  int max_channels = 0;
  std::optional<PathLevel> net_gdr_level;     // NCCL_NET_GDR_LEVEL (unset = NCCL's default PXB)
  std::optional<PathLevel> p2p_level;         // NCCL_P2P_LEVEL (unset = NCCL's default)
  double buffsize_bytes = 4.0 * 1024 * 1024;  // NCCL_BUFFSIZE, default 4 MiB (env.rst)
  std::optional<bool> nvls_enable;            // NCCL_NVLS_ENABLE (unset = automatic)
  int ib_timeout = 20;   // NCCL_IB_TIMEOUT exponent; default 20 since NCCL 2.23 (env.rst)
  int ib_retry_cnt = 7;  // NCCL_IB_RETRY_CNT after capping at the hardware's 7 (env.rst)
  int ib_retry_cnt_given = 7;
  // Per-setting notes (modelled or not, and why) and warnings such as values that were capped.
  std::vector<NcclSettingNote> notes;
  std::vector<std::string> warnings;

  // One InfiniBand transport timeout: 4.096 µs × 2^NCCL_IB_TIMEOUT (env.rst); 0 or >= 32 means
  // no timeout (returns +infinity).
  double ib_timeout_s() const;
  // Time from a link going down to NCCL reporting the error: the first try plus every retry.
  double ib_hang_detection_s() const;
};

// The largest channel count NCCL supports (MAXCHANNELS in src/include/device.h, v2.30).
constexpr int kNcclMaxChannels = 64;

}  // namespace clustersim
