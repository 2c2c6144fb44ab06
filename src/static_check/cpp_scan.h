#pragma once
// Scans C++/CUDA source text (the strings a candidate hands to load_inline)
// for what the static rules need: calls into ATen/torch compute ops (a
// kernel that only forwards to the library does no work of its own),
// reduced-precision types, reads of the dispatcher's or the interpreter's
// state, and whether any function has a real body.
// Comments and string literals are removed first, so they never count.
#include <string>
#include <string_view>
#include <vector>

namespace kgym::static_check {

struct CppHit {
  std::string name;  // as written without spaces: "at::matmul", ".mm", "__half"
  int line = 0;      // 1-based, within the scanned text
};

struct CppScan {
  std::vector<CppHit> library_calls;      // at::/torch:: compute ops and tensor compute methods
  std::vector<CppHit> reduced_precision;  // at::Half, __half, __nv_bfloat16, ...
  // Reaching into the process around the kernel: the dispatcher's mode
  // stack and the profiler's state (whether the op trace is watching), or
  // the Python interpreter's modules and attributes (the worker's clock and
  // timing code): c10::impl::TorchDispatchModeTLS, py::module_::import,
  // PyObject_SetAttrString, ...
  std::vector<CppHit> introspection;
  // Streams other than the current one: cudaStreamCreate*, getStreamFromPool,
  // cudaStreamPerThread, ... Work launched there is not in the timer's stream.
  std::vector<CppHit> side_streams;
  bool synchronizes = false;       // cudaStreamSynchronize, cudaDeviceSynchronize, ...
  bool has_function_body = false;  // some function (not a macro block) has a statement
  bool has_cuda_kernel = false;    // a __global__ function
};

// Replaces comments and the contents of string/char literals by spaces,
// keeping every line break so line numbers still match.
std::string strip_cpp_comments_and_strings(std::string_view source);

CppScan scan_cpp(std::string_view source);

}  // namespace kgym::static_check
