// Reads and checks the `verifier:` section; owns the default tolerances.
#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/backend.h"
#include "core/config_sections.h"

namespace kgym {
namespace config_detail {
namespace {

constexpr std::string_view kVerifierKeys[] = {
    "backend", "python",        "mode",       "execution", "trials",       "timeout_sec", "call_timeout_sec",
    "threads", "compile_cache", "tolerances", "timing",    "warm_workers", "baselines"};
constexpr std::string_view kExecutions[] = {"device", "host_interpreter", "auto"};
constexpr std::string_view kWarmWorkers[] = {"auto", "on", "off"};
constexpr std::string_view kBaselines[] = {"eager", "compile"};
constexpr std::string_view kVerifierModes[] = {"correctness", "performance"};
constexpr std::string_view kToleranceKeys[] = {"atol", "rtol"};
// "repetitions" is the old name of "max_repetitions" and still loads.
constexpr std::string_view kTimingKeys[] = {"warmup",      "target_rse", "min_samples", "max_repetitions",
                                            "repetitions", "budget_sec", "cache_flush"};
// float32 first: it is the nearest match offered for a bare "float".
constexpr std::string_view kDtypes[] = {"float32",   "float64",    "float16", "bfloat16",
                                        "complex64", "complex128", "int8",    "int16",
                                        "int32",     "int64",      "uint8",   "bool"};

// `baselines: [eager, compile]`: each named once, eager among them.
void read_baselines(ConfigReader& reader, const Entry& at, VerifierConfig& verifier) {
  constexpr std::string_view kFix = "write a list such as [eager] or [eager, compile]";
  auto items = reader.list(at, false, kFix);
  if (!items) return;
  std::vector<std::string> names;
  for (const Entry& item : *items) {
    auto name = reader.choice(item, kBaselines);
    if (!name) return;
    if (std::find(names.begin(), names.end(), *name) != names.end()) {
      reader.error(item, fmt::format("baseline '{}' is named twice", *name), "name each baseline once");
      return;
    }
    names.push_back(*name);
  }
  if (std::find(names.begin(), names.end(), "eager") == names.end()) {
    reader.error(at, "baselines lacks eager",
                 "the reference as written is what every speedup is measured against; write [eager] or "
                 "[eager, compile]");
    return;
  }
  // Eager first: it is result.json's `speedup`; the others go to speedup_vs.
  std::stable_partition(names.begin(), names.end(), [](const std::string& n) { return n == "eager"; });
  verifier.baselines = std::move(names);
}

void read_tolerances(ConfigReader& reader, const Entry& at, std::map<std::string, Tolerance>& tolerances) {
  Mapping by_dtype = reader.mapping(at, kDtypes);
  for (const Entry& dtype_entry : by_dtype.entries) {
    std::string dtype = dtype_entry.path.substr(at.path.size() + 1);
    Tolerance& tolerance = tolerances[dtype];
    Mapping fields = reader.mapping(dtype_entry, kToleranceKeys);
    constexpr std::string_view kFix =
        "set a number >= 0; a value passes when |candidate - reference| <= atol + rtol * |reference|";
    if (auto entry = fields.get("atol")) {
      if (auto value = reader.number(*entry, 0, false, kFix)) tolerance.atol = *value;
    }
    if (auto entry = fields.get("rtol")) {
      if (auto value = reader.number(*entry, 0, false, kFix)) tolerance.rtol = *value;
    }
  }
}

void read_timing(ConfigReader& reader, const Entry& at, TimingConfig& timing) {
  Mapping fields = reader.mapping(at, kTimingKeys);
  if (auto entry = fields.get("warmup")) {
    if (auto value =
            reader.integer(*entry, 0, "set a whole number of untimed calls, 0 or more, e.g. warmup: 3"))
      timing.warmup = static_cast<int>(*value);
  }
  if (auto entry = fields.get("target_rse")) {
    if (auto value = reader.number(
            *entry, 0, true, "set a fraction greater than 0, e.g. target_rse: 0.01 (1 % of the median)"))
      timing.target_rse = *value;
  }
  if (auto entry = fields.get("min_samples")) {
    if (auto value =
            reader.integer(*entry, 2, "set a whole number of timed calls, at least 2, e.g. min_samples: 10"))
      timing.min_samples = static_cast<int>(*value);
  }
  auto max_entry = fields.get("max_repetitions");
  if (!max_entry) max_entry = fields.get("repetitions");
  if (fields.get("max_repetitions") && fields.get("repetitions")) {
    reader.error(*fields.get("repetitions"), "both repetitions and max_repetitions are set",
                 "repetitions is the old name of max_repetitions; keep only max_repetitions");
  } else if (max_entry) {
    if (auto value = reader.integer(
            *max_entry, 2, "set a whole number of timed calls, at least 2, e.g. max_repetitions: 200"))
      timing.max_repetitions = static_cast<int>(*value);
  }
  if (timing.min_samples > timing.max_repetitions) {
    if (auto entry = fields.get("min_samples")) {
      reader.error(*entry,
                   fmt::format("min_samples ({}) is above max_repetitions ({})", timing.min_samples,
                               timing.max_repetitions),
                   "lower min_samples or raise max_repetitions");
    }
  }
  if (auto entry = fields.get("budget_sec")) {
    if (auto value = reader.number(*entry, 0, true, "set seconds greater than 0, e.g. budget_sec: 3"))
      timing.budget = std::chrono::milliseconds(std::max<long long>(1, std::llround(*value * 1000)));
  }
  if (auto entry = fields.get("cache_flush")) {
    if (auto value = reader.boolean(*entry)) timing.cache_flush = *value;
  }
}

std::optional<std::chrono::seconds> read_seconds(ConfigReader& reader, const Entry& at,
                                                 std::string_view example) {
  auto value =
      reader.integer(at, 1, fmt::format("set a whole number of seconds, at least 1, e.g. {}", example));
  if (!value) return std::nullopt;
  return std::chrono::seconds(*value);
}

}  // namespace

std::span<const std::string_view> known_dtypes() { return kDtypes; }

void read_verifier(ConfigReader& reader, const Entry& at, VerifierConfig& verifier) {
  for (std::string_view dtype : kDtypes)
    verifier.tolerances[std::string(dtype)] = default_tolerance(std::string(dtype));

  Mapping fields = reader.mapping(at, kVerifierKeys);
  if (auto entry = fields.get("backend")) {
    if (auto value = reader.choice(*entry, backend_names())) verifier.backend = *value;
  }
  if (auto entry = fields.get("execution")) {
    if (auto value = reader.choice(*entry, kExecutions)) {
      if (*value == "auto") {
        // Resolved before any case: the device when the interpreter has it,
        // else the host interpreter (a backend without one: its device).
        verifier.execution = "device";
        verifier.execution_auto = true;
      } else if (find_backend(verifier.backend, *value)) {
        verifier.execution = *value;
      } else {
        reader.error(*entry, fmt::format("backend {} has no {} execution", verifier.backend, *value),
                     "host_interpreter checks cuda's Triton kernels and npu's PyPTO kernels on this host's "
                     "CPU; a cpu backend runs on its device already: remove execution or set it to device");
      }
    }
  }
  if (auto entry = fields.get("mode")) {
    if (auto value = reader.choice(*entry, kVerifierModes)) verifier.mode = *value;
  }
  if (auto entry = fields.get("python")) {
    constexpr std::string_view kFix = "name an interpreter on PATH (python3) or a path to one";
    if (auto value = reader.text(*entry, kFix)) {
      if (value->find('/') == std::string::npos) {
        verifier.python = *value;
      } else if (auto path = reader.path_keeping_links(*entry, kFix)) {
        verifier.python = path->string();
      }
    }
  }
  if (auto entry = fields.get("trials")) {
    if (auto value = reader.integer(*entry, 1, "set a whole number of trials, at least 1, e.g. trials: 3"))
      verifier.trials = static_cast<int>(*value);
  }
  std::optional<Entry> timeout_entry = fields.get("timeout_sec");
  std::optional<Entry> call_timeout_entry = fields.get("call_timeout_sec");
  bool timeouts_ok = true;
  if (timeout_entry) {
    auto value = read_seconds(reader, *timeout_entry, "timeout_sec: 600");
    timeouts_ok = value.has_value();
    if (value) verifier.timeout = *value;
  }
  if (call_timeout_entry) {
    auto value = read_seconds(reader, *call_timeout_entry, "call_timeout_sec: 60");
    timeouts_ok = timeouts_ok && value.has_value();
    if (value) verifier.call_timeout = *value;
  }
  if (timeouts_ok && verifier.call_timeout > verifier.timeout) {
    Entry at_entry = call_timeout_entry ? *call_timeout_entry : *timeout_entry;
    reader.error(
        at_entry,
        fmt::format("call_timeout_sec ({}) is longer than timeout_sec ({})", verifier.call_timeout.count(),
                    verifier.timeout.count()),
        "one worker call cannot outlast the whole verification; lower call_timeout_sec or raise timeout_sec");
  }
  if (auto entry = fields.get("threads")) {
    if (auto value = reader.integer(*entry, 0, "set a whole number of threads, 0 = the device's cores"))
      verifier.threads = static_cast<int>(*value);
  }
  if (auto entry = fields.get("compile_cache")) {
    if (auto value = reader.boolean(*entry)) verifier.compile_cache = *value;
  }
  if (auto entry = fields.get("tolerances")) read_tolerances(reader, *entry, verifier.tolerances);
  if (auto entry = fields.get("timing")) read_timing(reader, *entry, verifier.timing);
  if (auto entry = fields.get("baselines")) read_baselines(reader, *entry, verifier);
  if (auto entry = fields.get("warm_workers")) {
    if (auto value = reader.choice(*entry, kWarmWorkers)) {
      verifier.warm_workers = *value;
      // Forked children cannot use an initialised CUDA or NPU runtime.
      if (*value == "on" && !backend_of(verifier).forks_workers) {
        reader.error(
            *entry,
            fmt::format("warm_workers is on but backend is {}{}", verifier.backend,
                        backend_of(verifier).host_interpreter() ? " on its host interpreter" : ""),
            "warm workers fork from a parent process, which the CUDA and NPU runtimes and the host "
            "interpreters do not allow; set warm_workers: auto (cold workers on that backend) or off");
      }
    }
  }
}

}  // namespace config_detail

}  // namespace kgym
