#include "static_check/rules.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "static_check/rules_test_util.h"

namespace kgym::static_check {
namespace {

using testing::candidate;
using testing::check;
using testing::check_rule;
using Strings = std::vector<std::string>;

TEST(Rules, HonestCandidateHasNoFinding) { EXPECT_EQ(check(candidate()), Strings{}); }

TEST(Rules, NoModelNew) {
  EXPECT_EQ(check_rule("import torch\nclass Model2:\n    pass\n", "static.no_model_new"),
            Strings{"fatal@0:ModelNew"});
  EXPECT_EQ(check_rule(candidate(), "static.no_model_new"), Strings{});
}

TEST(Rules, NoKernelWhenForwardCallsTheLibrary) {
  std::string src =
      "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
      "        # a comment about load_inline\n        return torch.nn.functional.leaky_relu(x, 0.05)\n";
  auto findings = check_candidate(src, "model_new.py", {});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "static.no_kernel");
  EXPECT_EQ(findings[0].evidence(), "model_new.py:7: torch.nn.functional.leaky_relu");
  EXPECT_EQ(findings[0].message,
            "forward calls torch.nn.functional.leaky_relu and no load_inline kernel is defined");
}

TEST(Rules, NoKernelWhenTheSourcesAreEmptyOrUnused) {
  std::string empty_body = candidate();
  empty_body.replace(empty_body.find("torch::Tensor relu_forward"), 0, "void g() {}\n/*");
  empty_body.replace(empty_body.find("}\n\"\"\""), 2, "*/\n");
  EXPECT_EQ(check_rule(empty_body, "static.no_kernel"), Strings{"fatal@19:ModelNew"}) << empty_body;
  EXPECT_EQ(check_rule(candidate("", "        return torch.relu(x)\n"), "static.no_kernel"),
            Strings{"fatal@20:torch.relu"});
  // Built inside a helper and bound at module level: still followed.
  std::string via_builder = candidate();
  via_builder.replace(via_builder.find("_ext = load_inline"), 6, "def build():\n    return ");
  via_builder.replace(via_builder.find("\nclass ModelNew"), 0, "_ext = build()\n");
  EXPECT_EQ(check_rule(via_builder, "static.no_kernel"), Strings{});
}

TEST(Rules, RenamedImportsAreFollowed) {
  // An honest kernel built through a renamed load_inline or cpp_extension.
  std::string renamed = candidate();
  renamed.replace(renamed.find("from torch.utils.cpp_extension import load_inline"), 49,
                  "from torch.utils.cpp_extension import load_inline as li");
  renamed.replace(renamed.find("_ext = load_inline("), 19, "_ext = li(");
  EXPECT_EQ(check(renamed), Strings{}) << renamed;
  std::string module_alias = candidate("import torch.utils.cpp_extension as ce\n");
  module_alias.replace(module_alias.find("_ext = load_inline("), 19, "_ext = ce.load_inline(");
  EXPECT_EQ(check(module_alias), Strings{}) << module_alias;
  // A library call through a renamed module is named with what it is.
  auto findings = check_candidate(
      "import torch.nn.functional as F2\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
      "    def forward(self, x):\n        return F2.relu(x)\n",
      "model_new.py", {});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "static.no_kernel");
  EXPECT_EQ(findings[0].evidence(), "model_new.py:6: F2.relu (torch.nn.functional.relu)");
}

TEST(Rules, KernelKindsPerBackend) {
  CheckOptions cuda{.backend = "cuda"};
  EXPECT_EQ(check_rule(candidate(), "static.no_kernel", cuda), Strings{"fatal@18:ModelNew"});
  std::string triton =
      "import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    pass\n\n"
      "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        k[(1,)](x)\n        return x\n";
  EXPECT_EQ(check_rule(triton, "static.no_kernel", cuda), Strings{});
  CheckOptions npu{.backend = "npu"};
  std::string pypto =
      "import pypto\n\n@pypto.jit\ndef k(x):\n    pass\n\nclass ModelNew:\n    def forward(self, x):\n"
      "        return k(x)\n";
  EXPECT_EQ(check_rule(pypto, "static.no_kernel", npu), Strings{});
  EXPECT_EQ(check_rule(pypto, "static.no_kernel"), Strings{"fatal@7:ModelNew"});
}

TEST(Rules, ReferenceImport) {
  EXPECT_EQ(check_rule(candidate("from task_desc import Model\n"), "static.reference_import"),
            (Strings{"fatal@5:task_desc", "fatal@5:import Model"}));
  EXPECT_EQ(check_rule(candidate("import task_desc as ref\n"), "static.reference_import"),
            Strings{"fatal@5:task_desc"});
  std::string subclass = candidate();
  subclass.replace(subclass.find("ModelNew(nn.Module)"), 19, "ModelNew(Model)");
  EXPECT_EQ(check_rule(subclass, "static.reference_import"), Strings{"fatal@18:class ModelNew(Model)"});
  EXPECT_EQ(check_rule(candidate("m = __import__(\"task_desc\")\n"), "static.reference_import"),
            Strings{"fatal@5:__import__(\"task_desc\")"});
  // Mentions in comments and strings are not imports.
  EXPECT_EQ(check_rule(candidate("# unlike task_desc, no Model here\nNOTE = 'from task_desc import Model'\n"),
                       "static.reference_import"),
            Strings{});
}

TEST(Rules, TryFallback) {
  std::string fallback = candidate("",
                                   "        try:\n            return _ext.relu_forward(x)\n"
                                   "        except Exception:\n            return torch.relu(x)\n");
  EXPECT_EQ(check_rule(fallback, "static.try_fallback"), Strings{"fatal@23:return"});
  std::string inline_fallback = candidate("",
                                          "        try:\n            return _ext.relu_forward(x)\n"
                                          "        except RuntimeError as e: print(e); y = x.clamp(0)\n"
                                          "        return y\n");
  EXPECT_EQ(check_rule(inline_fallback, "static.try_fallback"), Strings{"fatal@22:y"});
  std::string reraise =
      candidate("try:\n    import numpy\nexcept ImportError:\n    numpy = None\n",
                "        try:\n            return _ext.relu_forward(x)\n        except Exception as e:\n"
                "            print('kernel failed', e)\n            logging.error('x')\n            raise\n");
  EXPECT_EQ(check_rule(reraise, "static.try_fallback"), Strings{});
}

TEST(Rules, Monkeypatch) {
  EXPECT_EQ(check_rule(candidate("import time\ntime.perf_counter = lambda: 0.0\n"), "static.monkeypatch"),
            Strings{"fatal@6:time.perf_counter"});
  EXPECT_EQ(check_rule(candidate("torch.nn.functional.relu = lambda x: x\n"), "static.monkeypatch"),
            Strings{"fatal@5:torch.nn.functional.relu"});
  EXPECT_EQ(check_rule(candidate("import sys\nsys.modules['torch'] = None\n"), "static.monkeypatch"),
            Strings{"fatal@6:sys.modules['torch']"});
  EXPECT_EQ(check_rule(candidate("setattr(torch.Tensor, 'relu', f)\n"), "static.monkeypatch"),
            Strings{"fatal@5:setattr(torch.Tensor"});
  EXPECT_EQ(check_rule(candidate("import builtins\n"), "static.monkeypatch"), Strings{"fatal@5:builtins"});
  EXPECT_EQ(check_rule(candidate("torch.backends.cudnn.benchmark = True\n"), "static.monkeypatch"),
            Strings{"warn@5:torch.backends.cudnn.benchmark"});
  // Attributes of objects, comparisons and comments are not patches.
  EXPECT_EQ(check_rule(candidate("# torch.relu = f\nclass Cfg:\n    pass\ncfg = Cfg()\ncfg.x = 1\n"
                                 "ok = torch.float32 == torch.float32\n"),
                       "static.monkeypatch"),
            Strings{});
}

TEST(Rules, Concurrency) {
  EXPECT_EQ(check_rule(candidate("import threading\n"), "static.concurrency"), Strings{"fatal@5:threading"});
  EXPECT_EQ(
      check_rule(candidate("from concurrent.futures import ThreadPoolExecutor\n"), "static.concurrency"),
      Strings{"fatal@5:concurrent.futures"});
  EXPECT_EQ(check_rule(candidate("import os\npid = os.fork()\n"), "static.concurrency"),
            Strings{"fatal@6:os.fork"});
  EXPECT_EQ(check_rule(candidate("import subprocess as sp\n"), "static.concurrency"),
            Strings{"fatal@5:subprocess"});
  EXPECT_EQ(check_rule(candidate("signal = 3\n"), "static.concurrency"), Strings{});
}

TEST(Rules, Introspection) {
  EXPECT_EQ(check_rule(candidate("import inspect\n"), "static.introspection"), Strings{"fatal@5:inspect"});
  EXPECT_EQ(check_rule(candidate("import sys\nf = sys._getframe(1).f_back\n"), "static.introspection"),
            (Strings{"fatal@6:sys._getframe", "fatal@6:f_back"}));
  EXPECT_EQ(check_rule(candidate("import gc\nobjs = gc.get_objects()\n"), "static.introspection"),
            Strings{"fatal@6:gc.get_objects"});
  EXPECT_EQ(check_rule(candidate("p = __builtins__\n"), "static.introspection"),
            Strings{"fatal@5:__builtins__"});
  EXPECT_EQ(check_rule(candidate("msg = f'{inspect.stack()}'\n"), "static.introspection"),
            Strings{"fatal@5:inspect.stack"});
  EXPECT_EQ(
      check_rule(candidate("traced = torch._C._len_torch_dispatch_stack() > 0\n"), "static.introspection"),
      Strings{"fatal@5:torch._C._len_torch_dispatch_stack"});
  EXPECT_EQ(
      check_rule(
          candidate("from torch.utils import _python_dispatch as pd\nm = pd._get_current_dispatch_mode()\n"),
          "static.introspection"),
      (Strings{"fatal@5:pd", "fatal@6:pd._get_current_dispatch_mode"}));
  EXPECT_EQ(check_rule(candidate("on = torch.autograd.profiler._is_profiler_enabled\n"), "static.introspection"),
            Strings{"fatal@5:torch.autograd.profiler._is_profiler_enabled"});
  EXPECT_EQ(check_rule(candidate("import gc\ngc.collect()\n\"\"\"inspect sys._getframe\"\"\"\n"),
                       "static.introspection"),
            Strings{});
}

TEST(Rules, SwitchingDispatchOffIsIntrospection) {
  // The op trace is a dispatch mode: every way of switching modes or keys
  // off, or of calling below them, by any spelling.
  EXPECT_EQ(check_rule(candidate("from torch.utils._mode_utils import no_dispatch\n"), "static.introspection"),
            (Strings{"fatal@5:torch.utils._mode_utils", "fatal@5:no_dispatch"}));
  EXPECT_EQ(check_rule(candidate("guard = torch._C._DisableTorchDispatch()\n"), "static.introspection"),
            Strings{"fatal@5:torch._C._DisableTorchDispatch"});
  EXPECT_EQ(check_rule(candidate("from torch._C import DisableTorchFunction as D\ng = D()\n"),
                       "static.introspection"),
            (Strings{"fatal@5:D", "fatal@6:D"}));
  EXPECT_EQ(check_rule(candidate("k = torch._C._dispatch_tls_set_dispatch_key_excluded\n"), "static.introspection"),
            Strings{"fatal@5:torch._C._dispatch_tls_set_dispatch_key_excluded"});
  EXPECT_EQ(check_rule(candidate("g = torch._C._ExcludeDispatchKeyGuard(ks)\n"), "static.introspection"),
            Strings{"fatal@5:torch._C._ExcludeDispatchKeyGuard"});
  EXPECT_EQ(check_rule(candidate("m = torch._C._unset_dispatch_mode\n"), "static.introspection"),
            Strings{"fatal@5:torch._C._unset_dispatch_mode"});
  EXPECT_EQ(check_rule(candidate("y = torch.ops.aten.relu.default.redispatch(ks, x)\n"), "static.introspection"),
            Strings{"fatal@5:torch.ops.aten.relu.default.redispatch"});
  // A torch name computed at run time, which no rule can read.
  EXPECT_EQ(check_rule(candidate("off = getattr(torch._C, '_Disable' + 'TorchDispatch')\n"), "static.introspection"),
            Strings{"fatal@5:getattr(torch._C, ...)"});
  EXPECT_EQ(check_rule(candidate("f = getattr(torch, name)\n"), "static.introspection"),
            Strings{"fatal@5:getattr(torch, ...)"});
  EXPECT_EQ(check_rule(candidate("dt = getattr(torch, 'float32')\nv = getattr(self, name)\n"),
                       "static.introspection"),
            Strings{});
  // Glue that touches none of it stays clean.
  EXPECT_EQ(check_rule(candidate("y = torch.empty_like(x)\nwith torch.no_grad():\n    pass\n"),
                       "static.introspection"),
            Strings{});
}

TEST(Rules, FileAccess) {
  EXPECT_EQ(check_rule(candidate("data = open('/work/data/ref.pt', 'rb').read()\n"), "static.file_access"),
            Strings{"fatal@5:open('/work/data/ref.pt')"});
  EXPECT_EQ(check_rule(candidate("data = open('../task_desc.py').read()\n"), "static.file_access"),
            Strings{"fatal@5:open('../task_desc.py')"});
  EXPECT_EQ(check_rule(candidate("import shutil\nshutil.rmtree('x')\n"), "static.file_access"),
            (Strings{"fatal@5:shutil", "fatal@6:shutil.rmtree"}));
  EXPECT_EQ(check_rule(candidate("import os\nos.remove('a')\n"), "static.file_access"),
            Strings{"fatal@6:os.remove"});
  EXPECT_EQ(check_rule(candidate("cfg = open('params.txt').read()\n"), "static.file_access"),
            Strings{"warn@5:open('params.txt')"});
}

TEST(Rules, EnvSwitch) {
  EXPECT_EQ(check_rule(candidate("import os\n",
                                 "        if os.environ.get('KGYM_TIMING'):\n"
                                 "            return torch.relu(x)\n"
                                 "        return _ext.relu_forward(x)\n"),
                       "static.env_switch"),
            Strings{"fatal@21:os.environ.get[KGYM_TIMING]"});
  EXPECT_EQ(check_rule(candidate("import os\nFAST = 1 if os.getenv('FAST') else 0\n"), "static.env_switch"),
            Strings{"fatal@6:os.getenv[FAST]"});
  EXPECT_EQ(check_rule(candidate("import os\nhome = os.environ.get('CUDA_HOME', '/usr/local/cuda')\n"),
                       "static.env_switch"),
            Strings{"warn@6:os.environ.get[CUDA_HOME]"});
}

TEST(Rules, PrecisionDowngrade) {
  EXPECT_EQ(check_rule(candidate("", "        return _ext.relu_forward(x.half()).float()\n"),
                       "static.precision_downgrade"),
            Strings{"fatal@20:.half"});
  EXPECT_EQ(check_rule(candidate("", "        return _ext.relu_forward(x.to(torch.bfloat16))\n"),
                       "static.precision_downgrade"),
            Strings{"fatal@20:.bfloat16"});
  EXPECT_EQ(
      check_rule(candidate("def _cast(x):\n    return x.to(torch.float16)\n"), "static.precision_downgrade"),
      Strings{"fatal@6:.float16"});
  EXPECT_EQ(
      check_rule(
          candidate("",
                    "        if x.dtype == torch.float16:\n            raise TypeError('float32 only')\n"
                    "        return _ext.relu_forward(x)\n"),
          "static.precision_downgrade"),
      Strings{});
  // A float16 problem may compute in float16.
  CheckOptions half{.input_dtypes = {"float16"}, .output_dtypes = {"float16"}};
  EXPECT_EQ(check_rule(candidate("", "        return _ext.relu_forward(x.half())\n"),
                       "static.precision_downgrade", half),
            Strings{});
  std::string cpp_half = candidate();
  cpp_half.replace(cpp_half.find("  return y;"), 0, "  at::Half h = 0;\n");
  EXPECT_EQ(check_rule(cpp_half, "static.precision_downgrade"), Strings{"warn@13:at::Half"});
}

TEST(Rules, CppLibraryCall) {
  std::string src = candidate();
  src.replace(src.find("  return y;"), 11, "  return at::relu(x); // at::matmul in a comment\n");
  EXPECT_EQ(check_rule(src, "static.cpp_library_call"), Strings{"fatal@13:at::relu"});
  std::string method = candidate();
  method.replace(method.find("  return y;"), 11, "  return x.mm(x);");
  EXPECT_EQ(check_rule(method, "static.cpp_library_call"), Strings{"fatal@13:.mm"});
  // A docstring that shows at::matmul is not C++ that gets compiled.
  EXPECT_EQ(check_rule(candidate("\"\"\"Faster than at::matmul(a, b) or torch.relu.\"\"\"\n"),
                       "static.cpp_library_call"),
            Strings{});
}

TEST(Rules, CppIntrospection) {
  // The dispatcher's mode stack (is the op trace watching?) and the
  // interpreter (the worker's clock) from the C++ handed to load_inline.
  std::string modes = candidate();
  modes.replace(modes.find("  return y;"), 0,
                "  if (c10::impl::TorchDispatchModeTLS::stack_len() > 0) return y;\n");
  EXPECT_EQ(check_rule(modes, "static.introspection"),
            Strings{"fatal@13:c10::impl::TorchDispatchModeTLS::stack_len"});
  std::string clock = candidate();
  clock.replace(clock.find("  return y;"), 0, "  auto m = py::module_::import(name.c_str());\n");
  EXPECT_EQ(check_rule(clock, "static.introspection"), Strings{"fatal@13:py::module_::import"});
  std::string setattr = candidate();
  setattr.replace(setattr.find("  return y;"), 0, "  PyObject_SetAttrString(m, n, f);\n");
  EXPECT_EQ(check_rule(setattr, "static.introspection"), Strings{"fatal@13:PyObject_SetAttrString"});
  EXPECT_EQ(check_rule(candidate(), "static.introspection"), Strings{});
}

TEST(Rules, CppSwitchingDispatchOffIsIntrospection) {
  // Excluding the Python key (where the op trace listens) from C++, by a
  // guard, the TLS setters or a redispatch with a key set of its own.
  auto with = [](const std::string& line) {
    std::string source = candidate();
    source.replace(source.find("  return y;"), 0, line);
    return check_rule(source, "static.introspection");
  };
  EXPECT_EQ(with("  c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKey::Python);\n"),
            (Strings{"fatal@13:c10::impl::ExcludeDispatchKeyGuard", "fatal@13:c10::DispatchKey::Python"}));
  EXPECT_EQ(with("  c10::impl::tls_set_dispatch_key_excluded(k, true);\n"),
            Strings{"fatal@13:c10::impl::tls_set_dispatch_key_excluded"});
  EXPECT_EQ(with("  y = at::_ops::relu::redispatch(ks, x);\n"), Strings{"fatal@13:at::_ops::relu::redispatch"});
  EXPECT_EQ(with("  at::AutoDispatchBelowAutograd guard;\n"), Strings{});
}

TEST(Rules, ProblemDtypes) {
  EXPECT_EQ(problem_dtypes("import torch\nx = torch.randn(4)\n# float16 in a comment\n"), Strings{"float32"});
  EXPECT_EQ(problem_dtypes("x = torch.randn(4, dtype=torch.float16)\ny = x.half()\n"), Strings{"float16"});
  EXPECT_EQ(problem_dtypes("x = torch.randn(4).to(torch.bfloat16)\n"), Strings{"bfloat16"});
}

TEST(Rules, SyntaxErrorIsAWarningAndChecksStillRun) {
  auto got = check("import threading\nclass ModelNew:\n    s = 'unterminated\n");
  EXPECT_NE(std::ranges::find(got, "static.syntax/warn@3"), got.end());
  EXPECT_NE(std::ranges::find(got, "static.concurrency/fatal@1"), got.end());
}

}  // namespace
}  // namespace kgym::static_check
