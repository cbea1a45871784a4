#include "core/hybrid_ep.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

namespace clustersim {

namespace {

// One measurement of HybridEP: dispatch and combine algorithm bandwidth (GB/s, one direction)
// by CUDA blocks (SMs) per kernel, top-8 routing over 8 local experts per GPU, 4096 tokens of
// hidden size 7168 per rank, BF16.
struct Measured {
  GpuArch arch;
  double nvlink_GBps;  // per GPU, one direction, of the platform measured
  std::array<double, 4> sms;
  std::array<double, 4> dispatch_GBps;
  std::array<double, 4> combine_GBps;
};

// Yao, Bai, Zhang, Liu, Yu, Li, Zhu, Yan (NVIDIA), 'Optimizing DeepSeek-V3 Training
// Performance on NVIDIA GB200 NVL72', NVIDIA/Megatron-LM
// docs/discussions/deepseek-v3-gb200-optimization (commit 1e7b6df7, 2025-10-31), section 2.5's
// figure (images/image6.png): "Performance test on GB200 NVL36, TOPK = 8" and "Performance test
// on DGX H100, TOPK = 8". NVLink: 900 GB/s per direction on a GB200 (1.8 TB/s bidirectional),
// 450 on an H100 SXM (900 bidirectional).
constexpr std::array<Measured, 2> kHybridEpMeasured = {{
    {GpuArch::blackwell,
     900,
     {4, 8, 16, 32},
     {213.95, 422.78, 694.1, 714.66},
     {185.44, 386.59, 617.62, 657.72}},
    {GpuArch::hopper,
     450,
     {4, 8, 12, 16},
     {177.76, 344.06, 349.29, 368.9},
     {191.24, 358.93, 363.05, 368.87}},
}};

double at_sms(const std::array<double, 4>& sms, const std::array<double, 4>& GBps, double n) {
  if (n <= sms.front()) return GBps.front() * n / sms.front();
  for (std::size_t i = 1; i < sms.size(); ++i) {
    if (n <= sms[i]) {
      const double f = (n - sms[i - 1]) / (sms[i] - sms[i - 1]);
      return GBps[i - 1] + f * (GBps[i] - GBps[i - 1]);
    }
  }
  return GBps.back();
}

}  // namespace

std::optional<HybridEpRate> hybrid_ep_rate(const GpuSpec& gpu, int sms) {
  const auto m = std::find_if(kHybridEpMeasured.begin(), kHybridEpMeasured.end(),
                              [&](const Measured& x) { return x.arch == gpu.architecture; });
  if (m == kHybridEpMeasured.end()) return std::nullopt;
  const double n = sms > 0 ? sms : kHybridEpDefaultSms;
  const double measured_Bps = m->nvlink_GBps * 1e9;
  const double scale = gpu.nvlink_Bps > 0 ? gpu.nvlink_Bps / measured_Bps : 1.0;
  HybridEpRate r;
  r.dispatch_Bps = at_sms(m->sms, m->dispatch_GBps, n) * 1e9 * scale;
  r.combine_Bps = at_sms(m->sms, m->combine_GBps, n) * 1e9 * scale;
  r.scaled = scale != 1.0;
  return r;
}

double ranks_per_token(double reachable, double local, double k) {
  // P(a given GPU holds none of the k experts) = C(n - local, k) / C(n, k), n = reachable x
  // local experts.
  const double n = reachable * local;
  double none = 1;
  for (int i = 0; i < static_cast<int>(k); ++i) none *= (n - local - i) / (n - i);
  return reachable * (1 - std::max(0.0, none));
}

}  // namespace clustersim
