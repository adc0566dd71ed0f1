# Exit codes and one-line errors of tau, tau-aggregator and tau-node-agent, table-driven
# (tests/e2e/test_errors.py): usage, input and configuration errors exit 2 before any request,
# a closed port or a silent server exits 1 within a bound (--request-timeout).
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/errors
      TESTS test_errors
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      LABELS e2e python
      ENVIRONMENT "TAU_CLI_BIN=$<TARGET_FILE:tau-cli>"
                  "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>"
                  "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>")
endif()
