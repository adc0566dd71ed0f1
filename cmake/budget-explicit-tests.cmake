# budget-explicit-tests.cmake - explicit-quota teams' end-to-end suite (docs/api.md, E1-E10).
#
# Included from the top-level CMakeLists.txt after the aggregator and tau-cli exist.
#   e2e/budget-explicit  tests/e2e/test_budget_explicit.py (run_suite.py, /usr/bin/python3):
#                        the team budget's harness (tests/e2e/budget/): kube-sim with --authz
#                        rbac, the Kueue and taugrid CRDs and kube-sim's Kueue admission rules,
#                        the real tau-aggregator with a TauCluster that names no capacity team;
#                        its tools are required by cmake/test-tools.cmake.
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/budget-explicit
      TESTS test_budget_explicit
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 600
      COST 50
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>" "TAU_CLI=$<TARGET_FILE:tau-cli>"
                  "TAU_PROTOC=${TAU_PROTOC}")
endif()
