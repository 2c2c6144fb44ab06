// The exploit corpus (tests/exploits/) and the bundled sample solutions run
// through the static checks: every exploit is caught by the rule its
// docstring names, every honest candidate has no fatal finding.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "static_check/python_tokenizer.h"
#include "static_check/rules.h"

namespace kgym::static_check {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// First line of the module docstring, trimmed.
std::string docstring_head(const std::string& source) {
  for (const Token& t : tokenize_python(source).tokens) {
    if (t.kind != TokenKind::kString) continue;
    std::string body(split_string_token(t.text).body);
    return body.substr(0, body.find('\n'));
  }
  return "";
}

std::vector<fs::path> python_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".py") out.push_back(e.path());
  }
  std::ranges::sort(out);
  return out;
}

std::string describe(const std::vector<Finding>& findings) {
  std::string out;
  for (const auto& f : findings)
    out += "\n  " + f.rule + " " + f.severity + " " + f.evidence() + ": " + f.message;
  return out;
}

const fs::path kSource = KGYM_SOURCE_DIR;

TEST(ExploitCorpus, EveryStaticExploitIsCaughtByItsRule) {
  auto files = python_files(kSource / "tests/exploits/static");
  ASSERT_GE(files.size(), 11u);
  std::set<std::string> rules_covered;
  for (const auto& file : files) {
    std::string source = read(file);
    std::string head = docstring_head(source);
    std::string rule = head.substr(0, head.find(':'));
    ASSERT_TRUE(rule.starts_with("static.")) << file << ": docstring must start with the rule id";
    auto findings = check_candidate(source, file.filename().string(), {});
    bool caught =
        std::ranges::any_of(findings, [&](const Finding& f) { return f.rule == rule && f.fatal(); });
    EXPECT_TRUE(caught) << file << " is not caught by " << rule << describe(findings);
    rules_covered.insert(rule);
  }
  for (std::string rule :
       {"static.no_model_new", "static.no_kernel", "static.reference_import", "static.try_fallback",
        "static.monkeypatch", "static.concurrency", "static.introspection", "static.file_access",
        "static.env_switch", "static.precision_downgrade", "static.cpp_library_call"}) {
    EXPECT_TRUE(rules_covered.contains(rule)) << "no exploit in the corpus for " << rule;
  }
}

TEST(ExploitCorpus, CudaExploitsAreCaughtAndTheCudaSamplesAreClean) {
  CheckOptions cuda{.backend = "cuda"};
  auto files = python_files(kSource / "tests/exploits/cuda");
  ASSERT_GE(files.size(), 2u);
  std::set<std::string> rules;
  for (const auto& file : files) {
    std::string source = read(file);
    std::string head = docstring_head(source);
    std::string rule = head.substr(0, head.find(':'));
    auto findings = check_candidate(source, file.filename().string(), cuda);
    EXPECT_TRUE(std::ranges::any_of(findings, [&](const Finding& f) { return f.rule == rule && f.fatal(); }))
        << file << " is not caught by " << rule << describe(findings);
    rules.insert(rule);
  }
  EXPECT_TRUE(rules.contains("static.cpp_library_call"));
  EXPECT_TRUE(rules.contains("static.side_stream"));
  auto samples = python_files(kSource / "data/sample/solutions_cuda");
  ASSERT_GE(samples.size(), 2u);
  for (const auto& file : samples) {
    auto findings = check_candidate(read(file), "model_new.py", cuda);
    EXPECT_EQ(first_fatal(findings), nullptr) << file << describe(findings);
  }
}

// A "backend: " docstring line of an exploit ("cuda"), "" when absent.
std::string backend_line(const std::string& source) {
  auto at = source.find("\nbackend: ");
  if (at == std::string::npos) return "";
  return source.substr(at + 10, source.find('\n', at + 1) - at - 10);
}

// Candidates for a host interpreter (verifier.execution, docs/backends.md):
// the corpus's exploits (tests/exploits/host_interpreter/) are caught by
// their rule; the pto_case sample solutions in Triton and PyPTO are clean;
// each sample cheat is caught by the rule its docstring expects, or by
// none when the runtime layer decides it.
TEST(ExploitCorpus, HostInterpreterExploitsAndSamples) {
  auto files = python_files(kSource / "tests/exploits/host_interpreter");
  ASSERT_GE(files.size(), 6u);
  std::set<std::string> rules;
  for (const auto& file : files) {
    std::string source = read(file);
    std::string head = docstring_head(source);
    std::string rule = head.substr(0, head.find(':'));
    CheckOptions options{.backend = backend_line(source), .execution = "host_interpreter"};
    ASSERT_FALSE(options.backend.empty()) << file << ": no 'backend: ' line";
    auto findings = check_candidate(source, file.filename().string(), options);
    EXPECT_TRUE(std::ranges::any_of(findings, [&](const Finding& f) { return f.rule == rule && f.fatal(); }))
        << file << " is not caught by " << rule << describe(findings);
    rules.insert(rule);
  }
  for (std::string rule : {"static.kernel_body", "static.host_compute", "static.no_kernel"})
    EXPECT_TRUE(rules.contains(rule)) << "no host-interpreter exploit for " << rule;
  for (auto [dir, backend] : {std::pair{"solutions_triton", "cuda"}, std::pair{"solutions_pypto", "npu"}}) {
    auto samples = python_files(kSource / "data/sample" / dir);
    ASSERT_EQ(samples.size(), 3u) << dir;
    for (const auto& file : samples) {
      auto findings =
          check_candidate(read(file), "model_new.py", {.backend = backend, .execution = "host_interpreter"});
      EXPECT_EQ(first_fatal(findings), nullptr) << file << describe(findings);
    }
  }
  for (auto [dir, backend] : {std::pair{"cheats_triton", "cuda"}, std::pair{"cheats_pypto", "npu"}}) {
    auto cheats = python_files(kSource / "data/sample" / dir);
    ASSERT_EQ(cheats.size(), 2u) << dir;
    for (const auto& file : cheats) {
      std::string source = read(file);
      auto at = source.find("fail_cheat (");
      ASSERT_NE(at, std::string::npos) << file << ": no expected verdict";
      std::string rule = source.substr(at + 12, source.find_first_of(":)", at) - at - 12);
      auto findings =
          check_candidate(source, "model_new.py", {.backend = backend, .execution = "host_interpreter"});
      const Finding* fatal = first_fatal(findings);
      if (rule.starts_with("runtime.")) {
        EXPECT_EQ(fatal, nullptr) << file << " is for the runtime layer" << describe(findings);
      } else {
        ASSERT_NE(fatal, nullptr) << file << describe(findings);
        EXPECT_EQ(fatal->rule, rule) << file << describe(findings);
      }
    }
  }
}

TEST(ExploitCorpus, HonestCandidatesHaveNoFatalFinding) {
  auto files = python_files(kSource / "tests/exploits/honest");
  ASSERT_GE(files.size(), 5u);
  for (const auto& file : files) {
    std::string source = read(file);
    ASSERT_TRUE(docstring_head(source).starts_with("honest")) << file;
    auto findings = check_candidate(source, file.filename().string(), {});
    EXPECT_EQ(first_fatal(findings), nullptr) << file << describe(findings);
  }
}

// A candidate of several files (tests/exploits/{static,honest}_multi/<case>/):
// model_new.py, the bridge that defines ModelNew, first; its siblings after.
std::vector<SourceFile> candidate_files(const fs::path& dir) {
  std::vector<SourceFile> files{{"model_new.py", read(dir / "model_new.py")}};
  for (const auto& file : python_files(dir)) {
    if (file.filename() != "model_new.py") files.push_back({file.filename().string(), read(file)});
  }
  return files;
}

std::vector<fs::path> case_dirs(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory()) out.push_back(e.path());
  }
  std::ranges::sort(out);
  return out;
}

TEST(ExploitCorpus, AnExploitInASiblingFileIsCaughtAsInTheCandidate) {
  auto dirs = case_dirs(kSource / "tests/exploits/static_multi");
  ASSERT_GE(dirs.size(), 4u);
  for (const auto& dir : dirs) {
    auto files = candidate_files(dir);
    std::string head = docstring_head(files[0].source);
    std::string rule = head.substr(0, head.find(':'));
    ASSERT_TRUE(rule.starts_with("static.")) << dir << ": docstring must start with the rule id";
    auto bridge_alone = check_candidate(files[0].source, files[0].name, {});
    EXPECT_FALSE(std::ranges::any_of(bridge_alone, [&](const Finding& f) { return f.rule == rule; }))
        << dir << ": the exploit must live in the sibling, not in the bridge" << describe(bridge_alone);
    auto findings = check_candidate_files(files, {});
    bool caught = std::ranges::any_of(findings, [&](const Finding& f) {
      return f.rule == rule && f.fatal() && f.file == "kernel_impl.py";
    });
    EXPECT_TRUE(caught) << dir << " is not caught by " << rule << " in kernel_impl.py" << describe(findings);
  }
}

TEST(ExploitCorpus, HonestTwoFileCandidatesHaveNoFatalFinding) {
  auto dirs = case_dirs(kSource / "tests/exploits/honest_multi");
  ASSERT_GE(dirs.size(), 2u);
  for (const auto& dir : dirs) {
    auto files = candidate_files(dir);
    ASSERT_TRUE(docstring_head(files[0].source).starts_with("Honest")) << dir;
    auto findings = check_candidate_files(files, {});
    EXPECT_EQ(first_fatal(findings), nullptr) << dir << describe(findings);
  }
}

TEST(ExploitCorpus, ABridgeWithoutItsKernelSiblingHasNoKernel) {
  auto files = candidate_files(kSource / "tests/exploits/honest_multi/relu_relative_import");
  files.resize(1);
  auto findings = check_candidate_files(files, {});
  const Finding* f = first_fatal(findings);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->rule, "static.no_kernel");
}

// The runtime corpus (tests/exploits/runtime/, run through `kgym verify`
// by tests/e2e/70_runtime_exploits.sh) states on a "static: " docstring
// line what the static layer makes of each exploit: "none" (only the
// runtime layer catches it) or the rule that also catches it first. This
// keeps the layer table in docs/anti-cheat.md honest.
TEST(ExploitCorpus, RuntimeExploitsStateWhatTheStaticLayerSees) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kSource / "tests/exploits/runtime")) {
    if (e.path().extension() == ".py") files.push_back(e.path());
  }
  ASSERT_GE(files.size(), 11u);
  for (const auto& file : files) {
    std::string source = read(file);
    auto at = source.find("\nstatic: ");
    ASSERT_NE(at, std::string::npos) << file << ": no 'static: ' line in the docstring";
    std::string expected = source.substr(at + 9, source.find('\n', at + 1) - at - 9);
    auto findings = check_candidate(source, file.filename().string(), {});
    const Finding* fatal = first_fatal(findings);
    if (expected == "none") {
      EXPECT_EQ(fatal, nullptr) << file << describe(findings);
    } else {
      bool caught =
          std::ranges::any_of(findings, [&](const Finding& f) { return f.rule == expected && f.fatal(); });
      EXPECT_TRUE(caught) << file << " is not caught by " << expected << describe(findings);
    }
  }
}

TEST(ExploitCorpus, SampleSolutions) {
  auto files = python_files(kSource / "data/sample/solutions");
  ASSERT_EQ(files.size(), 9u);
  for (const auto& file : files) {
    auto findings = check_candidate(read(file), "model_new.py", {});
    if (file.parent_path().filename() == "2_LeakyReLU") {
      const Finding* f = first_fatal(findings);
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->rule, "static.no_kernel");
      EXPECT_EQ(f->evidence(), "model_new.py:12: torch.nn.functional.leaky_relu");
    } else {
      EXPECT_EQ(first_fatal(findings), nullptr) << file << describe(findings);
    }
  }
}

TEST(ExploitCorpus, SampleProblemsAreFloat32) {
  for (const auto& file : python_files(kSource / "data/sample/level1")) {
    EXPECT_EQ(problem_dtypes(read(file)), std::vector<std::string>{"float32"}) << file;
  }
}

}  // namespace
}  // namespace kgym::static_check
