// A stand-in for libnvidia-ml.so.1 with the few entry points suanli uses, for testing the idle
// check and the serial/driver fields without a GPU. GPU i's handle is (i + 1); UUIDs are the fake
// CUDA plugin's ("GPU-fake...0000i").
//
// Environment: SUANLI_FAKE_NVML_BUSY=I puts one other compute process on GPU I at 60% utilisation;
// SUANLI_FAKE_NVML_HOT=I makes GPU I run 2 C below its slowdown threshold.
#include <cstdio>
#include <cstdlib>
#include <cstring>

// The same global type names as nvml.h (and suanli's declarations), so that calls through
// suanli's function pointers have exactly the type of these functions (UBSan checks it).
struct nvmlDevice_st;
struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
};

extern "C" {

using Handle = nvmlDevice_st*;
constexpr int kSuccess = 0, kInvalid = 2, kInsufficientSize = 7;

static int Index(Handle h) { return static_cast<int>(reinterpret_cast<long>(h)) - 1; }
static Handle FromIndex(int i) { return reinterpret_cast<Handle>(static_cast<long>(i) + 1); }
static bool Is(const char* var, int i) {
  const char* e = std::getenv(var);
  return e && std::atoi(e) == i;
}

__attribute__((visibility("default"))) int nvmlInit_v2() { return kSuccess; }

__attribute__((visibility("default"))) int nvmlDeviceGetHandleByUUID(const char* uuid, Handle* h) {
  const char* prefix = "GPU-fake0000-0000-0000-0000-00000000000";
  if (std::strncmp(uuid, prefix, std::strlen(prefix)) != 0) return kInvalid;
  *h = FromIndex(std::atoi(uuid + std::strlen(prefix)));
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetSerial(Handle h, char* s, unsigned len) {
  std::snprintf(s, len, "165000000000%d", Index(h));
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlSystemGetDriverVersion(char* s, unsigned len) {
  std::snprintf(s, len, "580.105.08");
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetTemperature(Handle h, int, unsigned* t) {
  *t = Is("SUANLI_FAKE_NVML_HOT", Index(h)) ? 85 : 35;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetTemperatureThreshold(Handle, int, unsigned* t) {
  *t = 87;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetClockInfo(Handle, int, unsigned* c) {
  *c = 345;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetMaxClockInfo(Handle, int, unsigned* c) {
  *c = 1980;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetComputeRunningProcesses_v3(Handle h, unsigned* count,
                                                                                    void* infos) {
  const unsigned n = Is("SUANLI_FAKE_NVML_BUSY", Index(h)) ? 1 : 0;
  if (n > *count || (n > 0 && !infos)) {
    *count = n;
    return n ? kInsufficientSize : kSuccess;
  }
  *count = n;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(Handle h, nvmlUtilization_st* u) {
  u->gpu = Is("SUANLI_FAKE_NVML_BUSY", Index(h)) ? 60 : 0;
  u->memory = 0;
  return kSuccess;
}

}  // extern "C"
