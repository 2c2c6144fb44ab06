#include "verify/cpu_profile.h"

#include <gtest/gtest.h>

namespace kgym::verify {
namespace {

constexpr const char* kTorch = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0";
constexpr const char* kBlas = "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblasp-r0.3.21.so";
constexpr const char* kPython = "/usr/bin/python3.11";
constexpr const char* kOwn = "/tmp/kgym/prebuilt/ext/kgym_ext.so";

TEST(PerfOutput, MessagesCountNothingAndASampleWithoutUserFramesIsTheKernels) {
  auto script = parse_perf_script(
      "Warning: some message (with parentheses)\n"
      "  7 \n"
      "\n"
      "  8 \n"
      "\t     7f00000000aa ([unknown])\n"
      "\n");
  EXPECT_EQ(script.by_process.size(), 2u);
  EXPECT_EQ(script.by_process.at(7).at("[kernel.kallsyms]"), 1);
  EXPECT_EQ(script.by_process.at(8).at("[unknown]"), 1);
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

TEST(LibraryCompute, ASmallMemoryBoundLibraryOpUnderTheHarnessIsAFinding) {
  // at::cpu::clamp_min under a name of its own on the 1 MB ReLU (torch
  // 1.13, 2 s of timing): the worker's Python around each 0.02 ms call
  // outweighs the op, 22 % of the samples outside libc, while per call it
  // is the reference's library time.
  EXPECT_TRUE(library_compute_finding(side(686, 436, 96), side(686, 332, 83)));
  // The honest kernels of the corpus: at most 6 %, some of them with more
  // glue per call than the reference's library time (a slow kernel's
  // allocations and dispatch).
  EXPECT_FALSE(library_compute_finding(side(686, 1600, 96), side(686, 332, 83)));
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
  auto script = parse_perf_script(
      "  5 \n"
      "\tffffffff822424d7 ([kernel.kallsyms])\n"
      "\tffffffff81000c82 ([kernel.kallsyms])\n"
      "\t          fdb09 (/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0)\n"
      "\t         94e7e0 ([unknown])\n"
      "\n"
      "  5 \n"
      "\t          1088de (/usr/bin/python3.11)\n"
      "\t          958980 (/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0)\n"
      "\n"
      "  5 \n"
      "\tffffffff822424d7 ([kernel.kallsyms])\n"
      "\n");
  const auto& samples = script.by_process.at(5);
  EXPECT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples.at("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0"), 1);  // frames below the first user one are not used
  EXPECT_EQ(samples.at("/usr/bin/python3.11"), 1);
  EXPECT_EQ(samples.at("[kernel.kallsyms]"), 1);  // a kernel sample with no user code under it
}

}  // namespace
}  // namespace kgym::verify

namespace kgym::verify {
namespace {

TEST(PerfOutput, SystemWideSamplesByProcessAndTheirParents) {
  auto script = parse_perf_script(
      "    0 PERF_RECORD_FORK(1:1):(0:0)\n"
      "    0 PERF_RECORD_COMM: process_api:1/1\n"
      "    0 PERF_RECORD_FORK(100:100):(1:1)\n"    // a worker's box, found running
      "    0 PERF_RECORD_FORK(101:101):(100:100)\n"  // the worker in it
      "  101 PERF_RECORD_FORK(101:105):(101:101)\n"  // a thread of it: same process
      "  101 PERF_RECORD_FORK(300:300):(101:101)\n"  // a child it forked while sampled
      "  300 PERF_RECORD_EXIT(300:300):(101:101)\n"
      "    0 \n"
      "\n"
      "  101 \n"
      "\t          48fa7b3 (/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0)\n"
      "\n"
      "  300 \n"
      "\t          48fa7b3 (/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0)\n"
      "\n"
      "  200 \n"
      "\t            f8350 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
      "\n");
  EXPECT_EQ(script.by_process.size(), 4u);  // the idle task's sample is the kernel's
  EXPECT_EQ(script.parents.at(101), 100);
  EXPECT_EQ(script.parents.at(300), 101);
  EXPECT_FALSE(script.parents.contains(105) && script.parents.at(105) == 105);

  auto worker = samples_below(script, {100});
  EXPECT_EQ(worker.size(), 1u);
  EXPECT_EQ(worker["/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0"], 2);  // the forked child's counts too
  auto other = samples_below(script, {200});
  EXPECT_EQ(other["/usr/lib/x86_64-linux-gnu/libc.so.6"], 1);
  EXPECT_TRUE(samples_below(script, {999}).empty());
}

TEST(PerfOutput, ALoopInTheParentsEnds) {
  PerfScript script;
  script.parents = {{1, 2}, {2, 1}};
  script.by_process[1]["x"] = 1;
  EXPECT_TRUE(samples_below(script, {3}).empty());
}

}  // namespace
}  // namespace kgym::verify

namespace kgym::verify {
namespace {

TEST(PerfOutput, ANameWithALineBreakCannotForgeSamples) {
  // The candidate (pid 50) maps "/tmp/x)\n\n 50 \n\t 1 (/own.so": each of
  // its samples there prints a second, forged one in its own extension.
  std::string name = "/tmp/x)\n\n   50 \n\t 1 (/tmp/own.so";
  std::string text = "   50 \n\t 7f00 (" + name + ")\n\n   50 \n\t 7f01 (" + name + ")\n\n";
  PerfScript script = parse_perf_script(text);
  script.totals = parse_perf_pids("   50 \n   50 \n    0 \n");
  EXPECT_EQ(script.by_process.at(50).at("/tmp/own.so"), 2);  // what the report shows
  EXPECT_EQ(miscounted_below(script, {50}), std::vector<int>{50});
  // Without a pid to forge, a name can still try to pass its samples off
  // as the extension's: "/tmp/x\n\t 1 (/tmp/own.so" leaves a line that is
  // no frame, and the sample is unreadable, which counts as library code.
  PerfScript bent = parse_perf_script("   50 \n\t 7f00 (/tmp/x\n\t 1 (/tmp/own.so)\n\n");
  EXPECT_EQ(bent.by_process.at(50).size(), 1u);
  EXPECT_EQ(bent.by_process.at(50).at("[unreadable]"), 1);
  SideProfile side = classify_samples(bent.by_process.at(50), {}, {}, 1);
  EXPECT_EQ(side.library_samples, 1);
  // An honest report adds up.
  PerfScript honest = parse_perf_script("   50 \n\t 7f00 (/tmp/own.so)\n\n   50 \n\n");
  honest.totals = parse_perf_pids("   50 \n   50 \n");
  EXPECT_TRUE(miscounted_below(honest, {50}).empty());
}

}  // namespace
}  // namespace kgym::verify
