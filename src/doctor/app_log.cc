// Application log parser: PyTorch/CUDA error texts, CUDA OOM with the caching allocator's
// numbers, NCCL_DEBUG=INFO transport lines, NCCL watchdog timeouts.
#include <fmt/format.h>

#include <cstring>

#include "doctor/util.h"
#include "suanli/doctor.h"

namespace suanli::doctor {

namespace {

using detail::Clip;
using detail::Contains;

// Finds "<number> <unit>" right after `key` in `line`; returns GiB.
std::optional<double> AmountAfter(std::string_view line, std::string_view key) {
  std::size_t p = line.find(key);
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(p + key.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  std::size_t i = 0;
  while (i < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[i])) || rest[i] == '.')) ++i;
  if (i == 0 || i > 30) return std::nullopt;
  std::string_view num = rest.substr(0, i);
  rest.remove_prefix(i);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  std::size_t u = 0;
  while (u < rest.size() && std::isalpha(static_cast<unsigned char>(rest[u]))) ++u;
  return detail::MemoryToGiB(num, rest.substr(0, u));
}

// "<number> <unit>" immediately BEFORE `key` ("74.10 GiB already allocated").
std::optional<double> AmountBefore(std::string_view line, std::string_view key) {
  std::size_t p = line.find(key);
  if (p == std::string_view::npos || p == 0) return std::nullopt;
  std::string_view head = line.substr(0, p);
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  std::size_t u = head.size();
  while (u > 0 && std::isalpha(static_cast<unsigned char>(head[u - 1]))) --u;
  std::string_view unit = head.substr(u);
  head = head.substr(0, u);
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  std::size_t n = head.size();
  while (n > 0 && (std::isdigit(static_cast<unsigned char>(head[n - 1])) || head[n - 1] == '.')) --n;
  if (n == head.size()) return std::nullopt;
  return detail::MemoryToGiB(head.substr(n), unit);
}

int RankIn(std::string_view line) {
  // "[Rank 3]" (torch watchdog) or "[rank3]:" (torch logging prefix)
  for (std::string_view key : {std::string_view("[Rank "), std::string_view("[rank")}) {
    std::size_t p = line.find(key);
    if (p == std::string_view::npos) continue;
    std::size_t i = p + key.size();
    int r = 0, digits = 0;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])) && digits < 7) {
      r = r * 10 + (line[i] - '0');
      ++i;
      ++digits;
    }
    if (digits) return r;
  }
  return -1;
}

void OomNumbers(std::string_view line, AppEvent* e) {
  // Newer PyTorch (2.x): "Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB of
  // which 12.56 MiB is free. ... Of the allocated memory 77.50 GiB is allocated by PyTorch, and
  // 1.12 GiB is reserved by PyTorch but unallocated."
  // Older: "Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity; 74.10 GiB already allocated;
  // 1.50 GiB free; 76.20 GiB reserved in total by PyTorch)"
  if (auto v = AmountAfter(line, "Tried to allocate")) e->numbers["tried_gib"] = *v;
  if (auto v = AmountAfter(line, "total capacity of")) e->numbers["total_gib"] = *v;
  if (auto v = AmountBefore(line, "total capacity;")) e->numbers["total_gib"] = *v;
  if (auto v = AmountAfter(line, "of which")) e->numbers["free_gib"] = *v;
  if (auto v = AmountBefore(line, "free;")) e->numbers["free_gib"] = *v;
  if (auto v = AmountBefore(line, "is allocated by PyTorch")) e->numbers["allocated_gib"] = *v;
  if (auto v = AmountBefore(line, "already allocated")) e->numbers["allocated_gib"] = *v;
  if (auto v = AmountBefore(line, "is reserved by PyTorch but unallocated"))
    e->numbers["reserved_unallocated_gib"] = *v;
  if (auto v = AmountBefore(line, "reserved in total by PyTorch")) e->numbers["reserved_gib"] = *v;
  if (auto v = AmountAfter(line, "this process has")) e->numbers["process_in_use_gib"] = *v;
  if (e->numbers.count("reserved_gib") && e->numbers.count("allocated_gib") &&
      !e->numbers.count("reserved_unallocated_gib")) {
    e->numbers["reserved_unallocated_gib"] = std::max(0.0, e->numbers["reserved_gib"] - e->numbers["allocated_gib"]);
  }
  if (!e->numbers.count("reserved_gib") && e->numbers.count("allocated_gib") &&
      e->numbers.count("reserved_unallocated_gib")) {
    e->numbers["reserved_gib"] = e->numbers["allocated_gib"] + e->numbers["reserved_unallocated_gib"];
  }
  std::size_t g = line.find("GPU ");
  if (g != std::string_view::npos) {
    if (auto i = detail::LeadingInt(line.substr(g + 4)); i && *i >= 0 && *i < 4096) e->numbers["gpu"] = static_cast<double>(*i);
  }
}

}  // namespace

AppLogParse ParseAppLog(std::string_view text, std::string_view name) {
  AppLogParse out;
  constexpr std::size_t kMaxEvents = 100000;
  bool cut = false;
  auto add = [&](AppEventKind k, std::string_view line, int64_t n) -> AppEvent& {
    AppEvent e;
    e.kind = k;
    e.file = std::string(name);
    e.line = n;
    e.text = Clip(line);
    e.rank = RankIn(line);
    out.events.push_back(std::move(e));
    return out.events.back();
  };
  int64_t last_oom_line = -10;
  detail::CountNulBytes(text, 1, &out.nul);
  detail::ForEachLine(
      text,
      [&](std::string_view line, int64_t n) {
        out.lines = n;
        if (out.events.size() >= kMaxEvents) {
          out.truncated = true;
          return false;
        }
        if (Contains(line, "out of memory") && (Contains(line, "CUDA") || Contains(line, "Tried to allocate"))) {
          // A traceback repeats the message; count one OOM per burst of lines.
          if (n - last_oom_line > 3 || Contains(line, "Tried to allocate")) {
            if (n - last_oom_line <= 3 && !out.events.empty() && out.events.back().kind == AppEventKind::kOom) {
              OomNumbers(line, &out.events.back());
            } else {
              AppEvent& e = add(AppEventKind::kOom, line, n);
              OomNumbers(line, &e);
            }
          }
          last_oom_line = n;
          return true;
        }
        if (Contains(line, "illegal memory access")) { add(AppEventKind::kIllegalAddress, line, n); return true; }
        if (Contains(line, "misaligned address")) { add(AppEventKind::kMisalignedAddress, line, n); return true; }
        if (Contains(line, "no kernel image is available") || Contains(line, "invalid device function") ||
            Contains(line, "device kernel image is invalid")) {
          add(AppEventKind::kNoKernelImage, line, n);
          return true;
        }
        if (Contains(line, "driver on your system is too old") || Contains(line, "driver version is insufficient")) {
          AppEvent& e = add(AppEventKind::kDriverTooOld, line, n);
          std::size_t p = line.find("found version ");
          if (p != std::string_view::npos) {
            if (auto v = detail::LeadingInt(line.substr(p + 14)); v && *v > 0 && *v < 1000000)
              e.numbers["found_cuda"] = static_cast<double>(*v);
          }
          return true;
        }
        if (Contains(line, "is not compatible with the current PyTorch installation")) {
          AppEvent& e = add(AppEventKind::kArchWarning, line, n);
          std::size_t p = line.find("capability sm_");
          if (p != std::string_view::npos) e.detail = Clip(line.substr(p + 11, 8), 8);
          return true;
        }
        if (Contains(line, "The current PyTorch install supports CUDA capabilities")) {
          if (!out.events.empty() && out.events.back().kind == AppEventKind::kArchWarning) {
            std::size_t p = line.find("capabilities");
            out.events.back().detail += " | supports" + Clip(line.substr(p + 12), 200);
          }
          return true;
        }
        if (Contains(line, "PyTorch no longer supports this GPU because it is too old")) {
          add(AppEventKind::kGpuTooOld, line, n);
          return true;
        }
        if (Contains(line, "Torch not compiled with CUDA enabled")) { add(AppEventKind::kTorchNoCuda, line, n); return true; }
        if (Contains(line, "Cannot re-initialize CUDA in forked subprocess")) {
          add(AppEventKind::kForkAfterInit, line, n);
          return true;
        }
        if (Contains(line, "Driver/library version mismatch")) { add(AppEventKind::kNvmlMismatch, line, n); return true; }
        if (Contains(line, "cannot open shared object file") &&
            (Contains(line, "libcud") || Contains(line, "libnvidia") || Contains(line, "libnccl") ||
             Contains(line, "libcublas"))) {
          add(AppEventKind::kMissingCudaLib, line, n);
          return true;
        }
        if (Contains(line, "Duplicate GPU detected")) { add(AppEventKind::kDuplicateDevice, line, n); return true; }
        if (Contains(line, "Watchdog caught collective operation timeout") ||
            (Contains(line, "NCCL") && Contains(line, "timed out")) ||
            (Contains(line, "ran for") && Contains(line, "before timing out"))) {
          AppEvent& e = add(AppEventKind::kNcclTimeout, line, n);
          std::size_t p = line.find("SeqNum=");
          if (p != std::string_view::npos) {
            if (auto v = detail::LeadingInt(line.substr(p + 7))) e.numbers["seq"] = static_cast<double>(*v);
          }
          p = line.find("OpType=");
          if (p != std::string_view::npos) e.detail = Clip(line.substr(p + 7, line.find_first_of(",)", p) - p - 7), 40);
          return true;
        }
        if (Contains(line, "NCCL INFO") || Contains(line, "NCCL WARN")) {
          if (Contains(line, "NCCL_P2P_DISABLE set by environment to 1") ||
              Contains(line, "NCCL_IB_DISABLE set by environment to 1") ||
              Contains(line, "NCCL_SHM_DISABLE set by environment to 1")) {
            AppEvent& e = add(AppEventKind::kNcclP2pDisabled, line, n);
            std::size_t p = line.find("NCCL_");
            std::size_t q = line.find(' ', p);
            e.detail = Clip(line.substr(p, q == std::string_view::npos ? std::string_view::npos : q - p), 40);
            return true;
          }
          if (Contains(line, "via NET/Socket") || Contains(line, "Using network Socket") ||
              (Contains(line, "NET/Socket : Using") && !Contains(line, "NET/IB"))) {
            AppEvent& e = add(AppEventKind::kNcclSocket, line, n);
            std::size_t p = line.find("Using [");
            if (p != std::string_view::npos) e.detail = Clip(line.substr(p + 6, 60), 60);
            return true;
          }
          if (Contains(line, "via NET/IB") || Contains(line, "Using network IB") || Contains(line, "NET/IB : Using")) {
            add(AppEventKind::kNcclIb, line, n);
            return true;
          }
          if (Contains(line, "via P2P/") || Contains(line, "via SHM") || Contains(line, "NVLS") ||
              Contains(line, "via P2P")) {
            add(AppEventKind::kNcclP2pOrNvls, line, n);
            return true;
          }
          if (Contains(line, "nranks ")) {
            // "comm 0x... rank 0 nranks 8 cudaDev 0 ... - Init COMPLETE": remember the world size.
            AppEvent& e = add(AppEventKind::kNcclP2pOrNvls, line, n);
            e.kind = AppEventKind::kNcclP2pOrNvls;
            std::size_t p = line.find("nranks ");
            if (auto v = detail::LeadingInt(line.substr(p + 7)); v && *v > 0 && *v < 1000000)
              e.numbers["nranks"] = static_cast<double>(*v);
            e.detail = "init";
            return true;
          }
        }
        if (Contains(line, "ncclSystemError") || Contains(line, "ncclInternalError") ||
            Contains(line, "ncclUnhandledCudaError") || Contains(line, "NCCL error") ||
            Contains(line, "unhandled system error")) {
          add(AppEventKind::kNcclError, line, n);
          return true;
        }
        return true;
      },
      65536, &cut);
  if (cut) {
    out.truncated = true;
    out.problems.push_back(fmt::format("{}: a line longer than 64 KiB was cut", name));
  }
  return out;
}

}  // namespace suanli::doctor
