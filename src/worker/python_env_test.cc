// verifier.execution auto, resolved against a stand-in interpreter that
// answers the backend probes the way a real one without the device would.
#include "worker/python_env.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "util/temp_dir.h"

namespace kgym::worker {
namespace {

class ResolveExecution : public ::testing::Test {
 protected:
  // A "python" whose probes answer: no NPU runtime, and pypto importable
  // only when `pypto` is true.
  std::string interpreter(bool pypto) {
    auto path = temp_.path() / (pypto ? "with-pypto" : "without-pypto");
    std::ofstream(path)
        << "#!/bin/sh\n"
           "case \"$3\" in\n"
           "  npu) echo \"KGYM_BACKEND=ModuleNotFoundError: No module named 'torch_npu'\" ;;\n"
        << "  pypto) echo \"KGYM_BACKEND=" << (pypto ? "yes" : "ModuleNotFoundError: No module named 'pypto'")
        << "\" ;;\n"
        << "  *) echo KGYM_BACKEND=yes ;;\n"
           "esac\n";
    ::chmod(path.c_str(), 0755);
    return path.string();
  }
  util::TempDir temp_{"kgym-python-env"};
};

TEST_F(ResolveExecution, AutoTakesTheHostInterpreterWhenTheDeviceIsMissing) {
  VerifierConfig verifier;
  verifier.backend = "npu";
  verifier.execution_auto = true;
  auto resolved = resolve_execution(interpreter(true), verifier);
  ASSERT_TRUE(resolved.has_value()) << resolved.error();
  EXPECT_EQ(resolved->execution, "host_interpreter");
  EXPECT_NE(resolved->note.find("no npu device"), std::string::npos) << resolved->note;
  EXPECT_NE(resolved->note.find("pypto host interpreter"), std::string::npos) << resolved->note;
}

TEST_F(ResolveExecution, AutoNamesBothChecksWhenNeitherWorks) {
  VerifierConfig verifier;
  verifier.backend = "npu";
  verifier.execution_auto = true;
  auto resolved = resolve_execution(interpreter(false), verifier);
  ASSERT_FALSE(resolved.has_value());
  EXPECT_NE(resolved.error().find("neither works"), std::string::npos) << resolved.error();
  EXPECT_NE(resolved.error().find("torch_npu"), std::string::npos) << resolved.error();
  EXPECT_NE(resolved.error().find("needs the pypto package"), std::string::npos) << resolved.error();
}

TEST_F(ResolveExecution, ADeviceAskedForIsNeverReplacedByTheInterpreter) {
  VerifierConfig verifier;
  verifier.backend = "npu";
  auto resolved = resolve_execution(interpreter(true), verifier);
  ASSERT_FALSE(resolved.has_value());
  EXPECT_NE(resolved.error().find("backend npu is not available"), std::string::npos) << resolved.error();
}

TEST_F(ResolveExecution, AutoOnCpuIsTheDevice) {
  VerifierConfig verifier;
  verifier.execution_auto = true;
  auto resolved = resolve_execution("/nonexistent/python", verifier);
  ASSERT_TRUE(resolved.has_value()) << resolved.error();
  EXPECT_EQ(resolved->execution, "device");
  EXPECT_TRUE(resolved->note.empty());
}

}  // namespace
}  // namespace kgym::worker
