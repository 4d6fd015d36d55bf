// SQLite history of bench runs. One transaction per run; the full JSON is the record, the
// `results` table indexes it by device identity for queries.
#include "suanli/store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>

namespace suanli {

namespace {

constexpr int kBusyTimeoutMs = 5000;
constexpr int kSchemaVersion = 1;

constexpr const char* kSchemaSql = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at TEXT NOT NULL,
  host TEXT NOT NULL,
  suanli_version TEXT NOT NULL,
  overall TEXT NOT NULL,
  result_count INTEGER NOT NULL,
  json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  device TEXT NOT NULL,
  host TEXT NOT NULL,
  gpu_uuid TEXT NOT NULL,
  gpu_serial TEXT NOT NULL,
  pci_bus_id TEXT NOT NULL,
  driver_version TEXT NOT NULL,
  cuda_version TEXT NOT NULL,
  suanli_version TEXT NOT NULL,
  device_name TEXT NOT NULL,
  state TEXT NOT NULL,
  value REAL,
  unit TEXT NOT NULL,
  spread_min REAL,
  spread_max REAL,
  peak REAL,
  fraction REAL
);
CREATE INDEX IF NOT EXISTS results_by_gpu ON results(gpu_uuid, name);
CREATE INDEX IF NOT EXISTS results_by_host ON results(host, name);
)sql";

// What to do about a history file SQLite cannot read as a database: this build never writes one (every commit is
// atomic), so it is another file or one damaged outside suanli.
std::string Advice(sqlite3* db) {
  const int rc = db ? sqlite3_errcode(db) : SQLITE_NOMEM;
  return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB
             ? " (not a readable bench history: keep it for inspection, move it aside, and run `suanli bench` again, "
               "which starts a new history there; or pass --db another file)"
             : "";
}

Status SqlError(sqlite3* db, const std::string& what) {
  return IoError(fmt::format("{}: {}{}", what, db ? sqlite3_errmsg(db) : "out of memory", Advice(db)));
}

Status Exec(sqlite3* db, const char* sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    Status s = IoError(fmt::format("{}: {}{}", what, err ? err : "unknown error", Advice(db)));
    sqlite3_free(err);
    return s;
  }
  return Status::Ok();
}

// RAII for prepared statements.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return s_; }
  void Text(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void Real(int i, std::optional<double> v) {
    if (v) sqlite3_bind_double(s_, i, *v);
    else sqlite3_bind_null(s_, i);
  }
  void Int(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_;
};

}  // namespace

std::string DefaultBenchDbPath() {
  if (const char* h = std::getenv("SUANLI_HOME"); h && *h) return std::string(h) + "/bench.sqlite";
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/suanli/bench.sqlite";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.local/share/suanli/bench.sqlite";
  return "bench.sqlite";
}

Result<std::unique_ptr<BenchStore>> BenchStore::Open(const std::string& path) {
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return IoError(fmt::format("{}: cannot create directory {}: {}", path, parent.string(), ec.message()));
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
      SQLITE_OK) {
    Status s = SqlError(db, "cannot open bench history " + path);
    sqlite3_close(db);
    return s;
  }
  std::unique_ptr<BenchStore> store(new BenchStore(db, path));
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // Rollback journal + synchronous=FULL: a commit is on disk before Insert returns, and a
  // crash at any point rolls back to the last commit on the next open.
  SUANLI_RETURN_IF_ERROR(Exec(db, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
                              path + ": setting up"));
  Stmt v(db, "PRAGMA user_version");
  int version = 0;
  if (v.ok() && sqlite3_step(v.get()) == SQLITE_ROW) version = sqlite3_column_int(v.get(), 0);
  if (version > kSchemaVersion)
    return IoError(fmt::format("{}: written by a newer suanli (history schema {}, this build reads {})", path, version,
                               kSchemaVersion));
  SUANLI_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE", path + ": schema"));
  Status s = Exec(db, kSchemaSql, path + ": creating tables");
  if (s.ok()) s = Exec(db, fmt::format("PRAGMA user_version={}", kSchemaVersion).c_str(), path);
  if (!s.ok()) {
    Exec(db, "ROLLBACK", path);
    return s;
  }
  SUANLI_RETURN_IF_ERROR(Exec(db, "COMMIT", path + ": schema"));
  return store;
}

BenchStore::~BenchStore() { sqlite3_close(db_); }

Result<int64_t> BenchStore::Insert(const BenchRun& run) {
  const std::string what = path_ + ": storing the run";
  SUANLI_RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE", what));
  auto fail = [&](Status s) {
    Exec(db_, "ROLLBACK", what);
    return s;
  };
  Stmt r(db_, "INSERT INTO runs(started_at, host, suanli_version, overall, result_count, json) VALUES (?,?,?,?,?,?)");
  if (!r.ok()) return fail(SqlError(db_, what));
  r.Text(1, run.started_at);
  r.Text(2, run.host.hostname);
  r.Text(3, run.suanli_version);
  r.Text(4, BenchStateName(run.Overall()));
  r.Int(5, static_cast<int64_t>(run.results.size()));
  r.Text(6, BenchRunToJson(run));
  if (sqlite3_step(r.get()) != SQLITE_DONE) return fail(SqlError(db_, what));
  const int64_t id = sqlite3_last_insert_rowid(db_);
  Stmt x(db_,
         "INSERT INTO results(run_id, name, device, host, gpu_uuid, gpu_serial, pci_bus_id, driver_version, cuda_version,"
         " suanli_version, device_name, state, value, unit, spread_min, spread_max, peak, fraction)"
         " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!x.ok()) return fail(SqlError(db_, what));
  for (const auto& res : run.results) {
    const DeviceInfo* d = nullptr;
    for (const auto& dev : run.devices)
      if (res.device_index == dev.index && res.device != "cpu") d = &dev;
    sqlite3_reset(x.get());
    x.Int(1, id);
    x.Text(2, res.name);
    x.Text(3, res.device);
    x.Text(4, run.host.hostname);
    x.Text(5, d ? d->uuid : "");
    x.Text(6, d ? d->serial : "");
    x.Text(7, d ? d->pci_bus_id : "");
    x.Text(8, d ? d->driver_version : "");
    x.Text(9, d ? d->cuda_version : "");
    x.Text(10, run.suanli_version);
    x.Text(11, d ? d->name : (res.device == "cpu" ? run.host.cpu_model : ""));
    x.Text(12, BenchStateName(res.state));
    x.Real(13, res.state == BenchState::kSkip ? std::nullopt : std::optional<double>(res.value));
    x.Text(14, res.unit);
    x.Real(15, res.spread.samples ? std::optional<double>(res.spread.min) : std::nullopt);
    x.Real(16, res.spread.samples ? std::optional<double>(res.spread.max) : std::nullopt);
    x.Real(17, res.peak);
    x.Real(18, res.fraction);
    if (sqlite3_step(x.get()) != SQLITE_DONE) return fail(SqlError(db_, what));
  }
  SUANLI_RETURN_IF_ERROR(Exec(db_, "COMMIT", what));
  return id;
}

Result<std::vector<StoredRun>> BenchStore::Runs() {
  Stmt s(db_, "SELECT id, json FROM runs ORDER BY id");
  if (!s.ok()) return SqlError(db_, path_ + ": reading runs");
  std::vector<StoredRun> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    StoredRun r;
    r.id = sqlite3_column_int64(s.get(), 0);
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 1));
    auto run = BenchRunFromJson(text ? text : "");
    if (!run.ok()) return run.status().WithContext(fmt::format("{}: run {}", path_, r.id));
    r.run = std::move(run).value();
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return SqlError(db_, path_ + ": reading runs");
  return out;
}

Result<int64_t> BenchStore::RunCount() {
  Stmt s(db_, "SELECT COUNT(*) FROM runs");
  if (!s.ok() || sqlite3_step(s.get()) != SQLITE_ROW) return SqlError(db_, path_ + ": counting runs");
  return sqlite3_column_int64(s.get(), 0);
}

Status BenchStore::IntegrityCheck() {
  Stmt s(db_, "PRAGMA integrity_check");
  if (!s.ok()) return SqlError(db_, path_ + ": integrity_check");
  std::string report;
  while (sqlite3_step(s.get()) == SQLITE_ROW) {
    const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
    report += (report.empty() ? "" : "; ") + std::string(t ? t : "");
  }
  if (report != "ok") return IoError(fmt::format("{}: integrity check failed: {}", path_, report));
  return Status::Ok();
}

}  // namespace suanli
