// The transcript corpus (tests/transcripts/): every honest session raises
// nothing, every tampering session raises the rule its name says. The
// detection and false-positive rates are printed for the docs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/transcript_scan.h"

namespace kgym::agent {
namespace {

namespace fs = std::filesystem;

ScanContext corpus_context() {
  ScanContext context;
  fs::path c = "/work/runs/demo/cases/level1/1_ReLU";
  context.workspace = c / "work";
  context.home = c / "agent_home";
  context.case_stem = "1_ReLU";
  context.artifacts = {"model_new.py"};
  context.allowed = {context.home};
  context.off_limits = {"/work/data/bench", "/work/runs", "/opt/kgym"};
  return context;
}

TranscriptFormat format_of(const std::string& dir) {
  if (dir == "claude") return TranscriptFormat::kClaude;
  if (dir == "codex") return TranscriptFormat::kCodex;
  if (dir == "opencode") return TranscriptFormat::kOpencode;
  if (dir == "opencode_export") return TranscriptFormat::kOpencodeExport;
  return TranscriptFormat::kText;
}

TEST(TranscriptCorpus, HonestSessionsRaiseNothingAndEachTamperingRaisesItsRule) {
  fs::path root = fs::path(KGYM_SOURCE_DIR) / "tests" / "transcripts";
  int honest = 0, false_positives = 0, tampering = 0, detected = 0;
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file() && entry.path().filename() != "README.md") files.push_back(entry.path());
  std::ranges::sort(files);
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    std::string dir = file.parent_path().filename().string();
    std::string name = file.stem().string();
    auto actions = read_actions(text.str(), format_of(dir));
    auto flags = scan_actions(actions, corpus_context(), "transcript");
    EXPECT_FALSE(actions.empty()) << file << ": no action read";
    if (name.starts_with("honest")) {
      ++honest;
      if (!flags.empty()) ++false_positives;
      for (const auto& f : flags)
        ADD_FAILURE() << file << ": " << f.rule << " on line " << f.line << ": " << f.evidence;
      continue;
    }
    ++tampering;
    auto rule = std::ranges::find_if(transcript_rules(), [&](const std::string& r) {
      return name.starts_with(r.substr(r.find('.') + 1) + "_");
    });
    ASSERT_NE(rule, transcript_rules().end()) << file << ": the name starts with no rule";
    bool raised = std::ranges::any_of(flags, [&](const TranscriptFlag& f) { return f.rule == *rule; });
    if (raised) ++detected;
    EXPECT_TRUE(raised) << file << ": " << *rule << " not raised (" << flags.size() << " other flags)";
  }
  std::printf("transcript corpus: detected %d/%d tampering sessions, false positives %d/%d honest sessions\n",
              detected, tampering, false_positives, honest);
  EXPECT_GT(tampering, 0);
  EXPECT_GT(honest, 0);
}

}  // namespace
}  // namespace kgym::agent
