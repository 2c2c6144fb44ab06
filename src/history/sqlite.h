#pragma once
// A thin RAII layer over SQLite 3 (Debian's libsqlite3): one open
// connection, prepared statements with typed binds and columns. Every
// failure throws SqlError with SQLite's message and the statement; the
// history layer's public functions catch it once and return it as a value.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace kgym::history {

struct SqlError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds parameter `index` (from 1); nullopt binds NULL.
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, std::nullptr_t);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind(index, nullptr);
  }
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }

  // Advances: true while a row is available, false when done.
  bool step();
  // Steps to completion, ignoring rows; then resets for reuse.
  void run();
  void reset();  // also clears the binds

  bool is_null(int column) const;
  std::int64_t integer(int column) const;
  double real(int column) const;
  std::string text(int column) const;  // "" for NULL
  std::optional<double> optional_real(int column) const;
  std::optional<std::int64_t> optional_integer(int column) const;
  std::optional<std::string> optional_text(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

class Database {
 public:
  // Opens (creating) `file` read-write with a busy timeout, so writers of
  // other processes are waited for rather than failed.
  static Database open(const std::filesystem::path& file, std::chrono::milliseconds busy_timeout);
  ~Database();
  Database(Database&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Database& operator=(Database&&) = delete;
  Database(const Database&) = delete;

  void exec(std::string_view sql);  // one or more statements, no rows
  Statement prepare(std::string_view sql) { return Statement(db_, sql); }
  std::int64_t last_insert_id() const;
  // PRAGMA user_version.
  int user_version();

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// BEGIN IMMEDIATE (the write lock at once, so two writers never deadlock
// on an upgrade) ... COMMIT; rolled back if not committed.
class Transaction {
 public:
  explicit Transaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace kgym::history
