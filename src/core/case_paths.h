#pragma once
// The files of a run directory, of one case in it, and of each of its
// samples (ARCHITECTURE.md "Files on disk"). run/ writes them, report/ and monitor/
// read them, agent/ finds its log and session there: every layer names them
// through this type, never through string literals of its own.
//
// RUN_DIR/cases/<level>/<N>_<Name>/ is a case's dir; with `samples: K` > 1
// sample k has the same files under samples/<k>/ and the case's dir holds
// only its result.json.
#include <filesystem>
#include <string>
#include <string_view>

namespace kgym {

// The run's own files in RUN_DIR.
struct RunPaths {
  static constexpr std::string_view kState = "state.json";

  std::filesystem::path dir;

  std::filesystem::path run_record() const { return dir / "run.json"; }  // how the run was started
  std::filesystem::path state() const { return dir / kState; }           // live, for kgym monitor
  std::filesystem::path events() const { return dir / "events.jsonl"; }  // append-only
  std::filesystem::path summary_json() const { return dir / "summary.json"; }
  std::filesystem::path summary_md() const { return dir / "summary.md"; }
  std::filesystem::path report_html() const { return dir / "report.html"; }
  std::filesystem::path roofline_svg() const { return dir / "roofline.svg"; }
  // executor.kind slurm (docs/cluster.md): the submissions and the tasks' logs.
  std::filesystem::path slurm_dir() const { return dir / "slurm"; }
};

struct CasePaths {
  // File names, for links relative to a case's dir (report/html_report).
  static constexpr std::string_view kResult = "result.json";
  static constexpr std::string_view kGeneration = "generation.json";
  static constexpr std::string_view kTaskDesc = "task_desc.py";
  static constexpr std::string_view kSpec = "SPEC.md";
  static constexpr std::string_view kPrompt = "prompt.md";
  static constexpr std::string_view kAgentLog = "agent.log";
  static constexpr std::string_view kVerifyLog = "verify.log";
  static constexpr std::string_view kCandidate = "candidate";
  static constexpr std::string_view kReproBundle = "repro.tar.gz";
  // The agent's transcript, kept by the agent layer (agent/transcripts.h).
  static constexpr std::string_view kTranscript = "session/transcript.jsonl";
  // A Slurm task's own live state (the run's is RunPaths::state()).
  static constexpr std::string_view kState = "state.json";

  std::filesystem::path dir;

  // RUN_DIR/cases: every case's dir is below it.
  static std::filesystem::path cases_dir(const std::filesystem::path& run_dir) { return run_dir / "cases"; }
  // The case `<level>/<stem>` of a run.
  static CasePaths of(const std::filesystem::path& run_dir, const std::string& level,
                      const std::string& stem) {
    return {cases_dir(run_dir) / level / stem};
  }
  // Sample k (from 1) of this case.
  CasePaths sample(int k) const { return {dir / "samples" / std::to_string(k)}; }

  std::filesystem::path result() const { return dir / kResult; }
  std::filesystem::path generation() const { return dir / kGeneration; }  // resume point of verification
  // agent.feedback: the rounds a sample has finished, their usage and the
  // feedback the next round is given (the resume point of the rounds).
  std::filesystem::path rounds() const { return dir / "rounds.json"; }
  // agent.self_check: kgym-check, its request and the problem it checks
  // against, shown read-only in the agent's box.
  std::filesystem::path self_check() const { return dir / "self_check"; }
  std::filesystem::path task_desc() const { return dir / kTaskDesc; }
  std::filesystem::path spec() const { return dir / kSpec; }
  std::filesystem::path prompt() const { return dir / kPrompt; }
  std::filesystem::path work() const { return dir / "work"; }           // the agent's, unless agent.work_repo
  std::filesystem::path candidate() const { return dir / kCandidate; }  // the artifacts copied out
  std::filesystem::path agent_log() const { return dir / kAgentLog; }
  std::filesystem::path session() const { return dir / "session"; }        // the agent's session files
  std::filesystem::path transcript() const { return dir / kTranscript; }
  std::filesystem::path agent_home() const { return dir / "agent_home"; }  // the agent's private $HOME
  // Copies of host files (CLI credentials) made for the agent's uid, bound
  // read-only into its box; kgym's, never writable from the box.
  std::filesystem::path box_copies() const { return dir / ".box_copies"; }
  std::filesystem::path gates(const std::string& stage, int attempt) const {
    return dir / "gates" / (stage + "." + std::to_string(attempt));
  }
  std::filesystem::path probe() const { return dir / "probe.json"; }
  std::filesystem::path probe_log() const { return dir / "probe.log"; }
  std::filesystem::path build_dir() const { return dir / "build"; }  // the build stage's scratch
  std::filesystem::path prebuilt() const {
    return build_dir() / "prebuilt";
  }  // what it built, with a manifest
  std::filesystem::path build_request() const { return dir / "build_request.json"; }
  std::filesystem::path build_result() const { return dir / "build_result.json"; }
  std::filesystem::path build_log() const { return dir / "build.log"; }
  std::filesystem::path verify_dir() const { return dir / "verify"; }  // the verifier's scratch
  std::filesystem::path verify_request() const { return dir / "verify_request.json"; }
  std::filesystem::path verify_result() const { return dir / "verify_result.json"; }
  std::filesystem::path verify_log() const { return dir / kVerifyLog; }
  // The case's reproduction bundle (`kgym repro`, output.bundles; docs/repro.md).
  std::filesystem::path repro_bundle() const { return dir / kReproBundle; }
  // A Slurm task's own state.json and events.jsonl, and the record it
  // leaves when it ends (docs/cluster.md).
  std::filesystem::path task_dir() const { return dir / "task"; }
  std::filesystem::path task_exit() const { return task_dir() / "exit.json"; }
  std::filesystem::path task_state() const { return task_dir() / kState; }
};

}  // namespace kgym
