// The benchmark history: a local SQLite database of bench runs, and drift detection
// against each GPU's own baseline and against its peers in the same node.
//
// Durability: every run is written in one transaction (synchronous=FULL, rollback journal),
// so a process killed mid-write loses only the run being written and never corrupts the
// file; tested by SIGKILL-ing a writer (store_test.cc).
//
// Thread safety: a BenchStore is one SQLite connection; use it from one thread. Several
// processes may use the same file (SQLite locking, 5 s busy timeout).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "suanli/bench.h"
#include "suanli/status.h"

struct sqlite3;

namespace suanli {

// $SUANLI_HOME/bench.sqlite, else $XDG_DATA_HOME/suanli/bench.sqlite, else
// $HOME/.local/share/suanli/bench.sqlite.
std::string DefaultBenchDbPath();

// One stored run as read back: the full JSON, parsed.
struct StoredRun {
  int64_t id = 0;
  BenchRun run;
};

class BenchStore {
 public:
  // Opens or creates the database (and its parent directory). Errors: kIoError naming the path.
  static Result<std::unique_ptr<BenchStore>> Open(const std::string& path);
  ~BenchStore();
  BenchStore(const BenchStore&) = delete;
  BenchStore& operator=(const BenchStore&) = delete;

  // Stores a run and one index row per (result, device) in a single transaction; returns its id.
  Result<int64_t> Insert(const BenchRun& run);
  // Every run, oldest first. Runs whose JSON does not parse are an error naming the id.
  Result<std::vector<StoredRun>> Runs();
  Result<int64_t> RunCount();
  // PRAGMA integrity_check: OK, or kIoError with SQLite's report.
  Status IntegrityCheck();
  const std::string& path() const { return path_; }

 private:
  BenchStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// Parses BenchRunToJson output back (the store and `bench compare` use it).
Result<BenchRun> BenchRunFromJson(std::string_view json_text);

// ---------------------------------------------------------------------------------------------
// Drift

struct CompareOptions {
  double drop_threshold = 0.10;   // flag changes larger than this fraction of the reference...
  double noise_multiplier = 3.0;  // ...and larger than this many times the measured noise
};

struct DriftFinding {
  std::string against;        // "baseline" (same GPU, earlier runs) or "peers" (same node, same run)
  std::string name;           // case name
  std::string device;         // "gpu0"
  std::string device_uuid;
  std::string host;
  double value = 0;           // the latest value
  double reference = 0;       // baseline median or peer median
  std::string unit;
  double change = 0;          // signed relative change, + = better (already inverted for "s")
  double noise = 0;           // relative noise used for the decision
  int reference_samples = 0;  // runs or peers behind the reference
  BenchState state = BenchState::kPass;  // PASS, WARN (beyond threshold), FAIL (beyond 2x)
  std::string message;
};

struct CompareReport {
  std::vector<DriftFinding> findings;  // baseline findings first, then peers
  BenchState Overall() const;
};

// Compares the latest run of every host against the earlier runs on the same GPU (matched
// by UUID, else serial, else host + PCI bus id) and against the other GPUs of that run.
// Only PASS/WARN results take part: a FAIL's value is not a performance number.
CompareReport CompareRuns(const std::vector<StoredRun>& runs, const CompareOptions& options);

}  // namespace suanli
