// gemm_sweep: times the GEMMs one Transformer layer produces (Megatron-style tensor
// parallelism), with cuBLASLt in BF16 and FP8, and writes them as clustersim-gemm-sweep/1 JSON
// for `clustersim calibrate --gemm`.
//
// Shapes for hidden h, FFN f, heads a, KV heads g, head dim d = h/a, vocab V, sequence s,
// micro-batch b, tensor-parallel degree t, tokens T = b·s (Megatron-LM column/row parallel
// linear layers, Shoeybi et al. 2019 §3; SwiGLU fuses gate and up into one 2f/t-wide GEMM):
//   forward   Y[m,n] = X[m,k] · W[k,n]
//     qkv        m=T  n=(a+2g)·d/t  k=h
//     attn_out   m=T  n=h           k=h/t
//     mlp_up     m=T  n=f/t (×2 gated) k=h
//     mlp_down   m=T  n=h           k=f/t
//     lm_head    m=T  n=V/t         k=h
//   backward, for each forward GEMM (m, n, k):
//     *_dgrad    m=T  n=k  k=n      (dX = dY · Wᵀ)
//     *_wgrad    m=k  n=n  k=T      (dW = Xᵀ · dY)
// plus, with --square, m=n=k in powers of two (the usual efficiency-surface sweep).
//
// Inputs are filled with normally distributed values (mean 0, standard deviation 1, a fixed
// seed) unless --fill zeros: tensor cores draw less power on zeros and an H100/H200 then holds
// higher clocks, so a zero-filled sweep overstates what training data gets (8192^3 BF16 on an
// H200: 789.9 TFLOP/s on zeros, 699.6 on random data, validation/data/h200-2026-12-04/; He,
// "Strangely, Matrix Multiplications on GPUs Run Faster When Given Predictable Data!", 2024).
//
// Every GEMM runs in cuBLASLt's "TN" layout (A transposed), the layout FP8 requires on Hopper
// (cuBLAS docs, cublasLtMatmul FP8 restrictions); BF16 uses the same layout so that the two
// dtypes are compared like for like. FP8 inputs are E4M3 with BF16 output, FP32 accumulation.
//
// Usage: gemm_sweep --hidden 8192 --ffn 28672 --heads 64 --kv-heads 8 --vocab 128256
//                   --seq 4096 --micro-batch 1 --tp 8 [--gated] [--dtypes bf16,fp8]
//                   [--square] [--fill random|zeros] [--warmup 10] [--iters 50]
//                   [--list-shapes] -o gemm.json
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
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
#define CHECK_LT(call)                                                                  \
  do {                                                                                  \
    cublasStatus_t s_ = (call);                                                         \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call,  \
                   static_cast<int>(s_));                                               \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

struct Options {
  long hidden = 8192, ffn = 0, heads = 64, kv_heads = 0, vocab = 128256, seq = 4096;
  long micro_batch = 1, tp = 8;
  bool gated = false, square = false, list_only = false, zeros = false;
  std::vector<std::string> dtypes = {"bf16", "fp8"};
  int warmup = 10, iters = 50;
  std::string output = "gemm_sweep.json";
};

struct Shape {
  std::string name;
  long m, n, k;
};

void usage() {
  std::puts(
      "usage: gemm_sweep --hidden H --ffn F --heads A [--kv-heads G] --vocab V --seq S\n"
      "                  --micro-batch B --tp T [--gated] [--dtypes bf16,fp8] [--square]\n"
      "                  [--fill random|zeros] [--warmup N] [--iters N] [--list-shapes]\n"
      "                  -o FILE.json");
}

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
    if (a == "--hidden") o.hidden = std::stol(next());
    else if (a == "--ffn") o.ffn = std::stol(next());
    else if (a == "--heads") o.heads = std::stol(next());
    else if (a == "--kv-heads") o.kv_heads = std::stol(next());
    else if (a == "--vocab") o.vocab = std::stol(next());
    else if (a == "--seq") o.seq = std::stol(next());
    else if (a == "--micro-batch") o.micro_batch = std::stol(next());
    else if (a == "--tp") o.tp = std::stol(next());
    else if (a == "--gated") o.gated = true;
    else if (a == "--square") o.square = true;
    else if (a == "--list-shapes") o.list_only = true;
    else if (a == "--fill") {
      const std::string f = next();
      if (f != "random" && f != "zeros") {
        std::fprintf(stderr, "--fill: %s is not random or zeros\n", f.c_str());
        std::exit(2);
      }
      o.zeros = f == "zeros";
    }
    else if (a == "--warmup") o.warmup = std::stoi(next());
    else if (a == "--iters") o.iters = std::stoi(next());
    else if (a == "-o" || a == "--output") o.output = next();
    else if (a == "--dtypes") {
      o.dtypes.clear();
      std::stringstream ss(next());
      std::string d;
      while (std::getline(ss, d, ',')) o.dtypes.push_back(d);
    } else if (a == "-h" || a == "--help") {
      usage();
      std::exit(0);
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      usage();
      std::exit(2);
    }
  }
  if (o.ffn == 0) o.ffn = 4 * o.hidden;
  if (o.kv_heads == 0) o.kv_heads = o.heads;
  for (const auto& d : o.dtypes)
    if (d != "bf16" && d != "fp8") {
      std::fprintf(stderr, "--dtypes: %s is not bf16 or fp8\n", d.c_str());
      std::exit(2);
    }
  if (o.hidden % o.heads || o.heads % o.tp || o.ffn % o.tp ||
      o.vocab % o.tp) {
    std::fprintf(stderr, "tp %ld must divide heads, ffn and vocab; heads must divide hidden\n",
                 o.tp);
    std::exit(2);
  }
  return o;
}

std::vector<Shape> layer_shapes(const Options& o) {
  const long tokens = o.micro_batch * o.seq;
  const long d = o.hidden / o.heads;
  const long kv = std::max(1L, o.kv_heads / o.tp);  // KV heads are replicated below tp
  const std::vector<Shape> forward = {
      {"qkv", tokens, (o.heads / o.tp + 2 * kv) * d, o.hidden},
      {"attn_out", tokens, o.hidden, o.hidden / o.tp},
      {"mlp_up", tokens, (o.gated ? 2 : 1) * o.ffn / o.tp, o.hidden},
      {"mlp_down", tokens, o.hidden, o.ffn / o.tp},
      {"lm_head", tokens, o.vocab / o.tp, o.hidden},
  };
  std::vector<Shape> all;
  for (const auto& f : forward) {
    all.push_back({f.name + "_fwd", f.m, f.n, f.k});
    all.push_back({f.name + "_dgrad", tokens, f.k, f.n});
    all.push_back({f.name + "_wgrad", f.k, f.n, tokens});
  }
  if (o.square)
    for (long s = 256; s <= 16384; s *= 2) all.push_back({"square_" + std::to_string(s), s, s, s});
  return all;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

std::string driver_version_string() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..."
  std::stringstream ss(line);
  std::string word, prev;
  while (ss >> word) {
    if (prev == "Module") return word;
    prev = word;
  }
  return "";
}

std::string iso_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// Standard normal values from a counter-based hash (SplitMix64 and Box-Muller), so a sweep's
// inputs are the same on every run.
__device__ float normal_at(unsigned long long i) {
  auto mix = [](unsigned long long z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  const float u1 = (static_cast<float>(mix(2 * i) >> 40) + 1.0f) / 16777217.0f;
  const float u2 = static_cast<float>(mix(2 * i + 1) >> 40) / 16777216.0f;
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

template <typename T>
__global__ void fill_normal(T* out, size_t count, unsigned long long seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = T(normal_at(seed + i));
}

void fill(void* p, size_t count, bool fp8, bool zeros, unsigned long long seed) {
  if (zeros) {
    CHECK_CUDA(cudaMemset(p, 0, count * (fp8 ? 1 : 2)));
    return;
  }
  if (fp8)
    fill_normal<<<1024, 256>>>(static_cast<__nv_fp8_e4m3*>(p), count, seed);
  else
    fill_normal<<<1024, 256>>>(static_cast<__nv_bfloat16*>(p), count, seed);
  CHECK_CUDA(cudaGetLastError());
}

// Times one GEMM; returns microseconds per call, or a negative value if cuBLASLt has no
// algorithm for it.
double time_gemm(cublasLtHandle_t lt, const Shape& s, bool fp8, bool zeros, void* workspace,
                 size_t workspace_bytes, int warmup, int iters) {
  const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  const size_t in_bytes = fp8 ? 1 : 2;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_CUDA(cudaMalloc(&a, static_cast<size_t>(s.m) * s.k * in_bytes));
  CHECK_CUDA(cudaMalloc(&b, static_cast<size_t>(s.k) * s.n * in_bytes));
  CHECK_CUDA(cudaMalloc(&c, static_cast<size_t>(s.m) * s.n * 2));
  fill(a, static_cast<size_t>(s.m) * s.k, fp8, zeros, 1);
  fill(b, static_cast<size_t>(s.k) * s.n, fp8, zeros, 1ull << 40);

  cublasLtMatmulDesc_t op;
  CHECK_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  // Column-major: C (m×n) = Aᵀ (A stored k×m) · B (stored k×n).
  cublasLtMatrixLayout_t la, lb, lc;
  CHECK_LT(cublasLtMatrixLayoutCreate(&la, in_type, s.k, s.m, s.k));
  CHECK_LT(cublasLtMatrixLayoutCreate(&lb, in_type, s.k, s.n, s.k));
  CHECK_LT(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, s.m, s.n, s.m));
  cublasLtMatmulPreference_t pref;
  CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
  CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &workspace_bytes, sizeof workspace_bytes));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heuristic, &found);
  double us = -1;
  if (hs == CUBLAS_STATUS_SUCCESS && found > 0) {
    const float alpha = 1.0f, beta = 0.0f;
    auto run = [&]() {
      CHECK_LT(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, c, lc, c, lc, &heuristic.algo,
                              workspace, workspace_bytes, 0));
    };
    for (int i = 0; i < warmup; ++i) run();
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    CHECK_CUDA(cudaEventRecord(start));
    for (int i = 0; i < iters; ++i) run();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    us = 1e3 * ms / iters;
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const auto shapes = layer_shapes(o);
  if (o.list_only) {
    for (const auto& s : shapes) std::printf("%-16s m=%ld n=%ld k=%ld\n", s.name.c_str(), s.m, s.n, s.k);
    return 0;
  }
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  int runtime = 0, driver = 0;
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  cublasLtHandle_t lt;
  CHECK_LT(cublasLtCreate(&lt));
  const size_t workspace_bytes = 32u << 20;  // cuBLAS recommends >= 32 MiB on Hopper
  void* workspace = nullptr;
  CHECK_CUDA(cudaMalloc(&workspace, workspace_bytes));

  std::ostringstream results;
  bool first = true;
  for (const auto& dtype : o.dtypes) {
    const bool fp8 = dtype == "fp8";
    if (fp8 && prop.major * 10 + prop.minor < 89) {
      std::fprintf(stderr, "skipping fp8: %s (sm_%d%d) has no FP8 tensor cores\n", prop.name,
                   prop.major, prop.minor);
      continue;
    }
    for (const auto& s : shapes) {
      const double us = time_gemm(lt, s, fp8, o.zeros, workspace, workspace_bytes, o.warmup, o.iters);
      if (us <= 0) {
        std::fprintf(stderr, "no cuBLASLt algorithm for %s %s (m=%ld n=%ld k=%ld)\n",
                     dtype.c_str(), s.name.c_str(), s.m, s.n, s.k);
        continue;
      }
      const double tflops = 2.0 * s.m * s.n * s.k / (us * 1e-6) / 1e12;
      std::printf("%-5s %-16s m=%6ld n=%6ld k=%6ld  %10.2f us  %7.1f TFLOP/s\n", dtype.c_str(),
                  s.name.c_str(), s.m, s.n, s.k, us, tflops);
      results << (first ? "" : ",\n") << "    {\"name\": \"" << s.name
              << "\", \"kind\": \"gemm\", \"dtype\": \"" << dtype << "\", \"m\": " << s.m
              << ", \"n\": " << s.n << ", \"k\": " << s.k << ", \"time_us\": " << us << "}";
      first = false;
    }
  }
  std::ofstream out(o.output + ".tmp");
  out.precision(10);
  out << "{\n  \"format\": \"clustersim-gemm-sweep/1\",\n  \"tool\": \"gemm_sweep\",\n"
      << "  \"device\": {\"name\": \"" << json_escape(prop.name) << "\"},\n"
      << "  \"driver_version\": \"" << json_escape(driver_version_string()) << "\",\n"
      << "  \"cuda_driver_version\": \"" << driver / 1000 << "." << (driver % 1000) / 10 << "\",\n"
      << "  \"cuda_runtime_version\": \"" << runtime / 1000 << "." << (runtime % 1000) / 10
      << "\",\n  \"cublas_version\": \"" << cublasLtGetVersion() << "\",\n"
      << "  \"date\": \"" << iso_now() << "\",\n"
      << "  \"config\": {\"hidden\": " << o.hidden << ", \"ffn\": " << o.ffn
      << ", \"heads\": " << o.heads << ", \"kv_heads\": " << o.kv_heads
      << ", \"vocab\": " << o.vocab << ", \"seq\": " << o.seq
      << ", \"micro_batch\": " << o.micro_batch << ", \"tp\": " << o.tp
      << ", \"gated\": " << (o.gated ? "true" : "false")
      << ", \"fill\": \"" << (o.zeros ? "zeros" : "random") << "\", \"warmup\": " << o.warmup
      << ", \"iters\": " << o.iters << "},\n  \"results\": [\n"
      << results.str() << "\n  ]\n}\n";
  out.close();
  if (std::rename((o.output + ".tmp").c_str(), o.output.c_str()) != 0) {
    std::perror(o.output.c_str());
    return 1;
  }
  std::printf("wrote %s\n", o.output.c_str());
  cudaFree(workspace);
  cublasLtDestroy(lt);
  return 0;
}
