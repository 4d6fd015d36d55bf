// `suanli validate --command`: every training and serving case's command, run through the CLI, gives the estimate the
// validation harness computed for the case. The harness reads a case's keys with its own defaults (ZeRO 0, 2,048
// tokens, no recompute, 8 GPUs per node on ib-ndr) and the CLI has others (ZeRO 1, 4,096 tokens, the fastest recompute,
// the GPU's reference system), so a flag the command leaves out, or one the CLI reads differently from the case key,
// shows up here as a different step time. End to end: the suanli binary is run as a user runs it.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "suanli/text.h"

namespace {

using nlohmann::json;

struct Exec {
  std::string out;
  int status = -1;
};

// Runs a shell command line in the source tree (the bundled cases' configs are named relative to it).
Exec Shell(const std::string& line) {
  Exec r;
  FILE* p = popen(("cd " + suanli::ShellQuote(SUANLI_SOURCE_DIR) + " && " + line + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 65536> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string CommandLine(const json& args) {
  std::string line = suanli::ShellQuote(SUANLI_CLI);
  for (const auto& a : args) line += " " + suanli::ShellQuote(a.get<std::string>());
  return line;
}

TEST(ValidateCommand, EveryCaseCommandReproducesItsEstimate) {
  const Exec all = Shell(suanli::ShellQuote(SUANLI_CLI) + " validate --command --json");
  ASSERT_TRUE(all.status == 0 || all.status == 3) << all.out.substr(0, 2000);  // 3: a group misses its target
  const json doc = json::parse(all.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(doc.is_object() && doc.contains("cases")) << all.out.substr(0, 2000);
  std::vector<json> cases;
  int kernels = 0;
  for (const auto& c : doc["cases"]) {
    ASSERT_FALSE(c.contains("failure")) << c["name"];
    const std::string kind = c.contains("step_time_s") ? "train" : c.contains("ttft_s") ? "infer" : "";
    if (kind.empty()) {
      EXPECT_FALSE(c.contains("command")) << c["name"];  // GEMM and attention kernels
      ++kernels;
      continue;
    }
    ASSERT_TRUE(c.contains("command")) << c["name"];
    EXPECT_EQ(c["command"][0], "perf");
    EXPECT_EQ(c["command"][1], kind) << c["name"];
    cases.push_back(c);
  }
  // The bundled set: over a thousand training and serving cases; the kernels (GEMM, attention) have no command.
  EXPECT_GT(cases.size(), 1000u);
  EXPECT_GT(kernels, 100);

  std::mutex mu;
  std::vector<std::string> mismatches;
  std::atomic<size_t> next{0};
  const auto worker = [&] {
    for (size_t i = next++; i < cases.size(); i = next++) {
      const json& c = cases[i];
      const Exec r = Shell(CommandLine(c["command"]) + " --json");
      const json got = json::parse(r.out, nullptr, false);
      std::string why;
      const auto same = [](double a, double b) { return std::abs(a / b - 1) <= 1e-9; };
      if (!got.is_object()) {
        why = "no JSON: " + r.out.substr(0, 300);
      } else if (!c["fits"].get<bool>()) {
        // A layout the memory model rejects: the CLI reports the shortfall (exit 3) instead of a time.
        if (r.status != 3 || got.value("fits", true)) why = "expected DOES NOT FIT (exit 3), got exit " + std::to_string(r.status);
      } else if (r.status != 0) {
        why = "exit " + std::to_string(r.status) + ": " + r.out.substr(0, 300);
      } else if (c.contains("step_time_s")) {
        if (!got.contains("step_time_s") || !same(got["step_time_s"], c["step_time_s"]))
          why = "step_time_s " + got.value("step_time_s", json(nullptr)).dump() + " against " + c["step_time_s"].dump();
      } else {
        // A closed-loop case (concurrency) is its command's `closed_loop` figures, not the batch-C decode estimate; a
        // disaggregated one its `disaggregated` figures.
        const json& v = got.contains("closed_loop")     ? got["closed_loop"]
                        : got.contains("disaggregated") ? got["disaggregated"]
                                                        : got;
        if (!v.contains("ttft_s") || !same(v["ttft_s"], c["ttft_s"]) || !same(v["tpot_s"], c["tpot_s"]))
          why = "ttft_s/tpot_s " + v.value("ttft_s", json(nullptr)).dump() + "/" + v.value("tpot_s", json(nullptr)).dump() +
                " against " + c["ttft_s"].dump() + "/" + c["tpot_s"].dump();
      }
      if (!why.empty()) {
        std::lock_guard<std::mutex> lock(mu);
        mismatches.push_back(c["name"].get<std::string>() + ": " + why + "\n  " + CommandLine(c["command"]));
      }
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < 4; ++i) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " of " << cases.size() << " commands differ, e.g.\n"
                                  << mismatches.front();
}

// --case selects by a part of the name, in any letter case, and summarises the selection alone; a text no name
// contains is an error naming it. The printed command is one shell line that runs.
TEST(ValidateCommand, CaseSelectsByNameAndPrintsARunnableLine) {
  const std::string cli = suanli::ShellQuote(SUANLI_CLI);
  const Exec one = Shell(cli + " validate --case 'korthikanti 22B, SP' --json");
  const json j = json::parse(one.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << one.out;
  ASSERT_EQ(j["cases"].size(), 1u);
  EXPECT_EQ(j["cases"][0]["name"], "Korthikanti 22B, SP + selective");
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_EQ(j["groups"][0]["cases"], 1);
  EXPECT_DOUBLE_EQ(j["groups"][0]["mean_abs_error"].get<double>(), std::abs(j["cases"][0]["error"].get<double>()));

  const Exec none = Shell(cli + " validate --case 'no such run'");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.out.find("--case 'no such run': no case's name contains it"), std::string::npos) << none.out;

  const Exec text = Shell(cli + " validate --case 'korthikanti 22B, SP' --command");
  ASSERT_EQ(text.status, 0) << text.out;
  const size_t at = text.out.find("\nsuanli perf train ");
  ASSERT_NE(at, std::string::npos) << text.out;
  std::string line = text.out.substr(at + 1, text.out.find('\n', at + 1) - at - 1);
  line.replace(0, 6, cli);  // "suanli" -> this build's binary
  const Exec ran = Shell(line + " --json");
  ASSERT_EQ(ran.status, 0) << line << "\n" << ran.out;
  EXPECT_EQ(json::parse(ran.out)["step_time_s"], j["cases"][0]["step_time_s"]);
}

}  // namespace
