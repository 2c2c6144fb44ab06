#include "verify/repro_bundle.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/case_paths.h"
#include "util/fs.h"
#include "util/gzip.h"
#include "util/sha256.h"
#include "util/temp_dir.h"

namespace kgym::verify {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using util::TarEntry;

class ReproBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temp_.path().empty());
    root_ = temp_.path();
    run_dir_ = root_ / "runs" / "r1";
    case_ = CasePaths::of(run_dir_, "level1", "1_ReLU");
    write(root_ / "bench" / "level1" / "1_ReLU.py", "class Model: pass\nbatch_size = 4096\n");
    write(case_.candidate() / "model_new.py", "from .helper import f\nclass ModelNew: pass\n");
    write(case_.candidate() / "helper.py", "def f(x): return x\n");
    write(case_.candidate() / "notes.txt", "not a source\n");
    write(RunPaths{run_dir_}.run_record(), json{{"machine", {{"cpu_model", "Test CPU"}, {"online_cpus", 2}}},
                                                {"config", {{"agent", {{"env", {{"API_KEY", "secret"}}}}}}},
                                                {"torch_version", "1.13.1"}}
                                               .dump());
    VerifyRequest req;
    req.case_id = "level1/1_ReLU";
    req.problem = root_ / "bench" / "level1" / "1_ReLU.py";
    req.candidate = case_.candidate() / "model_new.py";
    req.scratch_dir = case_.verify_dir();
    req.python = "/usr/bin/python3";
    req.overrides = {{"batch_size", 64}};
    req.run_seed = 1234;
    req.device = "all";
    req.config.trials = 5;
    req.config.timing.budget = std::chrono::milliseconds(2500);
    req.stage = VerifyStage::kVerifyPrebuilt;
    req.prebuilt = case_.prebuilt();
    req.sandbox_hidden = {run_dir_};
    write(case_.verify_request(), to_json(req).dump(2));
    CaseResult result;
    result.case_id = "level1/1_ReLU";
    result.verdict = Verdict::kPass;
    result.reason = "ok";
    result.environment = TorchEnvironment{"/usr/bin/python3", "1.13.1", "cpu"};
    write(case_.result(), to_json(result).dump(2));
  }

  static void write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }

  // The entries of the bundle written for the case.
  std::vector<TarEntry> bundle_entries() {
    fs::path out = root_ / "b.tar.gz";
    auto ok = write_case_bundle(case_.dir, out);
    EXPECT_TRUE(ok) << ok.error();
    auto tar = util::gzip_decompress(*util::read_file(out), 1 << 24);
    return *util::read_tar(*tar);
  }

  // A bundle of `entries`, the manifest recomputed over them unless `manifest` is given.
  fs::path pack(std::vector<TarEntry> entries, bool fresh_manifest = true) {
    if (fresh_manifest) {
      std::erase_if(entries, [](const TarEntry& e) { return e.path == "manifest.json"; });
      entries.insert(entries.begin(), {"manifest.json", TarEntry::Type::kFile,
                                       bundle_manifest("level1/1_ReLU", entries).dump()});
    }
    fs::path out = root_ / "hostile.tar.gz";
    auto tar = util::write_tar(entries);
    EXPECT_TRUE(tar) << tar.error();
    EXPECT_TRUE(util::write_file_atomic(out, *util::gzip_compress(*tar)));
    return out;
  }

  static TarEntry& entry(std::vector<TarEntry>& entries, const std::string& path) {
    for (TarEntry& e : entries) {
      if (e.path == path) return e;
    }
    ADD_FAILURE() << "no entry " << path;
    return entries.front();
  }

  util::TempDir temp_{"kgym-repro-bundle-test"};
  fs::path root_, run_dir_;
  CasePaths case_;
};

TEST_F(ReproBundleTest, HoldsTheCaseAndRecordsItsProvenance) {
  std::vector<TarEntry> entries = bundle_entries();
  std::vector<std::string> paths;
  for (const TarEntry& e : entries) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"manifest.json", "problem", "candidate", "problem/1_ReLU.py",
                                             "candidate/model_new.py", "candidate/helper.py", "request.json",
                                             "result.json", "provenance.json"}));
  json manifest = json::parse(entry(entries, "manifest.json").data);
  EXPECT_EQ(manifest["format"], "kgym-repro");
  EXPECT_EQ(manifest["format_version"], 1);
  EXPECT_EQ(manifest["files"].size(), 6u);
  EXPECT_EQ(manifest["files"][0]["sha256"], util::sha256_hex(entry(entries, "problem/1_ReLU.py").data));
  json request = json::parse(entry(entries, "request.json").data);
  EXPECT_EQ(request["problem"], "problem/1_ReLU.py");
  EXPECT_EQ(request["candidate"], "candidate/model_new.py");
  EXPECT_EQ(request["run_seed"], 1234);
  EXPECT_EQ(request["overrides"]["batch_size"], 64);
  EXPECT_EQ(request["python"], "");
  EXPECT_FALSE(request.contains("prebuilt"));
  EXPECT_TRUE(request["sandbox"]["hidden"].empty());
  json provenance = json::parse(entry(entries, "provenance.json").data);
  EXPECT_EQ(provenance["machine"]["cpu_model"], "Test CPU");
  EXPECT_EQ(provenance["environment"]["torch_build"], "cpu");
  EXPECT_FALSE(provenance["kgym"]["version"].get<std::string>().empty());
  EXPECT_EQ(provenance.dump().find("secret"), std::string::npos);  // never run.json's config
}

TEST_F(ReproBundleTest, OpensIntoAPrivateDirectoryWithThePathsRewritten) {
  ASSERT_TRUE(write_case_bundle(case_.dir, case_.repro_bundle()));
  auto bundle = open_bundle(case_.repro_bundle());
  ASSERT_TRUE(bundle) << bundle.error();
  const VerifyRequest& req = bundle->request;
  EXPECT_EQ(req.problem, bundle->dir->path() / "problem" / "1_ReLU.py");
  EXPECT_EQ(req.candidate, bundle->dir->path() / "candidate" / "model_new.py");
  EXPECT_EQ(*util::read_file(req.candidate), "from .helper import f\nclass ModelNew: pass\n");
  EXPECT_TRUE(fs::exists(bundle->dir->path() / "candidate" / "helper.py"));
  EXPECT_EQ(req.run_seed, 1234u);
  EXPECT_EQ(req.overrides, (std::map<std::string, long long>{{"batch_size", 64}}));
  // How it is checked is the verifier's: kgym's defaults here, and a note
  // for each recorded setting left out.
  EXPECT_EQ(req.config.trials, VerifierConfig{}.trials);
  EXPECT_EQ(req.config.timing.budget, VerifierConfig{}.timing.budget);
  auto noted = [&](const std::string& text) {
    return std::ranges::any_of(bundle->notes, [&](const std::string& n) { return n.find(text) != n.npos; });
  };
  EXPECT_TRUE(noted("request.json's config.trials 5 is ignored; this verification uses 3"));
  EXPECT_TRUE(noted("config.timing"));
  EXPECT_FALSE(noted("stage")) << "a run's verification of its build stage's output is how it ran";
  EXPECT_TRUE(req.python.empty());
  EXPECT_TRUE(req.scratch_dir.empty());
  EXPECT_EQ(req.stage, VerifyStage::kBuildThenVerify);
  EXPECT_TRUE(req.prebuilt.empty());
  EXPECT_EQ(bundle->recorded.verdict, Verdict::kPass);
  fs::path extracted = bundle->dir->path();
  bundle = std::unexpected("closed");
  EXPECT_FALSE(fs::exists(extracted));
}

TEST_F(ReproBundleTest, ACaseWithSamplesBundlesItsChosenSample) {
  CasePaths sample = case_.sample(2);
  fs::create_directories(sample.dir);
  fs::rename(case_.verify_request(), sample.verify_request());
  CaseResult result = result_from_json(json::parse(*util::read_file(case_.result())));
  result.samples = SamplesSummary{.n = 2, .passed = 1, .chosen = 2};
  write(case_.result(), to_json(result).dump());
  EXPECT_EQ(case_request_file(case_.dir, result), sample.verify_request());
  EXPECT_TRUE(write_case_bundle(case_.dir, root_ / "s.tar.gz"));
}

TEST_F(ReproBundleTest, ACaseNeverVerifiedHasNothingToReproduce) {
  fs::remove(case_.verify_request());
  auto ok = write_case_bundle(case_.dir, root_ / "x.tar.gz");
  ASSERT_FALSE(ok);
  EXPECT_NE(ok.error().find("has no verify_request.json"), std::string::npos) << ok.error();
  EXPECT_FALSE(write_case_bundle(root_ / "nowhere", root_ / "x.tar.gz"));
}

TEST_F(ReproBundleTest, RefusesAnEditedFile) {
  std::vector<TarEntry> entries = bundle_entries();
  entry(entries, "candidate/model_new.py").data += "# edited\n";
  auto bundle = open_bundle(pack(entries, /*fresh_manifest=*/false));
  ASSERT_FALSE(bundle);
  EXPECT_NE(bundle.error().find("entry 'candidate/model_new.py': its sha256"), std::string::npos)
      << bundle.error();
  EXPECT_NE(bundle.error().find("does not match manifest.json"), std::string::npos);
}

TEST_F(ReproBundleTest, RefusesUnlistedMissingAndUnmanifestedFiles) {
  std::vector<TarEntry> entries = bundle_entries();
  entries.push_back({"candidate/extra.py", TarEntry::Type::kFile, "import os\n"});
  auto extra = open_bundle(pack(entries, /*fresh_manifest=*/false));
  ASSERT_FALSE(extra);
  EXPECT_NE(extra.error().find("entry 'candidate/extra.py': not listed in manifest.json"), std::string::npos);

  entries = bundle_entries();
  std::erase_if(entries, [](const TarEntry& e) { return e.path == "candidate/helper.py"; });
  auto missing = open_bundle(pack(entries, /*fresh_manifest=*/false));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("lists 'candidate/helper.py', which the archive does not hold"),
            std::string::npos);

  entries = bundle_entries();
  std::erase_if(entries, [](const TarEntry& e) { return e.path == "manifest.json"; });
  auto none = open_bundle(pack(entries, /*fresh_manifest=*/false));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("no manifest.json"), std::string::npos);
}

TEST_F(ReproBundleTest, RefusesANewerFormat) {
  std::vector<TarEntry> entries = bundle_entries();
  json manifest = json::parse(entry(entries, "manifest.json").data);
  manifest["format_version"] = 7;
  entry(entries, "manifest.json").data = manifest.dump();
  auto bundle = open_bundle(pack(entries, /*fresh_manifest=*/false));
  ASSERT_FALSE(bundle);
  EXPECT_NE(bundle.error().find("bundle format version 7; this kgym reads version 1 (use a newer kgym)"),
            std::string::npos);
}

TEST_F(ReproBundleTest, RefusesARequestThatPointsOutOfTheBundle) {
  for (std::string path : {"/etc/passwd", "../../outside.py", "problem/absent.py"}) {
    std::vector<TarEntry> entries = bundle_entries();
    json request = json::parse(entry(entries, "request.json").data);
    request["problem"] = path;
    entry(entries, "request.json").data = request.dump();
    auto bundle = open_bundle(pack(entries));
    ASSERT_FALSE(bundle) << path;
    EXPECT_NE(bundle.error().find("request.json: problem '" + path + "'"), std::string::npos)
        << bundle.error();
  }
}

TEST_F(ReproBundleTest, RefusesHostileArchivesNamingTheEntry) {
  fs::path file = root_ / "raw.tar.gz";
  // A '..' entry cannot be made by write_tar; patch a safe name of the same length.
  std::string tar = *util::write_tar({{"candidate/aa/evil.py", TarEntry::Type::kFile, "x"}});
  tar.replace(tar.find("aa/evil.py"), 10, "../evil.py");
  unsigned sum = 0;
  for (std::size_t i = 0; i < 512; ++i)
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(tar[i]);
  std::string digits = fmt::format("{:06o}", sum);
  tar.replace(148, 6, digits);
  ASSERT_TRUE(util::write_file_atomic(file, *util::gzip_compress(tar)));
  auto dotdot = open_bundle(file);
  ASSERT_FALSE(dotdot);
  EXPECT_NE(dotdot.error().find("entry 1 'candidate/../evil.py': '..' component"), std::string::npos)
      << dotdot.error();

  ASSERT_TRUE(util::write_file_atomic(file, "this is not a bundle"));
  auto garbage = open_bundle(file);
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().find("not gzip data"), std::string::npos);

  std::string packed = *util::read_file(pack(bundle_entries()));
  ASSERT_TRUE(util::write_file_atomic(file, packed.substr(0, packed.size() / 2)));
  auto truncated = open_bundle(file);
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().find("truncated"), std::string::npos) << truncated.error();

  BundleLimits small;
  small.tar.max_file_bytes = 16;
  auto oversize = open_bundle(pack(bundle_entries()), {}, small);
  ASSERT_FALSE(oversize);
  EXPECT_NE(oversize.error().find("more than the 16 allowed per file"), std::string::npos)
      << oversize.error();
}

// A request that asks to be checked less (issue 33): the candidate run as
// a trusted reference, the box without its uid drop and limits, no static
// checks, a loose tolerance. None of it is taken; the data is.
TEST_F(ReproBundleTest, TakesOnlyTheCasesDataFromTheRequest) {
  std::vector<TarEntry> entries = bundle_entries();
  json request = json::parse(entry(entries, "request.json").data);
  request["candidate_is_reference"] = true;
  request["sandbox"] = {{"mode", "none"},         {"address_space_mb", 0}, {"cpu_sec", 0},
                        {"file_size_mb", 0},      {"processes", 0},        {"drop_privileges", false},
                        {"hidden", json::array()}};
  request["config"]["trials"] = 1;
  request["config"]["tolerances"] = {{"float32", {{"atol", 1e9}, {"rtol", 1e9}}}};
  request["config"]["mode"] = "correctness";
  request["stage"] = "build";
  request["prebuilt"] = "/root/elsewhere";
  request["scratch_dir"] = "/etc";
  request["precision"] = "float16";
  request["device"] = "0";
  request["warm"] = {{"reference_socket", "/run/x"},
                     {"candidate_socket", "/run/y"},
                     {"scratch_root", "/"},
                     {"scratch_inside", "/"}};
  entry(entries, "request.json").data = request.dump();
  VerifyRequest base;
  base.config.trials = 4;  // the verifier's --config
  base.sandbox.address_space_mb = 2048;
  base.device = "all";
  auto bundle = open_bundle(pack(entries), base);
  ASSERT_TRUE(bundle) << bundle.error();
  const VerifyRequest& req = bundle->request;
  EXPECT_FALSE(req.candidate_is_reference);
  EXPECT_TRUE(req.static_checks);
  EXPECT_TRUE(req.op_trace);
  EXPECT_EQ(req.stage, VerifyStage::kBuildThenVerify);
  EXPECT_TRUE(req.prebuilt.empty());
  EXPECT_FALSE(req.warm);
  EXPECT_TRUE(req.scratch_dir.empty());
  EXPECT_EQ(req.sandbox.mode, SandboxConfig{}.mode);
  EXPECT_TRUE(req.sandbox.drop_privileges);
  EXPECT_EQ(req.sandbox.address_space_mb, 2048);
  EXPECT_EQ(req.sandbox.cpu_sec, SandboxConfig{}.cpu_sec);
  EXPECT_EQ(req.sandbox.file_size_mb, SandboxConfig{}.file_size_mb);
  EXPECT_EQ(req.sandbox.processes, SandboxConfig{}.processes);
  EXPECT_EQ(req.config.trials, 4);
  EXPECT_TRUE(req.config.tolerances.empty());
  EXPECT_EQ(req.device, "all");
  // The case's data is the bundle's.
  EXPECT_EQ(req.config.mode, "correctness");
  EXPECT_EQ(req.precision, "float16");
  EXPECT_EQ(req.run_seed, 1234u);
  EXPECT_EQ(req.case_id, "level1/1_ReLU");
  std::string notes;
  for (const std::string& n : bundle->notes) notes += n + "\n";
  for (const char* ignored :
       {"request.json's candidate_is_reference true is ignored; this verification uses false",
        "request.json's sandbox.drop_privileges false is ignored; this verification uses true",
        "request.json's sandbox.address_space_mb 0 is ignored; this verification uses 2048",
        "request.json's sandbox.mode \"none\" is ignored", "request.json's config.tolerances",
        "request.json's stage \"build\" is ignored",
        "the run verified on cores '0'; this verification uses 'all'"})
    EXPECT_NE(notes.find(ignored), std::string::npos) << ignored << " not in:\n" << notes;
}

TEST_F(ReproBundleTest, RefusesMalformedDataInTheRequest) {
  struct Bad {
    const char* key;
    json value;
    const char* error;
  };
  for (const Bad& bad : {Bad{"precision", "float8", "precision 'float8' is not one of"},
                         Bad{"overrides", {{"__import__('os')", 1}}, "is not a Python name"},
                         Bad{"config", {{"backend", "gpu"}}, "backend 'gpu' with execution 'device'"},
                         Bad{"config", {{"mode", "fast"}}, "mode 'fast' is not correctness or performance"},
                         Bad{"case_id", 7, "request.json: "}}) {
    std::vector<TarEntry> entries = bundle_entries();
    json request = json::parse(entry(entries, "request.json").data);
    request[bad.key] = bad.value;
    entry(entries, "request.json").data = request.dump();
    auto bundle = open_bundle(pack(entries));
    ASSERT_FALSE(bundle) << bad.key;
    EXPECT_NE(bundle.error().find(bad.error), std::string::npos) << bundle.error();
  }
}

}  // namespace
}  // namespace kgym::verify
