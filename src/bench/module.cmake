# suanli bench + history store (src/bench, src/store). Included by the top-level CMakeLists.txt.
#
# Dependencies (Debian): libsqlite3-dev, libopenblas-dev, threads. CUDA is optional: when CMake
# finds nvcc (SUANLI_ENABLE_CUDA=AUTO) or is told to (ON), the .cu files build into a separate
# plugin, libsuanli_cuda.so, next to the suanli binary; suanli dlopen()s it on demand, so the
# binary itself needs no NVIDIA library at run time.

list(APPEND SUANLI_CORE_SOURCES
  src/bench/evaluate.cc
  src/bench/plan.cc
  src/bench/runner.cc
  src/bench/json.cc
  src/bench/cpu_device.cc
  src/bench/cuda_device.cc
  src/bench/calibration.cc
  src/store/store.cc
  src/store/compare.cc
)
list(APPEND SUANLI_CLI_SOURCES src/cli/cmd_bench.cc)
list(APPEND SUANLI_TEST_SOURCES
  src/bench/bench_test.cc
  src/bench/cpu_device_test.cc
  src/bench/calibration_test.cc
  src/bench/gpu_test.cc
  src/store/store_test.cc
  src/store/compare_test.cc
)
list(APPEND SUANLI_DATA_FILES data/bench_expectations.toml)

find_package(SQLite3 REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
list(APPEND SUANLI_CORE_LIBS SQLite::SQLite3 PkgConfig::OPENBLAS Threads::Threads)

# ---- CUDA plugin -------------------------------------------------------------------------------
set(SUANLI_ENABLE_CUDA AUTO CACHE STRING "Build the CUDA benchmark plugin: AUTO (when nvcc is found), ON, OFF")
set_property(CACHE SUANLI_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF)
set(SUANLI_HAVE_CUDA 0)
if(SUANLI_ENABLE_CUDA STREQUAL "OFF")
  message(STATUS "suanli: CUDA plugin disabled (SUANLI_ENABLE_CUDA=OFF); GPU benchmarks will SKIP")
elseif(SUANLI_SANITIZE AND SUANLI_ENABLE_CUDA STREQUAL "AUTO")
  # The sanitized test build runs on CPU-only CI: compiling device code there costs minutes and
  # tests nothing. SUANLI_ENABLE_CUDA=ON builds it anyway, for one architecture, unsanitized.
  message(STATUS "suanli: sanitized build, CUDA plugin skipped (SUANLI_ENABLE_CUDA=ON builds it for sm_80 only)")
else()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      if(SUANLI_SANITIZE OR NOT CMAKE_BUILD_TYPE STREQUAL "Release")
        set(CMAKE_CUDA_ARCHITECTURES 80)
      else()
        # Ampere, Ampere GA10x, Ada, Hopper, Blackwell as SASS, plus PTX for newer GPUs to JIT.
        set(CMAKE_CUDA_ARCHITECTURES 80-real 86-real 89-real 90-real 100-real 100-virtual)
      endif()
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(SUANLI_HAVE_CUDA 1)
    add_library(suanli_cuda SHARED
      src/bench/cuda/plugin.cu
      src/bench/cuda/gemm.cu
      src/bench/cuda/nccl_loader.cu
    )
    set_target_properties(suanli_cuda PROPERTIES
      CUDA_STANDARD 17
      CUDA_STANDARD_REQUIRED ON
      CXX_STANDARD 17
      POSITION_INDEPENDENT_CODE ON
      CUDA_RUNTIME_LIBRARY Static
      CXX_VISIBILITY_PRESET hidden
      CUDA_VISIBILITY_PRESET hidden
      # The directory's flags (-Wall for the host compiler, sanitizers) are not nvcc flags.
      COMPILE_OPTIONS ""
      LINK_OPTIONS ""
      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
    target_include_directories(suanli_cuda PRIVATE ${CMAKE_SOURCE_DIR}/src)
    target_compile_options(suanli_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall --expt-relaxed-constexpr>)
    target_link_libraries(suanli_cuda PRIVATE CUDA::cublasLt ${CMAKE_DL_LIBS})
    # `suanli` loads the plugin at run time; build it whenever suanli is built.
    cmake_language(DEFER CALL add_dependencies suanli suanli_cuda)
    message(STATUS "suanli: CUDA plugin enabled (${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(SUANLI_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SUANLI_ENABLE_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  else()
    message(STATUS "suanli: no CUDA compiler found; GPU benchmarks will SKIP \"built without CUDA\"")
  endif()
endif()
add_compile_definitions(SUANLI_HAVE_CUDA=${SUANLI_HAVE_CUDA}
                        SUANLI_CUDA_PLUGIN_NAME="libsuanli_cuda.so")

# The GPU tests (BenchGpu.*) load the plugin from the build tree; they SKIP without a GPU.
function(suanli_bench_test_wiring)
  if(TARGET suanli_tests)
    # A fake CUDA plugin (same C ABI, synthetic results) for end-to-end tests without a GPU.
    add_library(suanli_fake_cuda_plugin MODULE tests/fake_cuda_plugin.cc)
    target_include_directories(suanli_fake_cuda_plugin PRIVATE ${CMAKE_SOURCE_DIR}/src)
    add_library(suanli_fake_nvml MODULE tests/fake_nvml.cc)
    target_compile_definitions(suanli_tests PRIVATE
                               SUANLI_TEST_FAKE_PLUGIN="$<TARGET_FILE:suanli_fake_cuda_plugin>"
                               SUANLI_TEST_FAKE_NVML="$<TARGET_FILE:suanli_fake_nvml>")
    add_dependencies(suanli_tests suanli_fake_cuda_plugin suanli_fake_nvml)
    add_test(NAME bench_smoke COMMAND ${CMAKE_COMMAND} -DSUANLI=$<TARGET_FILE:suanli>
             -DFAKE_PLUGIN=$<TARGET_FILE:suanli_fake_cuda_plugin>
             -DWORK=${CMAKE_BINARY_DIR}/bench_smoke -P ${CMAKE_SOURCE_DIR}/tests/bench_smoke.cmake)
  endif()
  if(TARGET suanli_tests AND TARGET suanli_cuda)
    target_compile_definitions(suanli_tests PRIVATE SUANLI_TEST_CUDA_PLUGIN="$<TARGET_FILE:suanli_cuda>")
    add_dependencies(suanli_tests suanli_cuda)
  endif()
endfunction()
cmake_language(DEFER CALL suanli_bench_test_wiring)
