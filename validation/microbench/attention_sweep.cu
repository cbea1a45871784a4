// attention_sweep: a simple timing of the attention core (scores, softmax, weighted sum) per
// micro-batch and tensor-parallel rank, written as clustersim-attention-sweep/1 JSON for
// `clustersim calibrate --gemm`.
//
// FlashAttention is not assumed to be installed: the sweep times what an unfused
// implementation does (Megatron-LM's non-flash path, Shoeybi et al. 2019): two cuBLAS strided
// batched BF16 GEMMs, S = Q·Kᵀ (s×s×d per head) and O = P·V (s×d×s per head), and a row-wise
// softmax kernel over the s×s scores in between (with the causal mask applied in the softmax).
// Reported FLOPs are the GEMMs' 4·B·H·s²·d (the convention of Megatron's and PaLM's FLOP
// formulas, which count full, unmasked score matrices); the softmax time is included in the
// total and also printed on its own. A fused FlashAttention kernel is faster and uses less
// memory; treat these numbers as an upper bound on attention time per shape.
//
// Usage: attention_sweep --heads 64 --tp 8 --head-dim 128 --micro-batch 1
//                        [--seqs 1024,2048,4096,8192] [--causal] [--warmup 5] [--iters 20]
//                        -o attention.json
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

#define CHECK_CUDA(call)                                                                \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                \
                   cudaGetErrorString(e_));                                             \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
#define CHECK_CUBLAS(call)                                                              \
  do {                                                                                  \
    cublasStatus_t s_ = (call);                                                         \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call,  \
                   static_cast<int>(s_));                                               \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

// One block per score row: max, exp-sum, normalise, in place (BF16 storage, FP32 maths).
__global__ void softmax_rows(__nv_bfloat16* scores, int cols, bool causal, float scale) {
  const long row = blockIdx.x;
  __nv_bfloat16* p = scores + row * cols;
  const int query = static_cast<int>(row % cols);  // row index within its s×s matrix
  const int limit = causal ? query + 1 : cols;
  __shared__ float shared[32];
  float local_max = -FLT_MAX;
  for (int j = threadIdx.x; j < limit; j += blockDim.x)
    local_max = fmaxf(local_max, scale * __bfloat162float(p[j]));
  for (int o = 16; o > 0; o /= 2) local_max = fmaxf(local_max, __shfl_xor_sync(0xffffffffu, local_max, o));
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = local_max;
  __syncthreads();
  float row_max = -FLT_MAX;
  for (int w = 0; w < (blockDim.x + 31) / 32; ++w) row_max = fmaxf(row_max, shared[w]);
  __syncthreads();
  float local_sum = 0;
  for (int j = threadIdx.x; j < limit; j += blockDim.x)
    local_sum += __expf(scale * __bfloat162float(p[j]) - row_max);
  for (int o = 16; o > 0; o /= 2) local_sum += __shfl_xor_sync(0xffffffffu, local_sum, o);
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = local_sum;
  __syncthreads();
  float row_sum = 0;
  for (int w = 0; w < (blockDim.x + 31) / 32; ++w) row_sum += shared[w];
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float v = j < limit ? __expf(scale * __bfloat162float(p[j]) - row_max) / row_sum : 0.f;
    p[j] = __float2bfloat16(v);
  }
}

struct Options {
  long heads = 64, tp = 8, head_dim = 128, micro_batch = 1;
  std::vector<long> seqs = {1024, 2048, 4096, 8192};
  bool causal = false;
  int warmup = 5, iters = 20;
  std::string output = "attention_sweep.json";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--heads") o.heads = std::stol(next());
    else if (a == "--tp") o.tp = std::stol(next());
    else if (a == "--head-dim") o.head_dim = std::stol(next());
    else if (a == "--micro-batch") o.micro_batch = std::stol(next());
    else if (a == "--causal") o.causal = true;
    else if (a == "--warmup") o.warmup = std::stoi(next());
    else if (a == "--iters") o.iters = std::stoi(next());
    else if (a == "-o" || a == "--output") o.output = next();
    else if (a == "--seqs") {
      o.seqs.clear();
      std::stringstream ss(next());
      std::string s;
      while (std::getline(ss, s, ',')) o.seqs.push_back(std::stol(s));
    } else if (a == "-h" || a == "--help") {
      std::puts("usage: attention_sweep --heads A --tp T --head-dim D --micro-batch B\n"
                "                       [--seqs 1024,2048,...] [--causal] [--warmup N]\n"
                "                       [--iters N] -o FILE.json");
      std::exit(0);
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.heads % o.tp) {
    std::fprintf(stderr, "tp %ld must divide heads %ld\n", o.tp, o.heads);
    std::exit(2);
  }
  return o;
}

std::string driver_version_string() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  std::stringstream ss(line);
  std::string word, prev;
  while (ss >> word) {
    if (prev == "Module") return word;
    prev = word;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int device = 0, runtime = 0, driver = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  const long batch = o.micro_batch * (o.heads / o.tp);  // heads on one TP rank
  const float scale = 1.0f / std::sqrt(static_cast<float>(o.head_dim));
  std::ostringstream results;
  bool first = true;
  for (const long s : o.seqs) {
    const long d = o.head_dim;
    const size_t qkv_elems = static_cast<size_t>(batch) * s * d;
    const size_t score_elems = static_cast<size_t>(batch) * s * s;
    __nv_bfloat16 *q, *k, *v, *scores, *out;
    if (cudaMalloc(&scores, score_elems * 2) != cudaSuccess) {
      std::fprintf(stderr, "seq %ld: %zu MiB of scores do not fit; skipped\n", s,
                   score_elems * 2 >> 20);
      cudaGetLastError();
      continue;
    }
    CHECK_CUDA(cudaMalloc(&q, qkv_elems * 2));
    CHECK_CUDA(cudaMalloc(&k, qkv_elems * 2));
    CHECK_CUDA(cudaMalloc(&v, qkv_elems * 2));
    CHECK_CUDA(cudaMalloc(&out, qkv_elems * 2));
    CHECK_CUDA(cudaMemset(q, 0, qkv_elems * 2));
    CHECK_CUDA(cudaMemset(k, 0, qkv_elems * 2));
    CHECK_CUDA(cudaMemset(v, 0, qkv_elems * 2));
    const float one = 1.0f, zero = 0.0f;
    // Column-major views: Q, K, V are d×s per head; S (s×s) = Kᵀ·Q; O (d×s) = V·S.
    auto scores_gemm = [&]() {
      CHECK_CUBLAS(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, s, s, d, &one, k,
                                              CUDA_R_16BF, d, s * d, q, CUDA_R_16BF, d, s * d,
                                              &zero, scores, CUDA_R_16BF, s, s * s, batch,
                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    auto softmax = [&]() {
      softmax_rows<<<static_cast<unsigned>(batch * s), 256>>>(scores, static_cast<int>(s),
                                                               o.causal, scale);
    };
    auto weighted_sum = [&]() {
      CHECK_CUBLAS(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, d, s, s, &one, v,
                                              CUDA_R_16BF, d, s * d, scores, CUDA_R_16BF, s,
                                              s * s, &zero, out, CUDA_R_16BF, d, s * d, batch,
                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    auto time_us = [&](auto&& body) {
      for (int i = 0; i < o.warmup; ++i) body();
      cudaEvent_t start, stop;
      CHECK_CUDA(cudaEventCreate(&start));
      CHECK_CUDA(cudaEventCreate(&stop));
      CHECK_CUDA(cudaEventRecord(start));
      for (int i = 0; i < o.iters; ++i) body();
      CHECK_CUDA(cudaEventRecord(stop));
      CHECK_CUDA(cudaEventSynchronize(stop));
      CHECK_CUDA(cudaGetLastError());
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      return 1e3 * ms / o.iters;
    };
    const double t_scores = time_us(scores_gemm);
    const double t_softmax = time_us(softmax);
    const double t_sum = time_us(weighted_sum);
    const double total = t_scores + t_softmax + t_sum;
    const double flops = 4.0 * batch * s * s * d;
    std::printf("seq %6ld  batch·heads %4ld  QK^T %9.1f us  softmax %9.1f us  AV %9.1f us  "
                "%7.1f TFLOP/s\n",
                s, batch, t_scores, t_softmax, t_sum, flops / (total * 1e-6) / 1e12);
    results << (first ? "" : ",\n") << "    {\"name\": \"attention_fwd_s" << s
            << "\", \"kind\": \"attention\", \"impl\": \"cublas_batched_gemm+softmax\", "
            << "\"dtype\": \"bf16\", \"m\": " << s << ", \"n\": " << s << ", \"k\": " << d
            << ", \"batch\": " << batch << ", \"gemms\": 2, \"flops\": " << flops
            << ", \"causal\": " << (o.causal ? "true" : "false") << ", \"time_us\": " << total
            << ", \"notes\": \"QK^T " << t_scores << " us, softmax " << t_softmax << " us, AV "
            << t_sum << " us\"}";
    first = false;
    cudaFree(q);
    cudaFree(k);
    cudaFree(v);
    cudaFree(scores);
    cudaFree(out);
  }
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::ofstream out(o.output + ".tmp");
  out.precision(10);
  out << "{\n  \"format\": \"clustersim-attention-sweep/1\",\n  \"tool\": \"attention_sweep\",\n"
      << "  \"device\": {\"name\": \"" << prop.name << "\"},\n"
      << "  \"driver_version\": \"" << driver_version_string() << "\",\n"
      << "  \"cuda_driver_version\": \"" << driver / 1000 << "." << (driver % 1000) / 10 << "\",\n"
      << "  \"cuda_runtime_version\": \"" << runtime / 1000 << "." << (runtime % 1000) / 10
      << "\",\n  \"date\": \"" << date << "\",\n"
      << "  \"config\": {\"heads\": " << o.heads << ", \"tp\": " << o.tp
      << ", \"head_dim\": " << o.head_dim << ", \"micro_batch\": " << o.micro_batch
      << ", \"causal\": " << (o.causal ? "true" : "false") << ", \"warmup\": " << o.warmup
      << ", \"iters\": " << o.iters << "},\n  \"results\": [\n"
      << results.str() << "\n  ]\n}\n";
  out.close();
  if (std::rename((o.output + ".tmp").c_str(), o.output.c_str()) != 0) {
    std::perror(o.output.c_str());
    return 1;
  }
  std::printf("wrote %s\n", o.output.c_str());
  cublasDestroy(handle);
  return 0;
}
