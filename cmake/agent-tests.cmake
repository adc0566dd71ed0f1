# agent-tests.cmake - end-to-end test of tau-node-agent (tests/e2e/test_agent.py).
#
# Included from the top-level CMakeLists.txt. The test runs the real agent against kube-sim and a
# Python grpcio recorder standing in for the aggregator; it needs the system interpreter
# (Debian's python3-grpcio and python3-protobuf live there), protoc (message classes are made at
# run time, as in rpc-interop) and kubectl, all required by cmake/test-tools.cmake. Unit tests
# (tests/unit/agent/test_*.c) are picked up by the top-level glob.

if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/agent
      TESTS test_agent
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 600
      LABELS e2e python
      ENVIRONMENT "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>" "TAU_BUILD_DIR=${CMAKE_BINARY_DIR}"
                  "TAU_PROTOC=${TAU_PROTOC}" "TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto"
                  "KUBECTL=${TAU_KUBECTL}")
endif()
