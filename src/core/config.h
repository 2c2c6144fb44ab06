#pragma once
// The validated run configuration. Everything here has been checked by
// load_config(); consumers never re-validate. Paths are absolute (relative
// paths in a file are resolved against the file's directory, on the command
// line against the current directory). Every key is documented in
// docs/config.md.
#include <chrono>
#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kgym {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// agent.feedback (docs/agents.md "Refinement rounds"): after a sample's
// verification falls short of `until`, the same agent continues in the same
// workspace with the verification's feedback, up to `rounds` rounds in all.
struct FeedbackConfig {
  int rounds = 1;              // rounds in all, the first included; 1 = no feedback
  std::string until = "pass";  // "pass" | "fast_1" | "fast_2": what ends the rounds early
  // The template the feedback section follows; nullopt: the round's prompt
  // (agent) or its last stage's template (workflow).
  std::optional<std::filesystem::path> prompt;
  bool on() const { return rounds > 1; }
};

struct AgentConfig {
  std::string kind = "replay";  // "command" | "replay" | a profile: "opencode" | "claude" | "codex"
  // kind: command
  std::vector<std::string> argv;  // template with {workspace} {prompt_file} ...
  // kinds opencode | claude | codex (docs/agents.md): the CLI, found on PATH
  // at load time (`binary` absolute when it was given as a path).
  std::string binary;
  std::vector<std::string> extra_args;        // appended to the profile's own flags; templates
  std::optional<std::string> opencode_agent;  // opencode's --agent
  // Work-repo layout (docs/agents.md "Work repository"): the agent runs with
  // cwd = this repository and each case's workspace is
  // <work_repo>/custom/<level>/<N>_<Name>/ (artifacts are relative to it).
  std::optional<std::filesystem::path> work_repo;
  std::map<std::string, std::string> env;
  std::chrono::seconds timeout{1800};
  std::string workdir = "{workspace}";                 // template; cwd of the agent
  std::vector<std::string> artifacts{"model_new.py"};  // artifacts[0] is the candidate
  std::optional<std::string> model;
  bool network = true;  // keep network access in the agent's sandbox (its LLM API)
  // The agent leases a device before it starts and keeps it through its own
  // verification (docs/agents.md "Devices"); false: only verification does.
  bool needs_device = false;
  // What a transcript flag does (docs/anti-cheat.md "Transcripts"): "warn"
  // records it; "fail" makes the sample fail_cheat (cheat.layer transcript).
  std::string transcript_policy = "warn";
  FeedbackConfig feedback;
  // `kgym-check` on the agent's PATH in its box (docs/agents.md "A check in
  // the box"): the static rules, the build and the correctness trials on the
  // problem as the agent sees it; never a verdict.
  bool self_check = false;
  // kind: replay
  std::filesystem::path replay_dir;
};

// How reference and candidate are timed (docs/config.md "verifier.timing").
struct TimingConfig {
  int warmup = 3;                          // untimed calls per side, at least; more until stable
  double target_rse = 0.005;               // stop once the speedup's relative standard error is below
  int min_samples = 10;                    // timed calls per side before target_rse may stop
  int max_repetitions = 10000;             // timed calls per side, at most
  std::chrono::milliseconds budget{5000};  // per case, both sides together
  bool cache_flush = false;                // evict the caches before every timed call
};

struct VerifierConfig {
  std::string backend = "cpu";  // "cpu" | "cuda" | "npu"
  // "device" | "host_interpreter": the backend's kernels checked on this
  // host's CPU by their language's interpreter (docs/backends.md).
  std::string execution = "device";
  // execution: auto. `execution` says "device" until the run's preflight
  // (or kgym verify) finds the device missing and the interpreter there.
  bool execution_auto = false;
  std::optional<std::string> python;  // interpreter; nullopt = auto-detect
  std::string mode = "performance";   // "correctness" | "performance"
  int trials = 3;
  std::chrono::seconds timeout{600};            // whole verification of one case (incl. compile)
  std::chrono::seconds call_timeout{60};        // one worker request (a trial, a timing batch) after import
  int threads = 0;                              // torch/OpenMP threads; 0 = cores of the device
  std::map<std::string, Tolerance> tolerances;  // by torch dtype name ("float32")
  TimingConfig timing;
  bool compile_cache = true;  // use ccache for extension builds when present
  // Fork workers from warm parents in `kgym run`: "auto" (cpu only), "on", "off".
  std::string warm_workers = "auto";
  // What the candidate's speed is measured against: "eager" (the reference
  // as written, always first) and optionally "compile" (the reference
  // through torch.compile, timed the same way; performance.speedup_vs).
  std::vector<std::string> baselines = {"eager"};
  bool compile_baseline() const;
};

// One gate of a workflow stage, checked by the harness after the stage's
// agent run (docs/workflows.md). `kind` decides which fields matter.
struct GateConfig {
  std::string
      kind;  // non_empty | headings | sections | forbidden_words | command | python_symbols | static_check
  std::string file;                // relative to the agent's work dir (all kinds but command)
  std::vector<std::string> items;  // headings, words, symbols
  int min_count = 0;               // sections: at least this many "## " sections
  std::vector<std::string> argv;   // command: run in the work dir; templates
  std::string marker;              // command: must appear in its output ("" = exit 0 is enough)
  std::chrono::seconds timeout{120};
};

struct StageConfig {
  std::string name;
  std::filesystem::path prompt;        // template file (placeholders as in agent.argv)
  std::vector<std::string> artifacts;  // must exist and be non-empty after the stage
  std::vector<GateConfig> gates;
};

// Optional `workflow:` section: the agent is run once per stage, each stage
// re-prompted with its failed checks up to `max_attempts` times.
struct WorkflowConfig {
  int max_attempts = 3;
  std::vector<StageConfig> stages;  // empty = no workflow (one agent run)
};

// OS-level confinement of agents and candidate workers (docs/config.md
// "Sandbox"). Limits of 0 mean "not limited".
struct SandboxConfig {
  std::string mode = "auto";  // "auto" | "bwrap" | "unshare" | "none"
  long long address_space_mb = 16384;
  long long cpu_sec = 3600;
  long long file_size_mb = 1024;
  long long processes = 512;
  bool drop_privileges = true;  // candidates run as nobody (65534) when kgym runs as root
  std::vector<std::filesystem::path> agent_read_only;  // extra paths the agent may read
  std::vector<std::filesystem::path> agent_writable;   // extra paths the agent may write
};

// The build stage (docs/build.md, docs/config.md "Build"): every candidate
// is built before any device is leased, in a pool of `jobs` processes.
struct BuildConfig {
  int jobs = 0;                      // builds at once; 0 = one per core builds may use
  std::optional<std::string> cores;  // a CPU core list for builds; unset = the cores no device holds, or all
  std::chrono::seconds timeout{900};
  bool precompiled_header = true;  // torch/extension.h precompiled once per torch, compiler and flags
};

// executor.slurm (docs/cluster.md): each case-sample is one task of a Slurm
// job array; empty text and 0 mean "not given" (Slurm's default).
struct SlurmConfig {
  std::string partition;
  std::string account;
  std::string qos;
  std::string gres_per_task;  // e.g. "gpu:1"
  int cpus_per_task = 0;
  std::string mem;                       // e.g. "16G"
  std::string time_limit;                // Slurm's time format, e.g. "02:00:00"
  int max_parallel = 0;                  // the array's %N
  std::vector<std::string> extra_args;   // more sbatch options, one per item
  std::vector<std::string> setup;        // shell lines run on the node before kgym
  std::chrono::milliseconds poll{5000};  // how often the coordinator asks the queue
};

// Where cases run: `local` (this machine's scheduler) or `slurm`.
struct ExecutorConfig {
  std::string kind = "local";
  SlurmConfig slurm;
};

// problem.size (docs/config.md "Problem sizes"): run each problem at its
// written sizes, or shrink its size constants to fit a budget.
struct ProblemSize {
  enum class Kind { kByBackend, kAsWritten, kAuto };
  Kind kind = Kind::kByBackend;                // as_written for cuda and npu, auto for cpu
  unsigned long long max_bytes = 64ULL << 20;  // inputs + outputs + parameters
  double max_forward_ms = 50;                  // one reference forward on one core
};

struct Config {
  std::filesystem::path source;  // the YAML file ("<bundled default>" if none)
  std::filesystem::path bench_dir;
  std::string level = "level1";
  std::string cases = "";  // selector; "" = every case of `level`
  std::vector<std::string> devices{"all"};
  int concurrency = 1;  // samples in flight at once (each sample of a case counts)
  // Independent generations per case (pass@k, docs/results.md "Samples");
  // 1 keeps the single-sample layout.
  int samples = 1;
  std::filesystem::path output_root;
  std::optional<std::string> run_name;  // default: timestamp
  bool output_bundles = false;          // output.bundles: a repro.tar.gz per verified case
  // history.db: the run history database `kgym run` indexes its run into
  // (docs/history.md); nullopt = the run is not indexed.
  std::optional<std::filesystem::path> history_db;
  AgentConfig agent;
  WorkflowConfig workflow;
  VerifierConfig verifier;
  SandboxConfig sandbox;
  BuildConfig build;
  ExecutorConfig executor;
  std::map<std::string, long long> overrides;  // problem.overrides
  ProblemSize size;                            // problem.size
  // problem.precision: "as_written" or the dtype the problem's floating
  // inputs and parameters are cast to ("float32", "float16", "bfloat16").
  std::string precision = "as_written";
  std::chrono::milliseconds monitor_poll{1000};
};

// A user-facing configuration error: where, which key, what is allowed.
struct ConfigError {
  std::string message;  // "FILE:LINE: key 'a.b': <problem>; <fix>"
};

struct ConfigSource {
  std::optional<std::filesystem::path> file;  // nullopt = bundled default
  std::vector<std::string> sets;              // "--set KEY=VALUE" items, in order
  std::vector<std::string> overrides;         // "--override NAME=VALUE" items
};

// Loads, merges --set/--override, applies defaults and validates. Does not
// touch the dataset or Python (see preflight in run/).
std::expected<Config, ConfigError> load_config(const ConfigSource& source);

// The bundled default config: configs/default.yaml of the kgym tree the
// binary was built from ($KGYM_HOME overrides the tree's location).
std::filesystem::path bundled_default_config();

// Default tolerance for a dtype name; exact (0,0) for integer and bool.
Tolerance default_tolerance(const std::string& dtype);

}  // namespace kgym
