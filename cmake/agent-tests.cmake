# agent-tests.cmake - end-to-end test of tau-node-agent (tests/e2e/test_agent.py).
#
# Included from the top-level CMakeLists.txt. The test runs the real agent against kube-sim and a
# Python grpcio recorder standing in for the aggregator; it needs the system interpreter
# (Debian's python3-grpcio and python3-protobuf live there), protoc (message classes are made at
# run time, as in rpc-interop) and kubectl. Unit tests (tests/unit/agent/test_*.c) are picked up
# by the top-level glob.

if(TAU_PYTHON_TESTS)
  if(NOT DEFINED SYSTEM_PYTHON3 OR NOT SYSTEM_PYTHON3)
    find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
  endif()
  find_program(TAU_AGENT_PROTOC NAMES protoc)
  find_program(TAU_AGENT_KUBECTL NAMES kubectl)
  if(SYSTEM_PYTHON3 AND TAU_AGENT_PROTOC AND TAU_AGENT_KUBECTL)
    add_test(NAME e2e/agent
             COMMAND ${SYSTEM_PYTHON3} -m unittest -v test_agent
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e)
    set_tests_properties(e2e/agent PROPERTIES
        TIMEOUT 600
        LABELS "e2e;python"
        ENVIRONMENT "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>;TAU_BUILD_DIR=${CMAKE_BINARY_DIR};TAU_PROTOC=${TAU_AGENT_PROTOC};TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto;KUBECTL=${TAU_AGENT_KUBECTL}")
  else()
    message(STATUS "e2e/agent skipped: needs /usr/bin/python3, protoc and kubectl")
  endif()
endif()
