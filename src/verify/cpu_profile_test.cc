#include "verify/cpu_profile.h"

#include <gtest/gtest.h>

namespace kgym::verify {
namespace {

constexpr const char* kTorch = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0";
constexpr const char* kBlas = "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblasp-r0.3.21.so";
constexpr const char* kPython = "/usr/bin/python3.11";
constexpr const char* kOwn = "/tmp/kgym/prebuilt/ext/kgym_ext.so";

TEST(PerfOutput, ObjectsCountedFromScriptLinesOnly) {
  auto samples = parse_perf_dsos(
      " ffffffff8224837e ([kernel.kallsyms])\n"
      "     7f8e588db138 (/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblasp-r0.3.21.so)\n"
      "     7f8e588da914 (/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblasp-r0.3.21.so)\n"
      "     7f00000000aa ([unknown])\n"
      "Warning: some message (with parentheses)\n"
      "\n");
  EXPECT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[kBlas], 2);
  EXPECT_EQ(samples["[kernel.kallsyms]"], 1);
  EXPECT_EQ(samples["[unknown]"], 1);
}

TEST(PerfOutput, BuildIdsByPath) {
  auto ids = parse_perf_build_ids(
      "32a7f3bacee6bf69da94f497a8a076483baea20e [kernel.kallsyms]\n"
      "8c759e09a29460666e73b78a56457476a1d8e3db /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblasp-r0.3.21.so\n"
      "not-hex /x\n");
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[kBlas], "8c759e09a29460666e73b78a56457476a1d8e3db");
}

TEST(LibraryFiles, ComputeLibrariesButNotGlueOrRuntime) {
  EXPECT_TRUE(library_file_name(kTorch));
  EXPECT_TRUE(library_file_name(kBlas));
  EXPECT_TRUE(library_file_name("/opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"));
  EXPECT_TRUE(library_file_name("/usr/lib/x86_64-linux-gnu/libmkl_core.so.2"));
  EXPECT_FALSE(library_file_name("/usr/lib/x86_64-linux-gnu/libc10.so.1.13.0"));
  EXPECT_FALSE(library_file_name("/usr/lib/x86_64-linux-gnu/libtorch_python.so.1.13.0"));
  EXPECT_FALSE(library_file_name("/usr/lib/x86_64-linux-gnu/libc.so.6"));
  EXPECT_FALSE(library_file_name(kOwn));
}

KnownObjects known() {
  KnownObjects k;
  k.library = {"blas-id", "torch-id"};
  k.reference = {"blas-id", "torch-id", "python-id", "libc-id"};
  k.own = {"own-id"};
  k.judge_foreign = true;
  return k;
}

const std::map<std::string, std::string> kIds = {
    {kTorch, "torch-id"}, {kBlas, "blas-id"}, {kPython, "python-id"}, {kOwn, "own-id"},
    {"/tmp/libhelpers.so", "blas-id"},  // a renamed copy
    {"/tmp/patched.so", "patched-id"},  // a copy whose build id was changed
};

TEST(ClassifySamples, KindsByNameAndBuildId) {
  ObjectSamples samples = {{kOwn, 50},       {kPython, 10},          {"[kernel.kallsyms]", 20}, {kTorch, 5},
                           {"/tmp/libhelpers.so", 7}, {"/tmp/patched.so", 3}, {"[unknown]", 2}};
  SideProfile side = classify_samples(samples, kIds, known(), 10);
  EXPECT_EQ(side.samples, 97);
  EXPECT_EQ(side.library_samples, 5 + 7 + 3 + 2);
  std::map<std::string, std::string> kinds;
  for (const auto& o : side.objects) kinds[o.name] = o.kind;
  EXPECT_EQ(kinds["kgym_ext.so"], "own");
  EXPECT_EQ(kinds["python3.11"], "runtime");
  EXPECT_EQ(kinds["[kernel.kallsyms]"], "kernel");
  EXPECT_EQ(kinds["libhelpers.so"], "library");
  EXPECT_EQ(kinds["patched.so"], "foreign");
  EXPECT_EQ(kinds["[unknown]"], "fileless");
  EXPECT_EQ(side.objects.front().name, "kgym_ext.so");  // most samples first
}

TEST(ClassifySamples, WithoutTheCandidatesBuildsNothingIsForeign) {
  KnownObjects k = known();
  k.judge_foreign = false;
  SideProfile side = classify_samples({{"/tmp/patched.so", 3}}, kIds, k, 1);
  EXPECT_EQ(side.library_samples, 0);
  EXPECT_EQ(side.objects.at(0).kind, "runtime");
}

SideProfile side(std::int64_t calls, std::int64_t samples, std::int64_t library) {
  SideProfile s;
  s.calls = calls;
  s.samples = samples;
  s.library_samples = library;
  return s;
}

TEST(LibraryCompute, HonestKernelWithGlueIsNoFinding) {
  // The sample matmul: 2 % of the candidate's time in libtorch_cpu.
  EXPECT_FALSE(library_compute_finding(side(2184, 2798, 58), side(2184, 2518, 1135)));
}

TEST(LibraryCompute, TheReferencesLibraryTimePerCallIsAFinding) {
  // BLAS called directly: about the reference's library time per call.
  auto f = library_compute_finding(side(3604, 1823, 795), side(3604, 1796, 833));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule, "runtime.op_trace");
  EXPECT_EQ(f->layer, "runtime");
  EXPECT_NE(f->evidence.find("0.95x the reference's library time per call"), std::string::npos) << f->evidence;
}

TEST(LibraryCompute, LibraryDominatingTheCandidatesTimeIsAFindingWhateverTheReference) {
  // A reference with no library code at all (a Python loop).
  EXPECT_TRUE(library_compute_finding(side(100, 1000, 500), side(100, 1000, 0)));
  EXPECT_FALSE(library_compute_finding(side(100, 1000, 300), side(100, 1000, 0)));
}

TEST(LibraryCompute, HalfOfTheReferencesButASmallShareIsNoFinding) {
  // As much library time per call as half the reference's, but a small part
  // of a slow candidate's time: its own kernel does the work.
  EXPECT_FALSE(library_compute_finding(side(100, 5000, 600), side(100, 2000, 1000)));
  EXPECT_TRUE(library_compute_finding(side(100, 2000, 600), side(100, 2000, 1000)));
}

TEST(LibraryCompute, TooFewSamplesDecideNothing) {
  EXPECT_FALSE(library_compute_finding(side(10, 30, 19), side(10, 30, 25)));
  EXPECT_FALSE(library_compute_finding(side(0, 1000, 900), side(10, 1000, 500)));
}

TEST(LibraryCompute, ProfileJsonKeepsTheLargestObjects) {
  SideProfile s = classify_samples({{kOwn, 5}, {kTorch, 3}}, kIds, known(), 2);
  auto j = side_profile_json(s);
  EXPECT_EQ(j["calls"], 2);
  EXPECT_EQ(j["samples"], 8);
  EXPECT_EQ(j["library_samples"], 3);
  EXPECT_EQ(j["objects"][0]["object"], "kgym_ext.so");
  EXPECT_EQ(j["objects"][1]["kind"], "library");
}

}  // namespace
}  // namespace kgym::verify

namespace kgym::verify {
namespace {

TEST(PerfOutput, CallChainsCountTheKernelsTimeForTheUserCodeUnderIt) {
  auto samples = parse_perf_dsos(
      "\n"
      "\tffffffff822424d7 ([kernel.kallsyms])\n"
      "\tffffffff81000c82 ([kernel.kallsyms])\n"
      "\t          fdb09 (/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0)\n"
      "\t         94e7e0 ([unknown])\n"
      "\n"
      "\t          1088de (/usr/bin/python3.11)\n"
      "\t          958980 (/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0)\n"
      "\n"
      "\tffffffff822424d7 ([kernel.kallsyms])\n"
      "\n");
  EXPECT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples["/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0"], 1);  // frames below the first user one are not used
  EXPECT_EQ(samples["/usr/bin/python3.11"], 1);
  EXPECT_EQ(samples["[kernel.kallsyms]"], 1);  // a kernel sample with no user code under it
}

}  // namespace
}  // namespace kgym::verify
