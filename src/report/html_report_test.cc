#include "report/html_report.h"

#include <regex>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "report/format.h"
#include "report/html_plots.h"
#include "report/report_test_util.h"
#include "report/svg.h"
#include "util/fs.h"
#include "util/temp_dir.h"

namespace kgym::report {
namespace {

using testing::make_result;

TEST(XmlEscape, EscapesMarkupQuotesControlsAndBadUtf8) {
  EXPECT_EQ(xml_escape(R"(<a href="x">'&'</a>)"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(xml_escape("tab\tok \x01 bell"), "tab\tok \uFFFD bell");
  EXPECT_EQ(xml_escape("caf\xC3\xA9 \xFF!"), "caf\xC3\xA9 \uFFFD!");
  EXPECT_EQ(xml_escape("1.5\u00d7"), "1.5\u00d7");
}

TEST(Scale, LinearAndLog) {
  Scale linear{0, 10, 100, 200};
  EXPECT_DOUBLE_EQ(linear(5), 150);
  Scale inverted{0, 1, 300, 100};  // y axes grow upwards
  EXPECT_DOUBLE_EQ(inverted(0.25), 250);
  Scale log{0.1, 10, 0, 200, true};
  EXPECT_DOUBLE_EQ(log(1), 100);
  EXPECT_DOUBLE_EQ(log(0), log(1e-12));  // clamped, never NaN
}

TEST(Ticks, NiceAndLog) {
  EXPECT_EQ(nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(0, 2.75, 8), (std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5}));
  EXPECT_EQ(log_ticks(0.3, 12), (std::vector<double>{0.5, 1, 2, 5, 10}));
  EXPECT_EQ(tick_label(1.5), "1.5");
  EXPECT_EQ(tick_label(2), "2");
}

TEST(Svg, WritesEscapedShapesWithTooltips) {
  Svg svg(100, 50, "a <b> plot");
  svg.rect(1, 2, 3, 4, "#fff", "case \"x\"");
  svg.text(10, 20, "1 < 2", "end", 10, -45);
  std::string s = svg.str();
  EXPECT_EQ(s.rfind("<svg width=\"100.0\" height=\"50.0\" viewBox=\"0 0 100.0 50.0\" role=\"img\"", 0), 0u)
      << s;
  EXPECT_NE(s.find("aria-label=\"a &lt;b&gt; plot\""), std::string::npos);
  EXPECT_NE(s.find("<title>case &quot;x&quot;</title></rect>"), std::string::npos) << s;
  EXPECT_NE(s.find("transform=\"rotate(-45.0 10.0 20.0)\">1 &lt; 2</text>"), std::string::npos) << s;
}

TEST(UrlPath, KeepsSafeBytesAndEncodesTheRest) {
  EXPECT_EQ(url_path("cases/level1/1_ReLU/SPEC.md"), "cases/level1/1_ReLU/SPEC.md");
  EXPECT_EQ(url_path("a b/\"x\"#?"), "a%20b/%22x%22%23%3F");
}

// Start tags and end tags balance (void elements excepted); a minimal
// well-formedness check (the e2e test parses the page as XML).
bool tags_balance(const std::string& html, std::string& problem) {
  static const std::regex tag(R"(<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>)");
  std::vector<std::string> open;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), tag); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    std::string name = m[2];
    if (m[3] == "/") continue;  // <meta ... />
    if (m[1] == "/") {
      if (open.empty() || open.back() != name) {
        problem = "unexpected </" + name + "> after <" + (open.empty() ? "" : open.back()) + ">";
        return false;
      }
      open.pop_back();
    } else {
      open.push_back(name);
    }
  }
  if (!open.empty()) problem = "unclosed <" + open.back() + ">";
  return open.empty();
}

class HtmlReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    results_ = {make_result("level1/1_A", Verdict::kPass, 1.8),
                make_result("level1/2_B", Verdict::kPass, 0.6),
                make_result("level1/3_C", Verdict::kFailCorrectness, std::nullopt,
                            "output 0 differs <script>alert(1)</script> & more"),
                make_result("level2/1_D", Verdict::kFailCheat, std::nullopt, "static.no_kernel"),
                make_result("level2/2_E", Verdict::kPass, 2.5)};
    results_[0].timings = {12.0, 3.0, 5.0, 21.0};
    results_[3].cheat = CheatFinding{"static.no_kernel", "static", "model_new.py:3"};
    summary_ = summarize(
        results_, {"level1/1_A", "level1/2_B", "level1/3_C", "level2/1_D", "level2/2_E", "level2/3_F"});
    info_.run_dir = "/runs/r&d";
    info_.backend = "cpu";
    info_.mode = "performance";
    info_.config_path = "/cfg.yaml";
    input_.summary = &summary_;
    input_.info = &info_;
    input_.results = &results_;
    input_.files["level1/1_A"] = {{"SPEC.md", "cases/level1/1_A/SPEC.md"},
                                  {"result", "cases/level1/1_A/result.json"}};
    input_.run_record = {{"run_seed", 42},
                         {"python", "/usr/bin/python3"},
                         {"machine", {{"cpu_model", "Xeon <fast>"}, {"devices", {"0", "1"}}}},
                         {"cases", {"level1/1_A"}}};
    input_.config_text = "verifier:\n  mode: performance  # <b>\n";
  }

  std::vector<CaseResult> results_;
  Summary summary_;
  RunInfo info_;
  HtmlReportInput input_;
};

TEST_F(HtmlReportTest, HasEverySectionAndPlot) {
  std::string html = html_report(input_);
  for (const char* id : {"headline", "plots", "cases", "provenance", "plot-speedup", "plot-fast-p",
                         "plot-verdicts", "plot-phases", "case-level1/1_A", "case-level2/3_F"}) {
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Four figures, each an inline SVG.
  std::size_t svgs = 0;
  for (std::size_t at = html.find("<svg "); at != std::string::npos; at = html.find("<svg ", at + 1)) ++svgs;
  EXPECT_EQ(svgs, 4u);
  std::string problem;
  EXPECT_TRUE(tags_balance(html, problem)) << problem;
}

// Cases run with samples get pass@1 and pass@K cards, with the figure of
// each level, and the geomean is named best-of-k.
TEST_F(HtmlReportTest, SampledRunShowsPassAtK) {
  for (CaseResult& r : results_) {
    r.samples = SamplesSummary{};
    r.samples->n = 4;
    r.samples->passed = r.verdict == Verdict::kPass ? 2 : 0;
  }
  summary_ = summarize(results_);
  std::string html = html_report(input_);
  EXPECT_NE(html.find("<div class=\"k\">pass@1</div><div class=\"v\">30.0%"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"k\">pass@4</div><div class=\"v\">60.0%"), std::string::npos);
  EXPECT_NE(html.find("4 samples per case; level1 33.3%, level2 25.0%"), std::string::npos) << html;
  EXPECT_NE(html.find("best-of-k geomean speedup"), std::string::npos);
  std::string problem;
  EXPECT_TRUE(tags_balance(html, problem)) << problem;
}

// With the compile baseline: cards of fast_1 and the geomean against it,
// and each case's speedup against it under the eager one.
TEST_F(HtmlReportTest, AgainstTorchCompile) {
  for (CaseResult& r : results_) {
    if (!r.performance) continue;
    BaselineSpeedup b{.name = "compile"};
    if (r.case_id == "level1/1_A") {
      b.speedup = SpeedupEstimate{1.25, Interval{1.1, 1.4}};
    } else {
      b.unavailable = "torch.compile failed";
    }
    r.performance->speedup_vs.push_back(b);
  }
  summary_ = summarize(results_);
  std::string html = html_report(input_);
  EXPECT_NE(html.find("<div class=\"k\">fast_1 vs torch.compile</div>"), std::string::npos) << html;
  EXPECT_NE(html.find("<div class=\"k\">geomean vs torch.compile</div>"), std::string::npos);
  EXPECT_NE(html.find("vs torch.compile: 1.25"), std::string::npos);
  EXPECT_NE(html.find("vs torch.compile: unavailable"), std::string::npos);
  std::string problem;
  EXPECT_TRUE(tags_balance(html, problem)) << problem;
}

TEST_F(HtmlReportTest, HeadlineNumbers) {
  std::string html = html_report(input_);
  // 3 of 6 pass, 1 of 6 cheats; fast_p cards for 1, 1.5 and 2; geomean of 1.8, 0.6, 2.5.
  EXPECT_NE(html.find("<div class=\"k\">correct</div><div class=\"v\">50.0%"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"k\">cheat</div><div class=\"v\">16.7%"), std::string::npos);
  for (const char* k : {"fast_1", "fast_1.5", "fast_2", "geomean speedup"}) {
    EXPECT_NE(html.find(std::string("<div class=\"k\">") + k + "</div>"), std::string::npos) << k;
  }
  EXPECT_NE(html.find("3 of 6 cases"), std::string::npos);
  EXPECT_NE(html.find("1.39\u00d7"), std::string::npos);  // (1.8 · 0.6 · 2.5)^(1/3)
}

TEST_F(HtmlReportTest, EscapesRecordTextAndLinksRelatively) {
  std::string html = html_report(input_);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"), std::string::npos);
  EXPECT_NE(html.find("/runs/r&amp;d"), std::string::npos);
  EXPECT_NE(html.find("Xeon &lt;fast&gt;"), std::string::npos);
  EXPECT_NE(html.find("# &lt;b&gt;"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"cases/level1/1_A/SPEC.md\">SPEC.md</a>"), std::string::npos);
  EXPECT_NE(html.find("fail_cheat (static.no_kernel)"), std::string::npos);
  EXPECT_NE(html.find("<dt>run_seed</dt><dd>42</dd>"), std::string::npos);
  EXPECT_NE(html.find("<dt>machine.devices</dt><dd>0, 1</dd>"), std::string::npos);
}

TEST_F(HtmlReportTest, SelfContained) {
  std::string html = html_report(input_);
  for (const char* external : {"http:", "https:", "//", "src=", "url(", "@import", "<link", "<script"}) {
    // "//" may only appear inside text, never as a protocol-relative reference.
    if (std::string_view(external) == "//") {
      EXPECT_EQ(html.find("=\"//"), std::string::npos);
      continue;
    }
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
}

TEST_F(HtmlReportTest, EmptyRunSaysSoInsteadOfDrawingNothing) {
  std::vector<CaseResult> none;
  Summary empty = summarize(none, {});
  input_.summary = &empty;
  input_.results = &none;
  input_.files.clear();
  std::string html = html_report(input_);
  EXPECT_NE(html.find("<p class=\"empty\">No passing case has a measured speedup.</p>"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"empty\">No case recorded its timings.</p>"), std::string::npos);
  std::string problem;
  EXPECT_TRUE(tags_balance(html, problem)) << problem;
}

TEST(FindCaseFiles, ListsOnlyFilesThatExist) {
  util::TempDir temp("kgym-html");
  auto dir = temp.path() / "cases" / "level1" / "1_A";
  ASSERT_TRUE(util::make_dirs(dir / "candidate"));
  ASSERT_TRUE(util::write_file_atomic(dir / "SPEC.md", "x"));
  ASSERT_TRUE(util::write_file_atomic(dir / "candidate" / "model_new.py", "x"));
  ASSERT_TRUE(util::write_file_atomic(dir / "verify.log", "x"));
  auto files = find_case_files(temp.path(), {"level1/1_A", "level1/2_B"});
  ASSERT_EQ(files["level1/1_A"].size(), 3u);
  EXPECT_EQ(files["level1/1_A"][0].relative_path, "cases/level1/1_A/SPEC.md");
  EXPECT_EQ(files["level1/1_A"][1].label, "candidate");
  EXPECT_EQ(files["level1/1_A"][2].label, "verify log");
  EXPECT_TRUE(files["level1/2_B"].empty());
}

}  // namespace
}  // namespace kgym::report

namespace kgym::report {
namespace {

TEST(RedactEnvValues, BlockAndFlowStyle) {
  EXPECT_EQ(redact_env_values("agent:\n"
                              "  kind: command\n"
                              "  env:\n"
                              "    API_KEY: sk-secret  # comment\n"
                              "\n"
                              "    OTHER: \"x: y\"\n"
                              "  timeout_sec: 60\n"
                              "verifier:\n"
                              "  env: {A: b}\n"),
            "agent:\n"
            "  kind: command\n"
            "  env:\n"
            "    API_KEY: <redacted>\n"
            "\n"
            "    OTHER: <redacted>\n"
            "  timeout_sec: 60\n"
            "verifier:\n"
            "  env: <redacted>\n");
  EXPECT_EQ(redact_env_values("cases: 1:3"), "cases: 1:3");
}

TEST_F(HtmlReportTest, SecretsInAgentEnvAreNotShared) {
  input_.config_text = "agent:\n  env:\n    API_KEY: sk-secret\n";
  input_.run_record["sets"] = {"agent.env.TOKEN=tok-secret", "concurrency=2"};
  std::string html = html_report(input_);
  EXPECT_EQ(html.find("secret"), std::string::npos);
  EXPECT_NE(html.find("API_KEY: &lt;redacted&gt;"), std::string::npos);
  EXPECT_NE(html.find("agent.env.TOKEN=&lt;redacted&gt;, concurrency=2"), std::string::npos);
}

}  // namespace
}  // namespace kgym::report

namespace kgym::report {
namespace {

// The page's own items: a one-case plot shows its value and a legend,
// uncertain speedups are marked, a phase no case spent time in is left out
// of the legend and "waiting and other" is explained, run.json's sections
// are folded groups, and speedups read "×" in reasons too.
TEST(HtmlReportPage, OneCaseValuesLegendsGroupsAndSigns) {
  std::vector<CaseResult> results = {
      make_result("level1/1_A", Verdict::kPass, 1.05, "3 trials matched the reference; speedup 1.050x (95% CI 0.3-3.1)"),
      make_result("level1/2_B", Verdict::kFailCheat, std::nullopt, "excessive speedup 40.0x on 64x16384")};
  results[0].performance->flags.push_back("uncertain");
  results[0].timings = {0.0, 3.0, 5.0, 9.0};  // a replay: no generation time
  Summary summary = summarize(results, {"level1/1_A", "level1/2_B"});
  RunInfo info;
  info.run_dir = "/runs/r";
  HtmlReportInput in{.summary = &summary, .info = &info, .results = &results};
  in.run_record = {{"run_seed", 7},
                   {"machine", {{"cpu_model", "X"}}},
                   {"config", {{"level", "level1"}, {"verifier", {{"mode", "performance"}, {"seeds", 3}}}}}};
  std::string html = html_report(in);
  auto plot = [&](std::string_view id) {
    std::size_t at = html.find(fmt::format("id=\"{}\"", id));
    return html.substr(at, html.find("</figure>", at) - at);
  };
  std::string speedup = plot("plot-speedup");
  EXPECT_NE(speedup.find(">1.05\u00d7<"), std::string::npos) << "the point's value is written";
  EXPECT_NE(speedup.find("median \u2265 1\u00d7"), std::string::npos) << "a legend for the dots";
  EXPECT_NE(speedup.find("uncertain (interval &gt; 2\u00d7)"), std::string::npos);
  int ticks = 0;
  for (std::size_t at = speedup.find("\u00d7</text>"); at != std::string::npos;
       at = speedup.find("\u00d7</text>", at + 1))
    ++ticks;
  EXPECT_GE(ticks, 3) << "more than the 1x tick";
  std::string phases = plot("plot-phases");
  EXPECT_EQ(phases.find("generate 0.0 s"), std::string::npos);
  EXPECT_NE(phases.find("Waiting and other: the rest"), std::string::npos);
  EXPECT_NE(html.find("<summary>config.verifier (2)</summary>"), std::string::npos);
  EXPECT_NE(html.find("<dt>config.verifier.seeds</dt><dd>3</dd>"), std::string::npos);
  EXPECT_NE(html.find("<details class=\"group\" open=\"open\"><summary>machine (1)</summary>"), std::string::npos);
  EXPECT_NE(html.find("<summary>config (1)</summary>"), std::string::npos);
  EXPECT_NE(html.find("<dt>run_seed</dt><dd>7</dd>"), std::string::npos);
  EXPECT_NE(html.find("excessive speedup 40.0\u00d7 on 64x16384"), std::string::npos);
  std::string problem;
  EXPECT_TRUE(tags_balance(html, problem)) << problem;
}

TEST(SpeedupSigns, OnlyANumbersLoneX) {
  EXPECT_EQ(speedup_signs("speedup 1.450x (95% CI 1.3-1.6), 2x faster"),
            "speedup 1.450\u00d7 (95% CI 1.3-1.6), 2\u00d7 faster");
  EXPECT_EQ(speedup_signs("64x16384 at 0x1f, max x"), "64x16384 at 0x1f, max x");
  EXPECT_EQ(speedup_signs("ends 3x"), "ends 3\u00d7");
}

}  // namespace
}  // namespace kgym::report

namespace kgym::report {
namespace {

TEST(HtmlPlots, TheRooflineDrawsEachCasesTwoSidesUnderTheRoofs) {
  CaseResult r = testing::make_result("level1/5_Matmul", Verdict::kPass, 2.0);
  WorkCount w;
  w.input_bytes = 1'000'000;
  w.output_bytes = 1'000'000;
  w.flops = 50'000'000;
  RoofsUsed roofs{
      .cores = "0", .bandwidth_gbs = 20, .memory_level = "L2", .peak_gflops = 80, .precision = "float32"};
  r.performance->roofline = place_on_roofline(w, roofs, 1.0, 2.0);
  CaseResult flat = testing::make_result("level1/9_Copy", Verdict::kPass, 1.0);
  WorkCount copy = w;
  copy.flops = 0;
  flat.performance->roofline = place_on_roofline(copy, roofs, 1.0, 1.0);
  Summary s = summarize({r, flat}, {});
  std::string svg = roofline_plot(s);
  ASSERT_TRUE(svg.starts_with("<svg")) << svg;
  EXPECT_NE(svg.find("L2 20 GB/s"), std::string::npos);
  EXPECT_NE(svg.find("peak 80 GFLOP/s"), std::string::npos);
  EXPECT_NE(svg.find("level1/5_Matmul: 25 FLOP/byte, candidate 50 GFLOP/s"), std::string::npos) << svg;
  EXPECT_NE(svg.find("1 passing case with no floating-point work counted not drawn"), std::string::npos);
  EXPECT_EQ(roofline_plot(summarize({flat}, {})).find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace kgym::report
