# suanli doctor: appended to the shared source lists by CMakeLists.txt.
find_package(pugixml REQUIRED)
list(APPEND SUANLI_CORE_SOURCES
  src/doctor/common.cc
  src/doctor/knowledge.cc
  src/doctor/kernel_log.cc
  src/doctor/smi.cc
  src/doctor/prometheus.cc
  src/doctor/app_log.cc
  src/doctor/rules.cc
  src/doctor/inputs.cc
  src/doctor/live.cc
)
list(APPEND SUANLI_CORE_LIBS pugixml::pugixml)
list(APPEND SUANLI_CLI_SOURCES src/cli/cmd_doctor.cc)
list(APPEND SUANLI_TEST_SOURCES
  src/doctor/parsers_test.cc
  src/doctor/rules_test.cc
  src/doctor/golden_test.cc
  src/doctor/live_test.cc
)
list(APPEND SUANLI_DATA_FILES
  data/doctor/xid.toml
  data/doctor/compat.toml
  data/doctor/thresholds.toml
)
list(APPEND SUANLI_EXTRA_FUZZ_TARGETS fuzz_doctor)
# End-to-end CLI checks (exit codes, JSON, bundle, simulated live machine). add_test only records
# the test; the suanli target it names is defined later in CMakeLists.txt.
if(SUANLI_BUILD_TESTS)
  enable_testing()
  add_test(NAME doctor_cli COMMAND ${CMAKE_COMMAND} -DSUANLI=$<TARGET_FILE:suanli> -DROOT=${CMAKE_SOURCE_DIR}
           -P ${CMAKE_SOURCE_DIR}/tests/doctor_cli.cmake)
endif()
# Google Benchmark program for the doctor parsers (suanli_core is defined later; CMake resolves
# the target name at generation time).
if(SUANLI_BUILD_BENCH)
  find_package(benchmark REQUIRED)
  add_executable(doctor_bench bench/doctor_bench.cc)
  target_link_libraries(doctor_bench PRIVATE suanli_core benchmark::benchmark)
endif()
