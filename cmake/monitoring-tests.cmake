# monitoring-tests.cmake - the alerts, the dashboard and the metrics they use (docs/install.md).
#
#   e2e/monitoring  tests/e2e/test_monitoring.py: promtool check/test rules, both charts'
#                   PrometheusRule and dashboard ConfigMap, and a live aggregator's /metrics
#                   holding every metric name the rules and the dashboard use.
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/monitoring
      TESTS test_monitoring
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>" "TAU_CLI=$<TARGET_FILE:tau-cli>"
                  "TAU_PROTOC=${TAU_PROTOC}"
                  "TAU_PROMTOOL=${TAU_PROMTOOL}")
endif()
