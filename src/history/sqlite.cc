#include "history/sqlite.h"

#include <sqlite3.h>

#include <fmt/format.h>

namespace kgym::history {
namespace {

[[noreturn]] void fail(sqlite3* db, std::string_view what) {
  throw SqlError(fmt::format("{}: {}", what, db ? sqlite3_errmsg(db) : "out of memory"));
}

}  // namespace

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db), sql_(sql) {
  if (sqlite3_prepare_v2(db_, sql_.data(), static_cast<int>(sql_.size()), &stmt_, nullptr) != SQLITE_OK)
    fail(db_, fmt::format("preparing `{}`", sql_));
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, std::int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) fail(db_, sql_);
  return *this;
}
Statement& Statement::bind(int index, double value) {
  if (sqlite3_bind_double(stmt_, index, value) != SQLITE_OK) fail(db_, sql_);
  return *this;
}
Statement& Statement::bind(int index, std::string_view value) {
  if (sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT) !=
      SQLITE_OK)
    fail(db_, sql_);
  return *this;
}
Statement& Statement::bind(int index, std::nullptr_t) {
  if (sqlite3_bind_null(stmt_, index) != SQLITE_OK) fail(db_, sql_);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, fmt::format("running `{}`", sql_));
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
std::int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }
std::string Statement::text(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, column))
           : std::string();
}
std::optional<double> Statement::optional_real(int column) const {
  return is_null(column) ? std::nullopt : std::optional(real(column));
}
std::optional<std::int64_t> Statement::optional_integer(int column) const {
  return is_null(column) ? std::nullopt : std::optional(integer(column));
}
std::optional<std::string> Statement::optional_text(int column) const {
  return is_null(column) ? std::nullopt : std::optional(text(column));
}

Database Database::open(const std::filesystem::path& file, std::chrono::milliseconds busy_timeout) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(file.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw SqlError(fmt::format("cannot open {}: {}", file.string(), message));
  }
  sqlite3_busy_timeout(db, static_cast<int>(busy_timeout.count()));
  return Database(db);
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(std::string_view sql) {
  std::string text(sql);
  char* error = nullptr;
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : sqlite3_errmsg(db_);
    sqlite3_free(error);
    throw SqlError(fmt::format("running `{}`: {}", text.substr(0, 80), message));
  }
}

std::int64_t Database::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }

int Database::user_version() {
  Statement s = prepare("PRAGMA user_version");
  return s.step() ? static_cast<int>(s.integer(0)) : 0;
}

Transaction::~Transaction() {
  if (done_) return;
  try {
    db_.exec("ROLLBACK");
  } catch (const SqlError&) {  // nothing more to undo
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace kgym::history
