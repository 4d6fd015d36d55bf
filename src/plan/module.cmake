list(APPEND SUANLI_CORE_SOURCES src/plan/plan.cc src/plan/emit.cc src/plan/select.cc)
list(APPEND SUANLI_CLI_SOURCES src/cli/cmd_plan.cc)
list(APPEND SUANLI_TEST_SOURCES src/plan/plan_test.cc)
