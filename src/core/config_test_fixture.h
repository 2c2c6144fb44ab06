#pragma once
// Test fixture for the config tests: a temp directory per test holding a
// dataset (bench/level1/) and a replay directory (solutions/).
#include <stdlib.h>

#include <expected>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/config.h"
#include "util/temp_dir.h"

namespace kgym::testing_config {
namespace fs = std::filesystem;

// Passes when `text` contains `part`; prints both otherwise.
inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected to find\n  " << part << "\nin\n  " << text;
}

// A valid config for the tree the fixture makes; tests append to it.
constexpr std::string_view kMinimal =
    "bench_dir: bench\n"
    "agent:\n"
    "  kind: replay\n"
    "  dir: solutions\n";

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temp_.path().empty());
    dir_ = temp_.path();
    saved_cwd_ = fs::current_path();
    fs::create_directories(dir_ / "bench" / "level1");
    fs::create_directories(dir_ / "solutions");
  }
  void TearDown() override { fs::current_path(saved_cwd_); }

  fs::path write(std::string_view text, const fs::path& name = "config.yaml") {
    fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path;
  }

  std::expected<Config, ConfigError> load(std::string_view text, std::vector<std::string> sets = {},
                                          std::vector<std::string> overrides = {}) {
    return load_config(ConfigSource{write(text), std::move(sets), std::move(overrides)});
  }

  // The error message of a config that must fail.
  std::string error_of(std::string_view text, std::vector<std::string> sets = {},
                       std::vector<std::string> overrides = {}) {
    auto config = load(text, std::move(sets), std::move(overrides));
    EXPECT_FALSE(config.has_value()) << "the config was accepted";
    return config ? "" : config.error().message;
  }

  // "<dir>/config.yaml:LINE: key 'KEY': "
  std::string at(int line, std::string_view key) const {
    return (dir_ / "config.yaml").string() + ":" + std::to_string(line) + ": key '" + std::string(key) +
           "': ";
  }

  util::TempDir temp_{"kgym-config"};
  fs::path dir_;
  fs::path saved_cwd_;
};

}  // namespace kgym::testing_config
