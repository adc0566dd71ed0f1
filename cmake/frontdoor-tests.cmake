# frontdoor-tests.cmake - `tau` as the platform's front door (issue 18).
#
# Included from the top-level CMakeLists.txt after tau-cli and tau-aggregator exist.
#   e2e/frontdoor  tests/e2e/test_frontdoor.py against kube-sim with the real helm and kubectl
#                  (.tools/bin, scripts/install-deps) and the real tau-aggregator: the system
#                  namespace found without flags, `tau workspace create` (defaults, every flag,
#                  --dry-run applied by kubectl, refusals, --wait), `tau workspace delete` with a
#                  held drain, `tau cluster install|status|uninstall` (the gate step by step,
#                  a custom namespace, the umbrella/standalone conflict both ways).

if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/frontdoor
      PYTHON ${PYTHON3}
      TESTS test_frontdoor
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      COST 20
      LABELS e2e python
      ENVIRONMENT "TAU_CLI=$<TARGET_FILE:tau-cli>" "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>")
endif()
