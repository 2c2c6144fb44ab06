#include "util/roofs.h"

#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "util/cpu_stat.h"

namespace kgym::util {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void pin_to(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  (void)sched_setaffinity(0, sizeof(set), &set);
}

RoofFigure figure_of(std::vector<double> runs) {
  RoofFigure f;
  f.runs = runs;
  std::sort(runs.begin(), runs.end());
  f.min = runs.front();
  f.max = runs.back();
  std::size_t n = runs.size();
  f.median = n % 2 == 1 ? runs[n / 2] : (runs[n / 2 - 1] + runs[n / 2]) / 2;
  return f;
}

// Runs `work(thread index)` on one thread per core, all started together;
// returns the wall time from the first thread's start to the last one's
// end, each read by the thread itself (the unpinned caller may get no core
// until the workers are done).
template <typename Work>
double on_every_core(const std::vector<int>& cores, Work work) {
  std::barrier start(static_cast<std::ptrdiff_t>(cores.size()));
  std::vector<Clock::time_point> began(cores.size()), ended(cores.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < cores.size(); ++t) {
    threads.emplace_back([&, t] {
      pin_to(cores[t]);
      start.arrive_and_wait();
      began[t] = Clock::now();
      work(t);
      ended[t] = Clock::now();
    });
  }
  for (std::thread& th : threads) th.join();
  return std::chrono::duration<double>(*std::max_element(ended.begin(), ended.end()) -
                                       *std::min_element(began.begin(), began.end()))
      .count();
}

// The FMA loops: `iterations` times 10 independent vector FMAs; each
// returns a value that depends on every accumulator, so none is elided.
constexpr int kAccumulators = 10;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) double fma_f32_avx512(long iterations) {
  __m512 acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_set1_ps(1.0f + 0.001f * static_cast<float>(k));
  const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_fmadd_ps(acc[k], mul, add);
  }
  __m512 sum = acc[0];
  for (int k = 1; k < kAccumulators; ++k) sum = _mm512_add_ps(sum, acc[k]);
  return _mm512_reduce_add_ps(sum);
}
__attribute__((target("avx512f"))) double fma_f64_avx512(long iterations) {
  __m512d acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_set1_pd(1.0 + 0.001 * k);
  const __m512d mul = _mm512_set1_pd(0.999999999), add = _mm512_set1_pd(1e-12);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_fmadd_pd(acc[k], mul, add);
  }
  __m512d sum = acc[0];
  for (int k = 1; k < kAccumulators; ++k) sum = _mm512_add_pd(sum, acc[k]);
  return _mm512_reduce_add_pd(sum);
}
__attribute__((target("avx2,fma"))) double fma_f32_avx2(long iterations) {
  __m256 acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_set1_ps(1.0f + 0.001f * static_cast<float>(k));
  const __m256 mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_fmadd_ps(acc[k], mul, add);
  }
  alignas(32) float out[8];
  __m256 sum = acc[0];
  for (int k = 1; k < kAccumulators; ++k) sum = _mm256_add_ps(sum, acc[k]);
  _mm256_store_ps(out, sum);
  double total = 0;
  for (float x : out) total += x;
  return total;
}
__attribute__((target("avx2,fma"))) double fma_f64_avx2(long iterations) {
  __m256d acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_set1_pd(1.0 + 0.001 * k);
  const __m256d mul = _mm256_set1_pd(0.999999999), add = _mm256_set1_pd(1e-12);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_fmadd_pd(acc[k], mul, add);
  }
  alignas(32) double out[4];
  __m256d sum = acc[0];
  for (int k = 1; k < kAccumulators; ++k) sum = _mm256_add_pd(sum, acc[k]);
  _mm256_store_pd(out, sum);
  return out[0] + out[1] + out[2] + out[3];
}
// SSE2 has no FMA: a multiply and an add, 2 operations per lane all the same.
double fma_f32_sse2(long iterations) {
  __m128 acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm_set1_ps(1.0f + 0.001f * static_cast<float>(k));
  const __m128 mul = _mm_set1_ps(0.999999f), add = _mm_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm_add_ps(_mm_mul_ps(acc[k], mul), add);
  }
  alignas(16) float out[4];
  __m128 sum = acc[0];
  for (int k = 1; k < kAccumulators; ++k) sum = _mm_add_ps(sum, acc[k]);
  _mm_store_ps(out, sum);
  return out[0] + out[1] + out[2] + out[3];
}
double fma_f64_sse2(long iterations) {
  __m128d acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm_set1_pd(1.0 + 0.001 * k);
  const __m128d mul = _mm_set1_pd(0.999999999), add = _mm_set1_pd(1e-12);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm_add_pd(_mm_mul_pd(acc[k], mul), add);
  }
  alignas(16) double out[2];
  __m128d sum = acc[0];
  for (int k = 1; k < kAccumulators; ++k) sum = _mm_add_pd(sum, acc[k]);
  _mm_store_pd(out, sum);
  return out[0] + out[1];
}
#endif

template <typename T>
double fma_scalar(long iterations) {
  T acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = T(1) + T(0.001) * T(k);
  const T mul = T(0.999999), add = T(1e-7);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kAccumulators; ++k) acc[k] = acc[k] * mul + add;
  }
  double total = 0;
  for (T x : acc) total += static_cast<double>(x);
  return total;
}

struct FmaKernel {
  std::string isa;
  double (*f32)(long);
  double (*f64)(long);
  int f32_lanes, f64_lanes;
};

FmaKernel fma_kernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512f", fma_f32_avx512, fma_f64_avx512, 16, 8};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {"avx2+fma", fma_f32_avx2, fma_f64_avx2, 8, 4};
  return {"sse2", fma_f32_sse2, fma_f64_sse2, 4, 2};
#else
  return {"scalar", fma_scalar<float>, fma_scalar<double>, 1, 1};
#endif
}

std::atomic<double> sink{0};

// GFLOP/s of `kernel` on every core: the best of 5 runs of about 40 ms
// each. A run that lost its core to another process for a moment reads low,
// never high, so the fastest run is the core's peak; one run alone could be
// read during such a moment (a loaded machine gave 0.04 GFLOP/s for a core
// that runs tens).
double peak_gflops(const std::vector<int>& cores, double (*kernel)(long), int lanes) {
  long iterations = 1 << 16;
  for (;;) {  // calibrated on one core, to at least 10 ms a call
    auto t0 = Clock::now();
    sink = sink + kernel(iterations);
    if (seconds_since(t0) > 0.01 || iterations > (1L << 40)) break;
    iterations *= 2;
  }
  iterations *= 4;
  double wall = std::numeric_limits<double>::infinity();
  for (int run = 0; run < 5; ++run)
    wall = std::min(wall, on_every_core(cores, [&](std::size_t) { sink = sink + kernel(iterations); }));
  double operations =
      2.0 * lanes * kAccumulators * static_cast<double>(iterations) * static_cast<double>(cores.size());
  return operations / wall / 1e9;
}

// The triad's loop on the widest vectors the host runs, as a kernel the
// roof is compared with would be: one copy compiled per ISA, chosen at run
// time (as the FMA loops are).
using TriadLoop = void (*)(double*, const double*, const double*, double, std::size_t);
// The loop once, inlined into each ISA's copy and vectorized there: in
// blocks of a fixed 16 elements, which GCC's -O2 cost model vectorizes (a
// loop of unknown length it leaves scalar, and the cache levels' roofs
// then read a third to half of what a vectorized kernel reaches).
__attribute__((always_inline)) inline void triad_body(double* __restrict x, const double* __restrict y,
                                                      const double* __restrict z, double s, std::size_t n) {
  constexpr std::size_t kBlock = 16;
  std::size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (std::size_t k = 0; k < kBlock; ++k) x[i + k] = y[i + k] + s * z[i + k];
  }
  for (; i < n; ++i) x[i] = y[i] + s * z[i];
}
#if defined(__x86_64__)
__attribute__((target("avx512f"))) void triad_avx512(double* __restrict x, const double* __restrict y,
                                                     const double* __restrict z, double s, std::size_t n) {
  triad_body(x, y, z, s, n);
}
__attribute__((target("avx2"))) void triad_avx2(double* __restrict x, const double* __restrict y,
                                                const double* __restrict z, double s, std::size_t n) {
  triad_body(x, y, z, s, n);
}
#endif
void triad_baseline(double* __restrict x, const double* __restrict y, const double* __restrict z, double s,
                    std::size_t n) {
  triad_body(x, y, z, s, n);
}

TriadLoop triad_loop() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return triad_avx512;
  if (__builtin_cpu_supports("avx2")) return triad_avx2;
#endif
  return triad_baseline;
}

// GB/s of the triad: each thread on its own part of three arrays it
// touched first, the best of `passes`.
double triad_gbs(const std::vector<int>& cores, std::size_t elements_per_thread, int passes,
                 int repeats = 1) {
  std::size_t n = elements_per_thread;
  std::vector<std::unique_ptr<double[]>> a(cores.size()), b(cores.size()), c(cores.size());
  on_every_core(cores, [&](std::size_t t) {
    a[t].reset(new double[n]);
    b[t].reset(new double[n]);
    c[t].reset(new double[n]);
    for (std::size_t i = 0; i < n; ++i) {
      a[t][i] = 0;
      b[t][i] = 1.0;
      c[t][i] = 2.0;
    }
  });
  double best = 0;
  const TriadLoop triad = triad_loop();
  for (int pass = 0; pass < passes; ++pass) {
    const double s = 3.0 + pass;
    double wall = on_every_core(cores, [&](std::size_t t) {
      double* __restrict x = a[t].get();
      const double* __restrict y = b[t].get();
      const double* __restrict z = c[t].get();
      for (int r = 0; r < repeats; ++r) {
        triad(x, y, z, s + r, n);
        // Every repetition's stores stay: none may be folded into the last.
        asm volatile("" : : "r"(x) : "memory");
      }
    });
    double bytes = 24.0 * static_cast<double>(n) * static_cast<double>(cores.size()) * repeats;
    best = std::max(best, bytes / wall / 1e9);
  }
  double check = 0;
  for (std::size_t t = 0; t < cores.size(); ++t) check += a[t][n / 2];
  sink = sink + check;
  return best;
}

std::size_t size_from_sysfs(const std::string& text) {
  std::size_t value = 0;
  std::size_t used = 0;
  try {
    value = std::stoull(text, &used);
  } catch (...) {
    return 0;
  }
  char unit = used < text.size() ? text[used] : ' ';
  if (unit == 'K') value <<= 10;
  if (unit == 'M') value <<= 20;
  if (unit == 'G') value <<= 30;
  return value;
}

// A BLAS GEMM's rate (the second figure of the peak): cblas_sgemm /
// cblas_dgemm of the system's BLAS (OpenBLAS, else the reference BLAS
// alternative), loaded at run time so kgym links none, on `cores` with one
// thread each. 0 where no BLAS loads.
struct Blas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);
  using Dgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);
  void* handle = nullptr;
  Sgemm sgemm = nullptr;
  Dgemm dgemm = nullptr;
  std::string name;

  Blas() {
    for (const char* lib : {"libopenblas.so.0", "libblas.so.3"}) {
      handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
      if (!handle) continue;
      sgemm = reinterpret_cast<Sgemm>(dlsym(handle, "cblas_sgemm"));
      dgemm = reinterpret_cast<Dgemm>(dlsym(handle, "cblas_dgemm"));
      if (sgemm && dgemm) {
        name = lib;
        if (auto set = reinterpret_cast<void (*)(int)>(dlsym(handle, "openblas_set_num_threads")))
          threads = set;
        return;
      }
      dlclose(handle);
      handle = nullptr;
    }
  }
  // Never unloaded: the BLAS's OpenMP threads outlive its calls.
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  void (*threads)(int) = nullptr;
};

constexpr int kRowMajor = 101, kNoTrans = 111;

template <typename T, typename Gemm>
double gemm_gflops(Gemm gemm, int n) {
  std::vector<T> a(static_cast<std::size_t>(n) * n, T(1.0001)), b(a.size(), T(0.9999)), c(a.size(), T(0));
  gemm(kRowMajor, kNoTrans, kNoTrans, n, n, n, T(1), a.data(), n, b.data(), n, T(0), c.data(), n);  // warm
  auto t0 = Clock::now();
  gemm(kRowMajor, kNoTrans, kNoTrans, n, n, n, T(1), a.data(), n, b.data(), n, T(0), c.data(), n);
  double s = seconds_since(t0);
  sink = sink + static_cast<double>(c[c.size() / 2]);
  return 2.0 * n * static_cast<double>(n) * n / s / 1e9;
}

}  // namespace

std::vector<std::pair<int, std::size_t>> data_cache_capacities(const std::set<int>& cores) {
  // level -> (the cores that share one instance -> its size)
  std::map<int, std::map<std::string, std::size_t>> instances;
  for (int core : cores) {
    for (int index = 0; index < 8; ++index) {
      std::string dir =
          "/sys/devices/system/cpu/cpu" + std::to_string(core) + "/cache/index" + std::to_string(index);
      std::ifstream level_in(dir + "/level"), type_in(dir + "/type"), size_in(dir + "/size"),
          shared_in(dir + "/shared_cpu_list");
      int level = 0;
      std::string type, size, shared;
      if (!(level_in >> level) || !(type_in >> type) || !(size_in >> size)) continue;
      if (type == "Instruction") continue;
      if (!(shared_in >> shared)) shared = std::to_string(core);
      instances[level][shared] = size_from_sysfs(size);
    }
  }
  std::vector<std::pair<int, std::size_t>> out;
  for (const auto& [level, by_sharing] : instances) {
    std::size_t total = 0;
    for (const auto& [sharing, bytes] : by_sharing) total += bytes;
    if (total > 0) out.emplace_back(level, total);
  }
  return out;
}

std::size_t last_level_cache_bytes(int core) {
  std::size_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(core) + "/cache/index" +
                     std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    largest = std::max(largest, size_from_sysfs(text));
  }
  return largest;
}

Roofs measure_roofs(const std::set<int>& cores, int runs, std::size_t working_set_bytes) {
  Roofs roofs;
  roofs.cores = cores;
  std::vector<int> list(cores.begin(), cores.end());
  if (list.empty()) return roofs;
  runs = std::max(runs, 1);
  cpu_set_t saved;
  CPU_ZERO(&saved);
  bool restore = sched_getaffinity(0, sizeof(saved), &saved) == 0;

  roofs.last_level_cache_bytes = last_level_cache_bytes(list.front());
  std::size_t working_set = working_set_bytes > 0 ? working_set_bytes
                                                 : std::max<std::size_t>(4 * roofs.last_level_cache_bytes,
                                                                         std::size_t{256} << 20);
  std::size_t per_thread = working_set / 24 / list.size();
  roofs.working_set_bytes = per_thread * 24 * list.size();
  FmaKernel kernel = fma_kernel();
  roofs.isa = kernel.isa;

  std::vector<double> bandwidth, f32, f64, gemm32, gemm64;
  Blas blas;
  if (blas.handle) {
    roofs.blas = blas.name;
    // The BLAS's threads inherit this thread's affinity: every measured core.
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int core : list) CPU_SET(core, &set);
    (void)sched_setaffinity(0, sizeof(set), &set);
    if (blas.threads) blas.threads(static_cast<int>(list.size()));
  }
  // Each cache level's triad runs over half the level's capacity on these
  // cores, repeated to about 64 MB of traffic per pass.
  std::vector<std::pair<int, std::size_t>> levels = data_cache_capacities(cores);
  std::vector<std::vector<double>> level_runs(levels.size());
  const std::optional<CpuStat> stat_before = read_cpu_stat();
  const double own_before = own_cpu_seconds();
  for (int run = 0; run < runs; ++run) {
    bandwidth.push_back(triad_gbs(list, per_thread, 5));
    for (std::size_t l = 0; l < levels.size(); ++l) {
      std::size_t level_per_thread = std::max<std::size_t>(levels[l].second / 2 / 24 / list.size(), 64);
      int repeats =
          static_cast<int>(std::max<std::size_t>(1, (std::size_t{64} << 20) / (level_per_thread * 24)));
      level_runs[l].push_back(triad_gbs(list, level_per_thread, 5, repeats));
    }
    f32.push_back(peak_gflops(list, kernel.f32, kernel.f32_lanes));
    f64.push_back(peak_gflops(list, kernel.f64, kernel.f64_lanes));
    if (blas.handle) {
      gemm32.push_back(gemm_gflops<float>(blas.sgemm, kGemmSize));
      gemm64.push_back(gemm_gflops<double>(blas.dgemm, kGemmSize));
    }
  }
  roofs.bandwidth_gbs = figure_of(bandwidth);
  roofs.float32_gflops = figure_of(f32);
  roofs.float64_gflops = figure_of(f64);
  if (!gemm32.empty()) {
    roofs.gemm_float32_gflops = figure_of(gemm32);
    roofs.gemm_float64_gflops = figure_of(gemm64);
  }
  for (std::size_t l = 0; l < levels.size(); ++l)
    roofs.caches.push_back({levels[l].first, levels[l].second, figure_of(level_runs[l])});
  const double own = own_cpu_seconds() - own_before;
  if (const std::optional<CpuStat> stat_after = read_cpu_stat(); stat_before && stat_after) {
    CoreUsage used = usage_between(*stat_before, *stat_after, list, cpu_ticks_per_second());
    if (used.total_s > 0) roofs.foreign_cpu_share = std::clamp((used.busy_s - own) / used.total_s, 0.0, 1.0);
  }
  if (restore) (void)sched_setaffinity(0, sizeof(saved), &saved);
  return roofs;
}

}  // namespace kgym::util
