#pragma once
// The machine's roofs for a roofline (docs/roofline.md), measured on a set
// of cores with one thread pinned to each:
//   - sustained memory bandwidth: a STREAM triad, a[i] = b[i] + s * c[i],
//     over doubles whose three arrays together are at least four times the
//     last-level cache (and 256 MB), each thread on its own part, first
//     touched by that thread; 24 bytes per element (no write-allocate
//     counted, as STREAM counts), the best of 5 passes per run;
//   - each cache level's bandwidth: the same triad over half the level's
//     capacity on these cores, repeated (a call whose bytes fit a level
//     finds them there: kgym copies a timed call's inputs just before it);
//   - peak floating-point rate per precision (float32, float64): a loop of
//     independent fused multiply-adds on the widest vectors the host runs
//     (AVX-512, else AVX2 with FMA, else SSE2 multiply and add: chosen at
//     run time, each compiled for its ISA), 2 operations per FMA lane; and
//     as a second figure a BLAS GEMM (cblas_sgemm / cblas_dgemm of the
//     system's BLAS, loaded at run time).
// Each figure is taken `runs` times, all kept: the best run is the roof
// (verify/roofline.h: an upper bound, on a host whose other tenants may slow
// any run), the median and the lowest beside it.
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kgym::util {

struct RoofFigure {
  double median = 0;
  double min = 0;
  double max = 0;
  std::vector<double> runs;
};

// A cache level's bandwidth: the same triad over half the level's capacity
// on the measured cores (the sum of its instances they use).
struct CacheRoof {
  int level = 0;
  std::size_t capacity_bytes = 0;
  RoofFigure bandwidth_gbs;
};

struct Roofs {
  std::set<int> cores;
  std::string isa;  // "avx512f", "avx2+fma", "sse2", "scalar"
  std::size_t working_set_bytes = 0;
  std::size_t last_level_cache_bytes = 0;  // 0 where sysfs does not say
  RoofFigure bandwidth_gbs;                // GB/s, 1e9 bytes: main memory
  std::vector<CacheRoof> caches;           // from the first level up
  RoofFigure float32_gflops;               // 1e9 operations per second
  RoofFigure float64_gflops;
  // The second figure of the peak: a BLAS GEMM (n = kGemmSize, square,
  // one thread per core) of the system's BLAS; nullopt where none loads.
  std::string blas;  // the library: "libopenblas.so.0"
  std::optional<RoofFigure> gemm_float32_gflops;
  std::optional<RoofFigure> gemm_float64_gflops;
  // Share (0..1) of the cores' time that other processes took while these
  // were measured (/proc/stat less this process); nullopt where unreadable.
  // Roofs measured beside other work are low: a cache keeps none above
  // kContendedRoofsShare.
  std::optional<double> foreign_cpu_share;
};

inline constexpr double kContendedRoofsShare = 0.05;
inline constexpr int kGemmSize = 1536;

// Measures on `cores` (each must be allowed for this process); `runs` >= 1.
// Takes a few seconds; the calling thread's affinity is restored.
// `working_set_bytes` > 0 replaces the rule above (tests of the mechanics:
// a figure so measured is no roof).
Roofs measure_roofs(const std::set<int>& cores, int runs = 5, std::size_t working_set_bytes = 0);

// Each data (or unified) cache level the cores use, with the capacity of
// its instances among them (sysfs): {level, bytes}, from level 1 up.
std::vector<std::pair<int, std::size_t>> data_cache_capacities(const std::set<int>& cores);

// The last-level cache of cpu `core` in bytes (sysfs), or 0.
std::size_t last_level_cache_bytes(int core);

}  // namespace kgym::util
