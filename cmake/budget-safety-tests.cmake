# budget-safety-tests.cmake - issue 24's end-to-end suite: the team Cohort never freezes above
# the pool (ownership and reinstall, the capacity team deleted, Observe, queues held instead of
# deleted, the smaller findings; docs/budget.md "States").
#
# Included from the top-level CMakeLists.txt after the aggregator and tau-cli exist.
#   e2e/budget-safety  tests/e2e/test_budget_safety.py (run_suite.py, /usr/bin/python3): the team
#                      budget's harness (tests/e2e/budget/): kube-sim with --authz rbac, the Kueue
#                      and taugrid CRDs and kube-sim's Kueue admission rules, the real
#                      tau-aggregator; its tools are required by cmake/test-tools.cmake.
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/budget-safety
      TESTS test_budget_safety
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 600
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>" "TAU_CLI=$<TARGET_FILE:tau-cli>"
                  "TAU_PROTOC=${TAU_PROTOC}")
endif()
