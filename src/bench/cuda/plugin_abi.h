/* The C interface between suanli and its CUDA plugin (libsuanli_cuda.so).
 *
 * suanli dlopen()s the plugin on demand, so the suanli binary itself starts and works with no
 * NVIDIA library installed. The plugin links the CUDA runtime statically, cuBLASLt dynamically,
 * and loads NCCL with dlopen() when an all-reduce is asked for.
 *
 * Plain C, fixed-size POD structs, and a version number: the plugin and the binary may come
 * from different builds, and a mismatch must be refused, not crash. Bump
 * SUANLI_CUDA_PLUGIN_ABI on any change to these structs or the meaning of a field.
 *
 * Every call is synchronous; the plugin never prints and never exits. Timing: CUDA events
 * around each repetition on one stream, warm-up first (docs/bench-method.md). */
#ifndef SUANLI_BENCH_CUDA_PLUGIN_ABI_H_
#define SUANLI_BENCH_CUDA_PLUGIN_ABI_H_

#ifdef __cplusplus
extern "C" {
#endif

#define SUANLI_CUDA_PLUGIN_ABI 1
#define SUANLI_CUDA_PLUGIN_SYMBOL "suanli_cuda_plugin"
#define SL_MAX_SAMPLES 256
#define SL_MAX_SHAPES 64

enum SlOp {
  SL_OP_MEM_READ = 1,
  SL_OP_MEM_WRITE = 2,
  SL_OP_MEM_COPY = 3,
  SL_OP_MEM_TRIAD = 4,
  SL_OP_MEMCPY_D2D = 5,
  SL_OP_GEMM = 6,            /* shapes[0] */
  SL_OP_GEMM_SEQUENCE = 7,   /* shapes[0..shape_count), timed as one repetition */
  SL_OP_H2D = 8,
  SL_OP_D2H = 9,
  SL_OP_P2P = 10,            /* device -> peer */
  SL_OP_LAUNCH_LATENCY = 11, /* work_per_rep = launches */
  SL_OP_ALLREDUCE = 12       /* all visible devices; work_per_rep = bus bytes */
};

enum SlPrecision { SL_FP32 = 1, SL_TF32 = 2, SL_FP16 = 3, SL_BF16 = 4, SL_FP8 = 5, SL_INT8 = 6 };

enum SlStatus { SL_OK = 0, SL_UNSUPPORTED = 1, SL_ERROR = 2 };

typedef struct {
  long long m, n, k, batch;
} SlGemmShape;

typedef struct {
  int op;              /* SlOp */
  int device;
  int peer;
  int precision;       /* SlPrecision, GEMMs */
  int pinned;          /* host copies */
  int warmup;
  int reps;            /* at most SL_MAX_SAMPLES */
  int shape_count;
  long long bytes;     /* per array / per copy */
  double time_budget_s;  /* stop repeating once this much time has passed (the watchdog kills later) */
  SlGemmShape shapes[SL_MAX_SHAPES];
} SlRequest;

typedef struct {
  int status;          /* SlStatus */
  int sample_count;
  char message[512];
  char check_method[160];
  double seconds[SL_MAX_SAMPLES];
  double work_per_rep; /* bytes, FLOPs or launches per repetition */
  long long checked;
  long long mismatches;
  long long nans;
} SlResult;

typedef struct {
  int index;
  int cc_major, cc_minor;
  int sm_count;
  long long memory_bytes;
  long long l2_bytes;
  int runtime_version;     /* cudaRuntimeGetVersion: 13000 = 13.0 */
  int driver_api_version;  /* cudaDriverGetVersion */
  char name[256];
  char uuid[64];           /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
  char pci_bus_id[32];     /* "0000:18:00.0" */
} SlDeviceInfo;

typedef struct {
  int abi_version;               /* SUANLI_CUDA_PLUGIN_ABI */
  int struct_sizes[3];           /* sizeof(SlRequest), sizeof(SlResult), sizeof(SlDeviceInfo) */
  /* Returns SL_OK and the count; SL_UNSUPPORTED with a message when there is no driver or no
   * device (GPU tests SKIP); SL_ERROR when a driver is present but unusable (they are ERROR). */
  int (*device_count)(int* count, char* err, int err_len);
  int (*device_info)(int device, SlDeviceInfo* out, char* err, int err_len);
  void (*run)(const SlRequest* req, SlResult* out);
} SlCudaApi;

typedef const SlCudaApi* (*SlPluginEntry)(void);

#ifdef __cplusplus
}
#endif

#endif /* SUANLI_BENCH_CUDA_PLUGIN_ABI_H_ */
