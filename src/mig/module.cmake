# MIG planning (src/mig) and total cost of ownership (src/cost): `suanli mig`, `suanli tco`.
list(APPEND SUANLI_CORE_SOURCES src/mig/mig.cc src/cost/cost.cc)
list(APPEND SUANLI_CLI_SOURCES src/cli/cmd_mig.cc src/cli/cmd_tco.cc)
list(APPEND SUANLI_TEST_SOURCES src/mig/mig_test.cc src/cost/cost_test.cc)
list(APPEND SUANLI_DATA_FILES
  data/mig/a100-40gb.toml
  data/mig/a100-80gb.toml
  data/mig/h100-80gb.toml
  data/mig/h100-94gb.toml
  data/mig/h200.toml
  data/mig/b200.toml
  data/mig/gb200.toml
  data/mig/b300.toml
  data/mig/gb300.toml
  data/tco.toml
)
list(APPEND SUANLI_EXTRA_FUZZ_TARGETS fuzz_mig)
