#include "verify/cpu_profile.h"

#include <algorithm>
#include <array>
#include <optional>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace kgym::verify {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string base_name(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// Code in no file: perf's name for a sample it could not place in a mapped
// object, and for anonymous executable memory.
bool fileless(std::string_view object) {
  return object == "[unknown]" || object == "[unreadable]" || object.starts_with("//anon") || object.starts_with("[anon") ||
         object.starts_with("/memfd:") || object == "[heap]" || object == "[stack]";
}

}  // namespace

namespace {

bool kernel_object(std::string_view object) { return object.starts_with("[kernel"); }

// The object of "<ip> (<object>)"; empty for anything else (perf's messages).
std::string_view frame_object(std::string_view line) {
  line = trim(line);
  auto space = line.find(' ');
  if (space == std::string_view::npos || line.back() != ')' ||
      !std::ranges::all_of(line.substr(0, space), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
    return {};
  std::string_view object = trim(line.substr(space + 1));
  if (!object.starts_with('(')) return {};
  return trim(object.substr(1, object.size() - 2));
}

}  // namespace

PerfScript parse_perf_script(std::string_view text) {
  // With call chains (perf record -g) a sample is its header line (the
  // pid) and a block of frames, each on a line of its own starting with a
  // tab, the sampled one first; a blank line ends it. A sample in the
  // kernel counts for the first user frame under it (the code whose system
  // call or page fault the kernel was serving: that frame comes from the
  // registers, not from unwinding); frames further down are not used.
  PerfScript out;
  std::optional<int> pid;                  // the sample being read
  std::vector<std::string_view> block;     // its frames
  bool unreadable = false;                 // a line of its chain is no frame
  auto flush = [&] {
    if (pid) {
      // No user frame: time in the kernel with no user code under it. A
      // chain with a line that is no frame was bent by an object's name
      // holding a line break, and whatever that line hid is not believed.
      auto user = std::ranges::find_if(block, [](std::string_view o) { return !kernel_object(o); });
      std::string_view object = unreadable             ? "[unreadable]"
                                : user != block.end() ? *user
                                                      : "[kernel.kallsyms]";
      ++out.by_process[*pid][std::string(object)];
    }
    pid.reset();
    block.clear();
    unreadable = false;
  };
  auto number = [](std::string_view s) -> std::optional<int> {
    int value = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return value;
  };
  while (!text.empty()) {
    auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (trim(line).empty()) {
      flush();
      continue;
    }
    if (line.front() == '\t') {
      auto object = frame_object(line);
      if (object.empty()) unreadable = true;
      else block.push_back(object);
      continue;
    }
    flush();
    std::string_view rest = trim(line);
    // "<pid> PERF_RECORD_FORK(<child>:<tid>):(<parent>:<tid>)"
    if (auto fork = rest.find("PERF_RECORD_FORK("); fork != std::string_view::npos) {
      std::string_view args = rest.substr(fork + 17);
      auto colon = args.find(':'), open = args.find(":(");
      if (colon == std::string_view::npos || open == std::string_view::npos) continue;
      auto child = number(args.substr(0, colon));
      std::string_view parent_text = args.substr(open + 2);
      auto parent = number(parent_text.substr(0, parent_text.find(':')));
      if (child && parent && *child != *parent) out.parents[*child] = *parent;
      continue;
    }
    if (rest.find("PERF_RECORD_") != std::string_view::npos) continue;
    pid = number(rest);  // a sample's header line: its pid
  }
  flush();
  return out;
}

std::map<int, std::int64_t> parse_perf_pids(std::string_view text) {
  std::map<int, std::int64_t> out;
  while (!text.empty()) {
    auto eol = text.find('\n');
    std::string_view line = trim(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    int pid = 0;
    auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
    if (!line.empty() && ec == std::errc() && end == line.data() + line.size()) ++out[pid];
  }
  return out;
}

bool below(const PerfScript& script, const std::set<int>& roots, int pid) {
  // Up the parents until a root, or none (a bounded walk: a record could
  // loop).
  int at = pid;
  for (int steps = 0; steps < 64; ++steps) {
    if (roots.contains(at)) return true;
    auto parent = script.parents.find(at);
    if (parent == script.parents.end()) return false;
    at = parent->second;
  }
  return false;
}

ObjectSamples samples_below(const PerfScript& script, const std::set<int>& roots) {
  ObjectSamples out;
  for (const auto& [pid, samples] : script.by_process) {
    if (!below(script, roots, pid)) continue;
    for (const auto& [object, count] : samples) out[object] += count;
  }
  return out;
}

std::vector<int> miscounted_below(const PerfScript& script, const std::set<int>& roots) {
  std::set<int> pids;
  for (const auto& [pid, samples] : script.by_process)
    if (below(script, roots, pid)) pids.insert(pid);
  for (const auto& [pid, count] : script.totals)
    if (below(script, roots, pid)) pids.insert(pid);
  std::vector<int> out;
  for (int pid : pids) {
    std::int64_t shown = 0;
    if (auto it = script.by_process.find(pid); it != script.by_process.end())
      for (const auto& [object, count] : it->second) shown += count;
    auto total = script.totals.find(pid);
    if (shown != (total == script.totals.end() ? 0 : total->second)) out.push_back(pid);
  }
  return out;
}

std::map<std::string, std::string> parse_perf_build_ids(std::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    auto eol = text.find('\n');
    std::string_view line = trim(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    auto space = line.find(' ');
    if (space == std::string_view::npos || space == 0) continue;
    std::string_view id = line.substr(0, space);
    if (!std::ranges::all_of(id, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) continue;
    out[std::string(trim(line.substr(space + 1)))] = std::string(id);
  }
  return out;
}

bool library_file_name(std::string_view path) {
  std::string name = base_name(path);
  // PyTorch's compute (not libc10, its allocator and dispatcher core, nor
  // libtorch_python, the bindings), the BLAS and LAPACK implementations it
  // or numpy link, oneDNN, and the vendors' device libraries.
  static constexpr std::array<std::string_view, 22> kPrefixes = {
      "libtorch_cpu.",   "libtorch_cuda.",   "libtorch.",      "libtorch_cuda_",  "libopenblas",
      "libblas.",        "libcblas.",        "liblapack.",     "libmkl_",         "libdnnl.",
      "libmkldnn.",      "libsleef.",        "libcublas",      "libcudnn",        "libfbgemm.",
      "libXNNPACK.",     "libnnpack.",       "libqnnpack.",    "libblis.",        "libflexiblas",
      "libgfortranblas", "libscipy_openblas"};
  return std::ranges::any_of(kPrefixes, [&](std::string_view p) { return name.starts_with(p); });
}

SideProfile classify_samples(const ObjectSamples& samples, const std::map<std::string, std::string>& build_ids,
                             const KnownObjects& known, std::int64_t calls) {
  std::set<std::string> library = known.library;
  for (const auto& [path, id] : build_ids)
    if (library_file_name(path)) library.insert(id);
  auto kind_of = [&](const std::string& object) -> std::string {
    if (object == "[kernel.kallsyms]" || object.starts_with("[kernel") || object == "[vdso]" ||
        object == "[vsyscall]" || object == "[vectors]")
      return "kernel";
    if (fileless(object)) return "fileless";
    if (base_name(object).starts_with("libc.so")) return "libc";
    auto it = build_ids.find(object);
    std::optional<std::string> id;
    if (it != build_ids.end()) id = it->second;
    if (library_file_name(object) || (id && library.contains(*id))) return "library";
    if (id && known.own.contains(*id)) return "own";
    if (!known.judge_foreign) return "runtime";
    if (id && known.reference.contains(*id)) return "runtime";
    return "foreign";
  };
  SideProfile side;
  side.calls = calls;
  for (const auto& [object, count] : samples) {
    std::string kind = kind_of(object);
    side.samples += count;
    if (kind == "library" || kind == "foreign" || kind == "fileless") side.library_samples += count;
    if (kind == "libc") side.libc_samples += count;
    std::string name = object.starts_with("[") ? object : base_name(object);
    side.objects.push_back({name, count, kind});
  }
  std::ranges::stable_sort(side.objects, [](const auto& a, const auto& b) { return a.samples > b.samples; });
  return side;
}

namespace {

std::string top_objects(const SideProfile& side, std::size_t n) {
  std::vector<std::string> parts;
  for (const auto& o : side.objects) {
    if (parts.size() == n) break;
    parts.push_back(fmt::format("{} {:.0f}% ({})", o.name, 100.0 * o.samples / std::max<std::int64_t>(side.samples, 1),
                                o.kind));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::optional<CheatFinding> library_compute_finding(const SideProfile& candidate, const SideProfile& reference,
                                                    const LibraryAllowance& allowance) {
  if (candidate.calls <= 0 || candidate.library_samples < allowance.min_candidate_samples) return std::nullopt;
  bool reference_judged = reference.calls > 0 && reference.library_samples >= allowance.min_reference_samples;
  double ratio = reference_judged ? candidate.library_per_call() / reference.library_per_call() : 0;
  bool dominant = candidate.library_share() >= allowance.dominant_share;
  bool as_much = reference_judged && ratio >= allowance.per_call_ratio &&
                 candidate.library_share() >= allowance.candidate_share;
  if (!dominant && !as_much) return std::nullopt;
  return CheatFinding{
      "runtime.op_trace", "runtime",
      fmt::format("sampled from outside its processes, the candidate spent {:.0f}% of its CPU time outside libc "
                  "in library code (or code that is neither its build nor the reference's), {:.2f}x the "
                  "reference's library time per call ({} samples over {} calls; the "
                  "reference: {} over {}): library compute instead of its own kernel. Candidate: {}. "
                  "Reference: {}",
                  100 * candidate.library_share(), ratio, candidate.library_samples, candidate.calls,
                  reference.library_samples, reference.calls, top_objects(candidate, 4), top_objects(reference, 4))};
}

nlohmann::json side_profile_json(const SideProfile& side) {
  nlohmann::json objects = nlohmann::json::array();
  for (const auto& o : side.objects) {
    if (objects.size() == 8) break;
    objects.push_back({{"object", o.name}, {"samples", o.samples}, {"kind", o.kind}});
  }
  return {{"calls", side.calls},
          {"samples", side.samples},
          {"library_samples", side.library_samples},
          {"libc_samples", side.libc_samples},
          {"objects", objects}};
}

}  // namespace kgym::verify
