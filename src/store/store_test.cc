#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "scratch_dir.h"
#include "suanli/store.h"

namespace suanli {
namespace {

// One directory for the process's databases, removed at exit (the forked writers leave by _exit or SIGKILL, so
// only this process removes it).
std::string TempDb(const std::string& name) {
  static const testing::ScratchDir dir("store");
  const auto p = std::filesystem::path(dir.path()) / name;
  std::filesystem::remove(p);
  std::filesystem::remove(p.string() + "-journal");
  return p.string();
}

// A run whose every value encodes (run number, result number), so a torn write is detectable.
BenchRun MakeRun(int n, int results = 20, const std::string& host = "node-a") {
  BenchRun run;
  run.started_at = "2026-01-01T00:00:" + std::to_string(n % 60) + "Z";
  run.suanli_version = "test";
  run.host.hostname = host;
  run.host.cpu_model = "Test CPU";
  DeviceInfo d;
  d.index = 0;
  d.is_gpu = true;
  d.name = "NVIDIA H100 80GB HBM3";
  d.uuid = "GPU-abc";
  d.serial = "1650000000001";
  d.pci_bus_id = "0000:18:00.0";
  d.driver_version = "580.105.08";
  d.cuda_version = "13.0";
  run.devices.push_back(d);
  for (int i = 0; i < results; ++i) {
    BenchResult r;
    r.name = "gpu.test." + std::to_string(i);
    r.device = "gpu0";
    r.device_index = 0;
    r.state = BenchState::kPass;
    r.value = n * 1000.0 + i;
    r.unit = "B/s";
    r.spread.samples = 3;
    r.spread.median = r.value;
    r.convention = std::string(2000, 'c');  // make each run big enough that a kill lands mid-write
    run.results.push_back(r);
  }
  return run;
}

TEST(StoreHistory, InsertAndReadBackKeyedByDevice) {
  const std::string path = TempDb("basic.sqlite");
  auto store = BenchStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto id1 = (*store)->Insert(MakeRun(1));
  auto id2 = (*store)->Insert(MakeRun(2));
  ASSERT_TRUE(id1.ok() && id2.ok());
  EXPECT_LT(*id1, *id2);
  auto runs = (*store)->Runs();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[1].run.results[3].value, 2003);
  EXPECT_EQ((*runs)[0].run.devices[0].serial, "1650000000001");
  EXPECT_TRUE((*store)->IntegrityCheck().ok());
  // The index table carries the identity columns the issue asks for.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT host, gpu_uuid, gpu_serial, pci_bus_id, driver_version, cuda_version, suanli_version"
                               " FROM results WHERE run_id = ? LIMIT 1",
                               -1, &s, nullptr),
            SQLITE_OK);
  sqlite3_bind_int64(s, 1, *id1);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "node-a");
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 1)), "GPU-abc");
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 3)), "0000:18:00.0");
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 4)), "580.105.08");
  sqlite3_finalize(s);
  sqlite3_close(db);
}

TEST(StoreHistory, ReopeningKeepsRunsAndUnwritableParentIsAnError) {
  const std::string path = TempDb("reopen.sqlite");
  {
    auto store = BenchStore::Open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Insert(MakeRun(7)).ok());
  }
  auto again = BenchStore::Open(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)->RunCount(), 1);
  auto bad = BenchStore::Open("/proc/suanli-no-such-dir/x/bench.sqlite");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kIoError);
  // A file that is not a database (or was damaged outside suanli) says what to do, and is left as it was.
  const std::string junk = TempDb("junk.sqlite");
  {
    std::ofstream out(junk, std::ios::binary);
    out << std::string(4096, 'x');
  }
  auto not_db = BenchStore::Open(junk);
  ASSERT_FALSE(not_db.ok());
  EXPECT_NE(not_db.status().message().find("move it aside"), std::string::npos) << not_db.status().message();
  EXPECT_EQ(std::filesystem::file_size(junk), 4096u);
}

// The durability contract: SIGKILL a writer at a random moment, several times; every run it
// reported as committed is there, whole, and the file passes integrity_check.
TEST(StoreHistory, KilledWriterLosesNothingCommittedAndNeverCorrupts) {
  const std::string path = TempDb("kill.sqlite");
  int64_t committed_total = 0;
  for (int round = 0; round < 3; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      auto store = BenchStore::Open(path);
      if (!store.ok()) _exit(2);
      for (int n = 0;; ++n) {
        auto id = (*store)->Insert(MakeRun(1000 * round + n));
        if (!id.ok()) _exit(3);
        const int64_t v = *id;
        if (write(fds[1], &v, sizeof v) != sizeof v) _exit(4);
      }
    }
    close(fds[1]);
    // Let it commit a few runs, then kill it at an arbitrary point.
    int64_t last = 0;
    int seen = 0;
    while (seen < 5 + 3 * round) {
      int64_t v = 0;
      if (read(fds[0], &v, sizeof v) != sizeof v) break;
      last = v;
      ++seen;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3 + 7 * round));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited early with " << WEXITSTATUS(status);
    int64_t v = 0;
    while (read(fds[0], &v, sizeof v) == sizeof v) last = v;  // commits reported before the kill
    close(fds[0]);
    ASSERT_GT(last, 0);

    auto store = BenchStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->IntegrityCheck().ok());
    auto runs = (*store)->Runs();
    ASSERT_TRUE(runs.ok()) << runs.status().ToString();
    ASSERT_GE(static_cast<int64_t>(runs->size()), last) << "a committed run was lost";
    ASSERT_GE(static_cast<int64_t>(runs->size()), committed_total);
    for (const auto& r : *runs) {
      ASSERT_EQ(r.run.results.size(), 20u) << "run " << r.id << " is torn";
      const double base = r.run.results[0].value;
      for (int i = 0; i < 20; ++i) ASSERT_EQ(r.run.results[i].value, base + i) << "run " << r.id;
    }
    // The index table agrees with the runs table.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM results", -1, &s, nullptr);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int64(s, 0), 20 * static_cast<int64_t>(runs->size()));
    sqlite3_finalize(s);
    sqlite3_close(db);
    committed_total = static_cast<int64_t>(runs->size());
  }
}

}  // namespace
}  // namespace suanli
