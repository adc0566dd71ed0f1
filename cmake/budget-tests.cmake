# budget-tests.cmake - the team capacity budget's end-to-end suite (docs/budget.md, P1-P8).
#
# Included from the top-level CMakeLists.txt after the aggregator and tau-cli exist.
#   e2e/budget  tests/e2e/test_budget.py (run_suite.py, /usr/bin/python3): kube-sim with
#               --authz rbac, the Kueue and taugrid CRDs and kube-sim's Kueue admission rules,
#               the real tau-aggregator (one, or two with --leader-elect), fake agents over
#               grpcio; its tools are required by cmake/test-tools.cmake.
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/budget
      TESTS test_budget
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 600
      COST 40
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>" "TAU_CLI=$<TARGET_FILE:tau-cli>"
                  "TAU_PROTOC=${TAU_PROTOC}")
endif()

# e2e/dra  tests/e2e/test_dra.py: GPUs published only through DRA (tests/fixtures/dra) in the
#          Cohort of the real aggregator and `tau inventory pool`: the complete pool counts, a
#          generation in flight does not until its last slice appears, the DeviceClass's
#          selector and extendedResourceName followed, Kueue's deviceClassMappings followed
#          from its ConfigMap, a deleted DeviceClass counts nothing.
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/dra
      TESTS test_dra
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 120
      COST 5
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>" "TAU_CLI=$<TARGET_FILE:tau-cli>"
                  "TAU_PROTOC=${TAU_PROTOC}")
endif()
