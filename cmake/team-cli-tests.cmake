# team-cli-tests.cmake - the `tau team list|status` e2e.
#
# Included from the top-level CMakeLists.txt after tau-cli exists.
#   e2e/cli-team   tests/e2e/test_cli_team.py (run_suite.py) against kube-sim (Kueue and taugrid CRDs, objects
#                  and statuses written by hand); `tau` is the real binary (TAU_CLI).

if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/cli-team
      PYTHON ${PYTHON3}
      TESTS test_cli_team
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      LABELS e2e python
      ENVIRONMENT "TAU_CLI=$<TARGET_FILE:tau-cli>")
endif()
