#include "static_check/cpp_scan.h"

#include <gtest/gtest.h>

namespace kgym::static_check {
namespace {

std::vector<std::string> calls(std::string_view src) {
  std::vector<std::string> out;
  for (const auto& h : scan_cpp(src).library_calls) out.push_back(h.name + "@" + std::to_string(h.line));
  return out;
}

TEST(CppScan, StripsCommentsAndStringsButKeepsLines) {
  std::string s = strip_cpp_comments_and_strings(
      "a // at::relu(x)\n/* at::mm(\n */ \"at::add(\" 'c' R\"x(at::exp()x\" b");
  EXPECT_EQ(s.find("at::"), std::string::npos);
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 2);
  EXPECT_NE(s.find(" b"), std::string::npos);
}

TEST(CppScan, FindsAtenAndTorchComputeCalls) {
  EXPECT_EQ(calls("auto y = at::matmul(a, b);\nreturn torch::relu(y);\n"),
            (std::vector<std::string>{"at::matmul@1", "torch::relu@2"}));
  EXPECT_EQ(calls("at::native::add_out(r, a, b);"), (std::vector<std::string>{"at::native::add_out@1"}));
  EXPECT_EQ(calls("namespace F = torch::nn::functional;\ntorch::nn::functional::gelu(x);"),
            (std::vector<std::string>{"torch::nn::functional::gelu@2"}));
  EXPECT_EQ(calls("return a.mm(b).relu();\nreturn p->matmul(q);"),
            (std::vector<std::string>{".mm@1", ".relu@1", ".matmul@2"}));
  EXPECT_EQ(calls("torch :: sigmoid(x);"), (std::vector<std::string>{"torch::sigmoid@1"}));
}

TEST(CppScan, UnqualifiedCallsAfterUsingNamespace) {
  EXPECT_EQ(calls("using namespace at;\nTensor f(Tensor x) { return relu(x); }"),
            (std::vector<std::string>{"relu (via using namespace at)@2"}));
  EXPECT_EQ(calls("using namespace torch;\nauto y = matmul(a, b);"),
            (std::vector<std::string>{"matmul (via using namespace torch)@2"}));
  EXPECT_EQ(calls("using at::sigmoid;\nauto y = sigmoid(a);"),
            (std::vector<std::string>{"sigmoid (via a using-declaration)@2"}));
  // The source's own function of that name is not the library's.
  EXPECT_TRUE(calls("using namespace at;\nfloat relu(float v) { return v < 0 ? 0 : v; }\n"
                    "void g(float* p) { p[0] = relu(p[0]); }")
                  .empty());
  // Without a using-directive, an unqualified name is the source's own.
  EXPECT_TRUE(calls("auto y = relu(x);").empty());
}

TEST(CppScan, GlueIsAllowed) {
  EXPECT_TRUE(calls(R"(
    TORCH_CHECK(x.is_contiguous(), "at::relu(x) is not used");
    auto y = torch::empty_like(x);
    auto z = torch::zeros({n, m}, x.options().dtype(torch::kFloat32));
    auto w = at::empty({n}, at::TensorOptions().device(x.device()));
    const float* p = x.data_ptr<float>();
    int64_t n = x.numel() + x.size(0) + x.stride(1);
    auto v = x.contiguous().view({-1}).reshape({n});
    at::parallel_for(0, n, 0, [&](int64_t b, int64_t e) {});
    auto s = at::cuda::getCurrentCUDAStream();
    float m = std::max(a, b) + std::numeric_limits<float>::max();
  )")
                  .empty());
}

TEST(CppScan, CommentsAndStringsNeverCount) {
  EXPECT_TRUE(calls("// at::matmul(a, b)\n/* torch::relu(x) */\nconst char* s = \"x.mm(y)\";").empty());
}

TEST(CppScan, FunctionBodies) {
  EXPECT_TRUE(scan_cpp("torch::Tensor f(torch::Tensor x) { auto y = x; return y; }").has_function_body);
  EXPECT_TRUE(scan_cpp("int f() const noexcept {\n return 1;\n}").has_function_body);
  EXPECT_FALSE(scan_cpp("torch::Tensor f(torch::Tensor x);").has_function_body);
  EXPECT_FALSE(scan_cpp("void f() {}").has_function_body);
  EXPECT_FALSE(scan_cpp("PYBIND11_MODULE(m, x) { x.def(\"f\", &f); }").has_function_body);
  EXPECT_FALSE(scan_cpp("#include <torch/extension.h>\n// void f() { g(); }\n").has_function_body);
}

TEST(CppScan, CudaKernelsAndReducedPrecision) {
  auto scan = scan_cpp("__global__ void k(const __half* x) { int i = threadIdx.x; }\nat::Half h;");
  EXPECT_TRUE(scan.has_cuda_kernel);
  ASSERT_EQ(scan.reduced_precision.size(), 2u);
  EXPECT_EQ(scan.reduced_precision[0].name, "__half");
  EXPECT_EQ(scan.reduced_precision[1].line, 2);
  EXPECT_FALSE(scan_cpp("void f() { float x = 0; }").has_cuda_kernel);
}

}  // namespace
}  // namespace kgym::static_check
