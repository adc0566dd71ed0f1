# aggregator-tests.cmake - the aggregator's end-to-end suite.
#
# Included from the top-level CMakeLists.txt.
#   e2e/aggregator  tests/e2e/test_aggregator.py (run_suite.py, /usr/bin/python3): kube-sim, the
#                   real tau-aggregator, fake agents over grpcio, the tau CLI; its tools are
#                   required by cmake/test-tools.cmake; and tests/e2e/test_query_auth.py:
#                   QueryService TokenReview + SubjectAccessReview under kube-sim's RBAC.
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/aggregator
      TESTS test_aggregator test_query_auth test_aggregator_localauth
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 600
      COSTS ScaleE2E=170 BoundedAuthE2E=30
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>"
                  "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>" "TAU_CLI_BIN=$<TARGET_FILE:tau-cli>"
                  "TAU_RPC_TEST_CLIENT=$<TARGET_FILE:rpc_test_client>"
                  "TAU_PROTOC=${TAU_PROTOC}" "TAU_OPENSSL=${TAU_OPENSSL}"
                  "TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto"
                  "TAU_GRPC_PROTO_DIR=${TAU_GRPC_PROTO_DIR}" "TAU_SIM_PYTHON=${PYTHON3}")
  # e2e/hostile-input  tests/e2e/test_hostile_input.py: malformed protobuf, 100,000 labels, a
  #                    100 MiB message and an untrusted TLS CA against the real aggregator.
  tau_add_python_suite(e2e/hostile-input
      TESTS test_hostile_input
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 600
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>"
                  "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>" "TAU_CLI_BIN=$<TARGET_FILE:tau-cli>"
                  "TAU_PROTOC=${TAU_PROTOC}" "TAU_OPENSSL=${TAU_OPENSSL}"
                  "TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto"
                  "TAU_GRPC_PROTO_DIR=${TAU_GRPC_PROTO_DIR}" "TAU_SIM_PYTHON=${PYTHON3}")
endif()

# bench/bench_swarm.c drives the aggregator's own handler code in-process: it needs the
# aggregator modules on top of libtau (the generic bench rule links libtau only).
if(TARGET bench_swarm AND TARGET tau_aggregator)
  target_link_libraries(bench_swarm PRIVATE tau_aggregator)
endif()
