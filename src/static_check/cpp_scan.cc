#include "static_check/cpp_scan.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace kgym::static_check {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Glue that any kernel needs: allocation, shape/stride queries, dtype and
// device helpers, checks, threading. Matched on the last name component of
// an at::/torch:: call.
const std::set<std::string, std::less<>> kGlueCalls = {"empty",
                                                       "empty_like",
                                                       "empty_strided",
                                                       "zeros",
                                                       "zeros_like",
                                                       "ones",
                                                       "ones_like",
                                                       "full",
                                                       "full_like",
                                                       "from_blob",
                                                       "Tensor",
                                                       "TensorOptions",
                                                       "dtype",
                                                       "device",
                                                       "layout",
                                                       "requires_grad",
                                                       "Device",
                                                       "Scalar",
                                                       "IntArrayRef",
                                                       "ArrayRef",
                                                       "make_optional",
                                                       "scalarTypeToTypeMeta",
                                                       "typeMetaToScalarType",
                                                       "elementSize",
                                                       "toString",
                                                       "parallel_for",
                                                       "get_num_threads",
                                                       "set_num_threads",
                                                       "init_num_threads",
                                                       "in_parallel_region",
                                                       "get_thread_num",
                                                       "getCurrentCUDAStream",
                                                       "getDefaultCUDAStream",
                                                       "getCurrentDeviceProperties",
                                                       "check",
                                                       "isFloatingType",
                                                       "isIntegralType",
                                                       "kCPU",
                                                       "kCUDA",
                                                       "Half",
                                                       "BFloat16",
                                                       "DeviceGuard",
                                                       "OptionalDeviceGuard",
                                                       "CUDAGuard",
                                                       "OptionalCUDAGuard",
                                                       "NoGradGuard",
                                                       "AutoDispatchBelowAutograd",
                                                       "typeMetaToScalarType",
                                                       "result_type",
                                                       "canCast",
                                                       "TensorIterator",
                                                       "MemoryFormat",
                                                       "get_device",
                                                       "Generator",
                                                       "make_tensor"};

// Namespaces whose calls are glue, whatever the function: CUDA runtime
// helpers, indexing sugar, type traits.
const std::set<std::string, std::less<>> kGlueNamespaces = {"cuda",   "indexing",     "detail", "ScalarType",
                                                            "Layout", "MemoryFormat", "cpu"};

// Tensor methods that compute (a call of one of these on anything counts).
const std::set<std::string, std::less<>> kComputeMethods = {
    "matmul",       "mm",         "bmm",         "addmm",  "addmv",      "addbmm", "baddbmm",     "mv",
    "dot",          "einsum",     "relu",        "relu_",  "leaky_relu", "gelu",   "silu",        "sigmoid",
    "tanh",         "softmax",    "log_softmax", "exp",    "log",        "sum",    "mean",        "var",
    "norm",         "linear",     "conv1d",      "conv2d", "conv3d",     "clamp",  "clamp_min",   "clamp_max",
    "max",          "min",        "amax",        "amin",   "mul",        "mul_",   "add",         "add_",
    "sub",          "sub_",       "div",         "div_",   "pow",        "sqrt",   "rsqrt",       "abs",
    "neg",          "cumsum",     "cumprod",     "prod",   "argmax",     "argmin", "topk",        "sort",
    "layer_norm",   "batch_norm", "group_norm",  "square", "erf",        "where",  "masked_fill", "mse_loss",
    "cross_entropy"};

const std::set<std::string, std::less<>> kReducedPrecision = {
    "at::Half",         "c10::Half",     "at::BFloat16",   "c10::BFloat16", "__half",
    "__half2",          "__nv_bfloat16", "__nv_bfloat162", "torch::kHalf",  "torch::kFloat16",
    "torch::kBFloat16", "at::kHalf",     "at::kBFloat16"};

// Last components of names that read the dispatcher's modes, the
// profiler's state, or that reach the interpreter from C++.
const std::set<std::string, std::less<>> kIntrospection = {"TorchDispatchModeTLS",
                                                           "dispatch_mode_enabled",
                                                           "tls_is_dispatch_key_included",
                                                           "tls_is_dispatch_key_excluded",
                                                           "tls_local_dispatch_key_set",
                                                           "PythonTorchFunctionTLS",
                                                           "torch_function_mode_enabled",
                                                           "PythonDispatcherTLS",
                                                           "profilerEnabled",
                                                           "isRecordFunctionEnabled",
                                                           "hasCallbacks",
                                                           "hasGlobalCallbacks",
                                                           "hasThreadLocalCallbacks",
                                                           "getProfilerConfig",
                                                           "isProfilerEnabledInMainThread",
                                                           "PyImport_ImportModule",
                                                           "PyImport_Import",
                                                           "PyImport_AddModule",
                                                           "PyImport_GetModuleDict",
                                                           "PyObject_SetAttr",
                                                           "PyObject_SetAttrString",
                                                           "PyObject_GenericSetAttr",
                                                           "PyEval_SetProfile",
                                                           "PyEval_SetTrace",
                                                           "PyEval_GetFrame",
                                                           "PySys_GetObject",
                                                           "PySys_SetObject",
                                                           "PyEval_GetGlobals",
                                                           "PyEval_GetBuiltins"};

const std::set<std::string, std::less<>> kNotFunctions = {"if",
                                                          "for",
                                                          "while",
                                                          "switch",
                                                          "catch",
                                                          "return",
                                                          "PYBIND11_MODULE",
                                                          "TORCH_LIBRARY",
                                                          "TORCH_LIBRARY_IMPL",
                                                          "sizeof",
                                                          "decltype"};

struct Word {
  std::string text;  // a qualified name ("at::native::add") or a single punctuation character
  std::size_t pos = 0;
  int line = 1;
  bool method = false;  // preceded by '.' or '->'
};

std::vector<Word> words(const std::string& s) {
  std::vector<Word> out;
  int line = 1;
  for (std::size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '\n') ++line;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (ident_char(c) || (c == ':' && i + 1 < s.size() && s[i + 1] == ':')) {
      Word w{"", i, line, false};
      while (i < s.size()) {
        if (ident_char(s[i])) {
          w.text += s[i++];
        } else if (s[i] == ' ' || s[i] == '\t') {
          std::size_t next = s.find_first_not_of(" \t", i);  // "torch :: relu"
          if (next == std::string::npos || s.compare(next, 2, "::") != 0) break;
          i = next;
        } else if (s.compare(i, 2, "::") == 0) {
          w.text += "::";
          i += 2;
          while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
        } else {
          break;
        }
      }
      if (!out.empty() && (out.back().text == "." || out.back().text == "->")) w.method = true;
      out.push_back(std::move(w));
      continue;
    }
    if (c == '-' && i + 1 < s.size() && s[i + 1] == '>') {
      out.push_back(Word{"->", i, line, false});
      i += 2;
      continue;
    }
    out.push_back(Word{std::string(1, c), i, line, false});
    ++i;
  }
  return out;
}

std::vector<std::string> split_qualified(std::string_view name) {
  std::vector<std::string> parts;
  std::size_t start = name.starts_with("::") ? 2 : 0;
  while (start <= name.size()) {
    std::size_t sep = name.find("::", start);
    parts.emplace_back(
        name.substr(start, sep == std::string_view::npos ? std::string_view::npos : sep - start));
    if (sep == std::string_view::npos) break;
    start = sep + 2;
  }
  return parts;
}

// Switching dispatch keys or modes from C++, or calling below them: a key
// set excluded or forced (ExcludeDispatchKeyGuard, tls_set_dispatch_key_*,
// _force_tls_local_dispatch_key_set), an explicit DispatchKey or
// DispatchKeySet, `redispatch`. Any of these can step past the Python key,
// where the op trace listens. AutoDispatchBelowAutograd (autograd keys
// only) stays glue.
bool cpp_switches_dispatch(std::string_view part) {
  if (part == "redispatch" || part == "redispatchBoxed" || part == "callBoxedForDispatchKey") return true;
  for (std::string_view word : {"DispatchKeyGuard", "DispatchKeySet", "LocalDispatchKey", "dispatch_key_",
                                "dispatch_key_set", "DispatchMode", "dispatch_mode", "TLSSnapshot", "PythonTLS",
                                "TorchFunction", "torch_function"}) {
    if (part.find(word) != std::string_view::npos) return true;
  }
  return false;
}

// DispatchKey::Python, DispatchKey::PythonTLSSnapshot, ...: naming the key
// the op trace listens on.
bool names_python_key(const std::vector<std::string>& parts) {
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i] == "DispatchKey" && parts[i + 1].starts_with("Python")) return true;
  }
  return false;
}

bool is_introspection(const Word& w) {
  if (w.method) return w.text == "setattr" || cpp_switches_dispatch(w.text);
  auto parts = split_qualified(w.text);
  if (parts.empty()) return false;
  if (names_python_key(parts) || std::ranges::any_of(parts, [](const std::string& part) {
        return kIntrospection.contains(part) || cpp_switches_dispatch(part);
      }))
    return true;
  // py::module_::import / pybind11::module::import / py::setattr /
  // py::globals: the interpreter's modules from C++.
  bool pybind = parts.size() >= 2 && (parts[0] == "py" || parts[0] == "pybind11");
  return pybind && (parts.back() == "import" || parts.back() == "setattr" || parts.back() == "globals" ||
                    parts.back() == "delattr");
}

// NVIDIA's and others' GPU libraries: a call computes the op in the library.
bool is_vendor_library_call(const std::vector<std::string>& parts) {
  if (parts.empty()) return false;
  for (std::string_view prefix : {"cublas", "cudnn", "cusparse", "cufft", "cusolver"}) {
    if (parts.back().starts_with(prefix)) return true;
  }
  // cub::DeviceReduce::Sum, cutlass::gemm::..., at::cuda::blas::gemm
  return parts.size() >= 2 && (parts[0] == "cub" || parts[0] == "cutlass" || parts[0] == "thrust" ||
                               std::ranges::find(parts, "blas") != parts.end());
}

bool is_library_call(const Word& w) {
  if (w.method) return kComputeMethods.contains(w.text);
  auto parts = split_qualified(w.text);
  if (is_vendor_library_call(parts)) return true;
  if (parts.size() < 2 || (parts[0] != "at" && parts[0] != "torch")) return false;
  if (std::ranges::find(parts, "native") != parts.end()) return true;
  if (std::ranges::find(parts, "functional") != parts.end()) return true;
  if (kGlueNamespaces.contains(parts[1])) return false;
  if (parts.back().starts_with("k")) return false;  // torch::kFloat32(...) style constants
  return !kGlueCalls.contains(parts.back());
}

// Index of the matching closer of the bracket at `open`, or words.size().
std::size_t matching(const std::vector<Word>& ws, std::size_t open) {
  const std::string& o = ws[open].text;
  std::string c = o == "(" ? ")" : o == "{" ? "}" : "]";
  int depth = 0;
  for (std::size_t i = open; i < ws.size(); ++i) {
    if (ws[i].text == o) ++depth;
    if (ws[i].text == c && --depth == 0) return i;
  }
  return ws.size();
}

bool body_has_statement(const std::vector<Word>& ws, std::size_t open, std::size_t close) {
  for (std::size_t i = open + 1; i < close; ++i) {
    if (ws[i].text == ";") return true;
  }
  return false;
}

}  // namespace

std::string strip_cpp_comments_and_strings(std::string_view src) {
  std::string out(src);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out.compare(i, 2, "//") == 0) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      std::size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i) {
        if (out[i] != '\n') out[i] = ' ';
      }
      --i;
    } else if (out[i] == '"' || out[i] == '\'') {
      // R"delim( ... )delim" raw strings end at their own delimiter.
      if (out[i] == '"' && i > 0 && out[i - 1] == 'R') {
        std::size_t paren = out.find('(', i);
        if (paren != std::string::npos) {
          std::string closer = ")" + out.substr(i + 1, paren - i - 1) + "\"";
          std::size_t end = out.find(closer, paren);
          end = end == std::string::npos ? out.size() : end + closer.size();
          for (std::size_t k = i + 1; k + 1 < end; ++k) {
            if (out[k] != '\n') out[k] = ' ';
          }
          i = end - 1;
          continue;
        }
      }
      char quote = out[i];
      std::size_t k = i + 1;
      for (; k < out.size() && out[k] != quote && out[k] != '\n'; ++k) {
        if (out[k] == '\\' && k + 1 < out.size() && out[k + 1] != '\n') out[k++] = ' ';
        out[k] = ' ';
      }
      i = k;
    }
  }
  return out;
}

CppScan scan_cpp(std::string_view source) {
  CppScan scan;
  std::string code = strip_cpp_comments_and_strings(source);
  // Preprocessor lines (#include <torch/extension.h>, #pragma omp ...) are not code.
  for (std::size_t i = 0; i < code.size(); ++i) {
    std::size_t first = code.find_first_not_of(" \t", i);
    if (first != std::string::npos && code[first] == '#') {
      for (std::size_t k = first; k < code.size() && code[k] != '\n'; ++k) {
        bool continued = code[k] == '\\' && k + 1 < code.size() && code[k + 1] == '\n';
        code[k] = ' ';
        if (continued) ++k;
      }
    }
    i = code.find('\n', i);
    if (i == std::string::npos) break;
  }
  std::vector<Word> ws = words(code);
  // `using namespace at;` / `using namespace torch;` make unqualified
  // compute calls library calls (`relu(x)` is at::relu), unless the source
  // defines a function of that name itself; `using at::relu;` does the same
  // for one name.
  std::string using_namespace;
  std::set<std::string, std::less<>> using_names, defined;
  for (std::size_t i = 0; i + 1 < ws.size(); ++i) {
    if (ws[i].text != "using") continue;
    if (ws[i + 1].text == "namespace" && i + 2 < ws.size()) {
      auto parts = split_qualified(ws[i + 2].text);
      if (!parts.empty() && (parts[0] == "at" || parts[0] == "torch")) using_namespace = ws[i + 2].text;
    } else {
      auto parts = split_qualified(ws[i + 1].text);
      if (parts.size() >= 2 && (parts[0] == "at" || parts[0] == "torch") && is_library_call(ws[i + 1]))
        using_names.insert(parts.back());
    }
  }
  for (std::size_t i = 1; i + 1 < ws.size(); ++i) {
    if (ws[i].text != "(" || !ident_char(ws[i - 1].text[0]) || kNotFunctions.contains(ws[i - 1].text))
      continue;
    std::size_t k = matching(ws, i) + 1;
    while (k < ws.size() && k < i + 64 && ws[k].text != "{" && ws[k].text != ";" && ws[k].text != "(") ++k;
    if (k < ws.size() && ws[k].text == "{") defined.insert(ws[i - 1].text);
  }
  for (std::size_t i = 0; i < ws.size(); ++i) {
    const Word& w = ws[i];
    bool unqualified_call = !w.method && i + 1 < ws.size() && ws[i + 1].text == "(" &&
                            w.text.find("::") == std::string::npos && !defined.contains(w.text) &&
                            (i == 0 || ws[i - 1].text != "using");
    if (unqualified_call &&
        ((!using_namespace.empty() && kComputeMethods.contains(w.text)) || using_names.contains(w.text))) {
      std::string via =
          using_names.contains(w.text) ? "a using-declaration" : "using namespace " + using_namespace;
      scan.library_calls.push_back({w.text + " (via " + via + ")", w.line});
      continue;
    }
    if (w.text == "__global__") scan.has_cuda_kernel = true;
    if (auto last = split_qualified(w.text); !last.empty() && !w.method) {
      const std::string& name = last.back();
      if (name.starts_with("cudaStreamCreate") || name == "getStreamFromPool" ||
          name == "getStreamFromExternal" || name == "cudaStreamPerThread" || name == "cudaStreamNonBlocking")
        scan.side_streams.push_back({w.text, w.line});
      if (name == "cudaStreamSynchronize" || name == "cudaDeviceSynchronize" ||
          name == "cudaEventSynchronize" || name == "cudaStreamWaitEvent")
        scan.synchronizes = true;
    }
    if (w.method && (w.text == "synchronize" || w.text == "wait_stream")) scan.synchronizes = true;
    if (kReducedPrecision.contains(w.text)) scan.reduced_precision.push_back({w.text, w.line});
    if (is_introspection(w)) scan.introspection.push_back({(w.method ? "." : "") + w.text, w.line});
    bool call = i + 1 < ws.size() && (ws[i + 1].text == "(" || (!w.method && ws[i + 1].text == "<"));
    if (call && !w.text.empty() && (ident_char(w.text[0]) || w.text[0] == ':') && is_library_call(w)) {
      scan.library_calls.push_back({(w.method ? "." : "") + w.text, w.line});
    }
    // A function definition: name ( params ) [qualifiers] { ...; }
    if (ws[i].text == "(" && i > 0 && !kNotFunctions.contains(ws[i - 1].text) &&
        ident_char(ws[i - 1].text[0])) {
      std::size_t close = matching(ws, i);
      std::size_t k = close + 1;
      while (k < ws.size() && ws[k].text != "{" && ws[k].text != ";" && ws[k].text != "(" && k < close + 8)
        ++k;
      if (k < ws.size() && ws[k].text == "{" && body_has_statement(ws, k, matching(ws, k))) {
        scan.has_function_body = true;
      }
    }
  }
  return scan;
}

}  // namespace kgym::static_check
