#include "verify/runtime_checks.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "verify/tensor_bytes_test_util.h"

namespace kgym::verify {
namespace {

using nlohmann::json;

using testing::float_bytes;

TEST(RuntimeChecks, GlueOpsAreAllowedComputeIsNot) {
  EXPECT_TRUE(is_glue_op(backend_named("cpu"), "aten.empty_like"));
  EXPECT_TRUE(is_glue_op(backend_named("cpu"), "aten.view"));
  EXPECT_TRUE(is_glue_op(backend_named("cpu"), "aten.copy_"));
  EXPECT_FALSE(is_glue_op(backend_named("cpu"), "aten.relu"));
  EXPECT_FALSE(is_glue_op(backend_named("cpu"), "aten.mm"));
  EXPECT_FALSE(is_glue_op(backend_named("cpu"), "aten.record_stream"));
  EXPECT_TRUE(is_glue_op(backend_named("cuda"), "aten.record_stream"));
}

TEST(RuntimeChecks, OpTraceFindingNamesTheComputeOps) {
  json candidate = {{"op_trace", {{"aten.empty_like", 2}, {"aten.relu", 1}}}};
  auto f = runtime_finding(candidate, json::object(), backend_named("cpu"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule, "runtime.op_trace");
  EXPECT_EQ(f->layer, "runtime");
  EXPECT_NE(f->evidence.find("aten.relu x1"), std::string::npos) << f->evidence;
  EXPECT_EQ(f->evidence.find("empty_like x"), std::string::npos) << f->evidence;
  EXPECT_FALSE(runtime_finding({{"op_trace", {{"aten.empty", 1}}}}, json::object(), backend_named("cpu")));
  EXPECT_FALSE(runtime_finding({{"op_trace", nullptr}}, json::object(), backend_named("cpu")));  // no tracer
}

TEST(RuntimeChecks, BehaviourTheReferenceSharesIsNotACheat) {
  json mutated = {{"mutated_inputs", {{{"input", 0}, {"evidence", "forward changed input 0"}}}}};
  auto f = runtime_finding(mutated, json::object(), backend_named("cpu"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule, "runtime.input_mutation");
  EXPECT_FALSE(runtime_finding(mutated, mutated, backend_named("cpu")));  // an in-place reference

  json alias = {
      {"aliases", {{{"output", 0}, {"input", 1}, {"evidence", "output 0 shares memory with input 1"}}}}};
  ASSERT_TRUE(runtime_finding(alias, json::object(), backend_named("cpu")));
  EXPECT_EQ(runtime_finding(alias, json::object(), backend_named("cpu"))->rule, "runtime.output_alias");
  EXPECT_FALSE(runtime_finding(alias, alias, backend_named("cpu")));

  json layout = {{"output_problems", {{{"output", 0}, {"kind", "layout"}, {"evidence", "stride 0"}}}}};
  EXPECT_EQ(runtime_finding(layout, json::object(), backend_named("cpu"))->rule, "runtime.output_layout");
  EXPECT_FALSE(runtime_finding(layout, layout, backend_named("cpu")));
}

TEST(RuntimeChecks, ToleranceScalesWithTinyOutputs) {
  std::string tiny = float_bytes({1e-7f, -2e-7f, 3e-7f, 0.0f});
  TensorBytes b{"float32", {4}, tiny};
  Tolerance t = scaled_tolerance({1e-4, 1e-3}, b);
  EXPECT_LT(t.atol, 1e-8);
  EXPECT_EQ(t.rtol, 1e-3);
  std::string zeros = float_bytes({0, 0, 0, 0});
  EXPECT_FALSE(compare_tensors({"float32", {4}, zeros}, b, t).ok);            // all-zero answer fails
  EXPECT_TRUE(compare_tensors({"float32", {4}, zeros}, b, {1e-4, 1e-3}).ok);  // as it did before
  std::string ordinary = float_bytes({1.0f, -2.0f, 3.0f, 0.5f});
  EXPECT_EQ(scaled_tolerance({1e-4, 1e-3}, {"float32", {4}, ordinary}).atol, 1e-4);
}

TEST(RuntimeChecks, DegenerateOutputs) {
  std::map<std::string, Tolerance> none;
  std::string tiny = float_bytes({1e-7f, -2e-7f, 3e-7f});
  std::string constant = float_bytes({2.5f, 2.5f, 2.5f});
  std::string varied = float_bytes({1.0f, -2.0f, 3.0f});
  std::vector<TensorBytes> zero_out{{"float32", {3}, tiny}};
  std::vector<TensorBytes> constant_out{{"float32", {3}, constant}};
  std::vector<TensorBytes> varied_out{{"float32", {3}, varied}};
  EXPECT_EQ(degenerate_kind(zero_out, none), "zero");
  EXPECT_EQ(degenerate_kind(constant_out, none), "constant");
  EXPECT_FALSE(degenerate_kind(varied_out, none));
  std::string scalar = float_bytes({4.0f});
  std::vector<TensorBytes> scalar_out{{"float32", {}, scalar}};
  EXPECT_FALSE(degenerate_kind(scalar_out, none));  // a loss is one number, not "constant"
}

TEST(RuntimeChecks, RelativeErrorAndFiniteness) {
  std::string b = float_bytes({3.0f, 4.0f});
  std::string a = float_bytes({3.0f, 4.5f});
  auto rel = relative_l2_error({"float32", {2}, a}, {"float32", {2}, b});
  ASSERT_TRUE(rel);
  EXPECT_NEAR(*rel, 0.1, 1e-6);
  std::string with_nan = float_bytes({1.0f, NAN});
  std::vector<TensorBytes> outputs{{"float32", {2}, with_nan}};
  EXPECT_FALSE(all_finite(outputs));
  std::vector<TensorBytes> finite{{"float32", {2}, b}};
  EXPECT_TRUE(all_finite(finite));
}

TEST(RuntimeChecks, OpTraceAccumulates) {
  RuntimeTrace trace;
  add_op_trace(trace, {{"op_trace", {{"aten.empty", 1}}}});
  add_op_trace(trace, {{"op_trace", {{"aten.empty", 2}, {"aten.view", 1}}}});
  EXPECT_TRUE(trace.available);
  EXPECT_EQ(trace.ops.at("aten.empty"), 3);
  EXPECT_EQ(trace.ops.at("aten.view"), 1);
}

}  // namespace
}  // namespace kgym::verify
