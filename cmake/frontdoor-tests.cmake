# frontdoor-tests.cmake - `tau` as the platform's front door (issue 18).
#
# Included from the top-level CMakeLists.txt after tau-cli and tau-aggregator exist.
#   e2e/frontdoor  tests/e2e/test_frontdoor.py against kube-sim: the system namespace found
#                  without flags (TauCluster status.systemNamespace).

if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/frontdoor
      PYTHON ${PYTHON3}
      TESTS test_frontdoor
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      LABELS e2e python
      ENVIRONMENT "TAU_CLI=$<TARGET_FILE:tau-cli>" "TAU_AGGREGATOR=$<TARGET_FILE:tau-aggregator>")
endif()
