# charts-tests.cmake - the Helm charts (charts/*) with the real helm v4 and kubectl that
# scripts/install-tools puts in .tools/bin (make deps), against kube-sim:
#   e2e/charts  tests/e2e/test_charts.py: every file once (the umbrella's subcharts and the
#               tau-lib/tau-crds dependencies are links), helm package offline, helm lint, helm
#               template with every ci/*-values.yaml accepted by a server-side dry run, schema
#               refusals, install/upgrade/rollback/list/uninstall, helm test (the aggregator's
#               readiness), umbrella vs standalone ownership.
# Without .tools/bin/helm the suite fails naming scripts/install-deps (it is not a configure
# error: `make test` runs install-deps after configuring may already have happened).
# It runs none of our binaries (label pure-python).
# `make charts-check` runs the same suite alone.
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/charts
      TESTS test_charts
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      LABELS python pure-python)
endif()

# e2e/aggregator-ha  tests/e2e/test_aggregator_ha.py: two tau-aggregators with --leader-elect,
# real agents and queries through a Service stand-in that routes to Ready endpoints only; SIGKILL
# of the leader, failover measured (docs/install.md, "High availability").
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/aggregator-ha
      TESTS test_aggregator_ha
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      PROCESSORS 2
      COST 25
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>"
                  "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>" "TAU_CLI_BIN=$<TARGET_FILE:tau-cli>"
                  "TAU_PROTOC=${TAU_PROTOC}" "TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto"
                  "TAU_GRPC_PROTO_DIR=${TAU_GRPC_PROTO_DIR}" "TAU_SIM_PYTHON=${PYTHON3}")
endif()

# e2e/rbac-rules  tests/e2e/test_rbac_rules.py: the tau-node-agent ClusterRole the chart renders,
# under kube-sim --authz rbac: the agent (--once) works with it, and without any single rule it
# fails or reports the read as forbidden.
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/rbac-rules
      TESTS test_rbac_rules
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 120
      LABELS e2e python
      ENVIRONMENT "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>")
endif()

# e2e/rbac-aggregator  tests/e2e/test_rbac_aggregator.py: tau-aggregator's ClusterRole and
# leader-election Role as the chart renders them, under kube-sim --authz rbac with the real
# aggregator and agents as their ServiceAccounts: the whole flow passes, and for each single rule
# (verb x resource, generated from the rendered roles) removed, a named check fails
# (docs/SECURITY.md, "RBAC, rule by rule").
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/rbac-aggregator
      TESTS test_rbac_aggregator
      BY_TEST AggregatorRoleTest
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 600
      PROCESSORS 2
      COST 240
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>"
                  "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>" "TAU_CLI_BIN=$<TARGET_FILE:tau-cli>"
                  "TAU_PROTOC=${TAU_PROTOC}" "TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto"
                  "TAU_GRPC_PROTO_DIR=${TAU_GRPC_PROTO_DIR}" "TAU_SIM_PYTHON=${PYTHON3}")
endif()
