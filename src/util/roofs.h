#pragma once
// The machine's roofs for a roofline (docs/roofline.md), measured on a set
// of cores with one thread pinned to each:
//   - sustained memory bandwidth: a STREAM triad, a[i] = b[i] + s * c[i],
//     over doubles whose three arrays together are at least four times the
//     last-level cache (and 256 MB), each thread on its own part, first
//     touched by that thread; 24 bytes per element (no write-allocate
//     counted, as STREAM counts), the best of 5 passes per run;
//   - peak floating-point rate per precision (float32, float64): a loop of
//     independent fused multiply-adds on the widest vectors the host runs
//     (AVX-512, else AVX2 with FMA, else SSE2 multiply and add: chosen at
//     run time, each compiled for its ISA), 2 operations per FMA lane.
// Each figure is taken `runs` times; the median is the roof, the spread is
// kept beside it.
#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace kgym::util {

struct RoofFigure {
  double median = 0;
  double min = 0;
  double max = 0;
  std::vector<double> runs;
};

struct Roofs {
  std::set<int> cores;
  std::string isa;  // "avx512f", "avx2+fma", "sse2", "scalar"
  std::size_t working_set_bytes = 0;
  std::size_t last_level_cache_bytes = 0;  // 0 where sysfs does not say
  RoofFigure bandwidth_gbs;                // GB/s, 1e9 bytes
  RoofFigure float32_gflops;               // 1e9 operations per second
  RoofFigure float64_gflops;
};

// Measures on `cores` (each must be allowed for this process); `runs` >= 1.
// Takes a few seconds; the calling thread's affinity is restored.
// `working_set_bytes` > 0 replaces the rule above (tests of the mechanics:
// a figure so measured is no roof).
Roofs measure_roofs(const std::set<int>& cores, int runs = 5, std::size_t working_set_bytes = 0);

// The last-level cache of cpu `core` in bytes (sysfs), or 0.
std::size_t last_level_cache_bytes(int core);

}  // namespace kgym::util
