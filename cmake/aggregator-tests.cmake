# aggregator-tests.cmake - the aggregator's end-to-end suite.
#
# Included from the top-level CMakeLists.txt.
#   e2e/aggregator  /usr/bin/python3 -m unittest test_aggregator (tests/e2e): kube-sim, the real
#                   tau-aggregator, fake agents over grpcio, the tau CLI. Needs python3-grpcio and
#                   protoc (protobuf-compiler), like rpc-interop.
if(NOT DEFINED SYSTEM_PYTHON3 OR NOT SYSTEM_PYTHON3)
  find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
endif()
find_program(TAU_AGG_PROTOC NAMES protoc)

if(TAU_PYTHON_TESTS AND SYSTEM_PYTHON3 AND TAU_AGG_PROTOC)
  add_test(NAME e2e/aggregator
           COMMAND ${SYSTEM_PYTHON3} -m unittest -v test_aggregator
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e)
  set_tests_properties(e2e/aggregator PROPERTIES
      TIMEOUT 600
      LABELS "e2e;python"
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>;TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>;TAU_CLI_BIN=$<TARGET_FILE:tau-cli>;TAU_PROTOC=${TAU_AGG_PROTOC};TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto;TAU_GRPC_PROTO_DIR=${TAU_GRPC_PROTO_DIR};TAU_SIM_PYTHON=${PYTHON3}")
elseif(TAU_PYTHON_TESTS)
  message(STATUS "e2e/aggregator skipped: needs /usr/bin/python3 with grpcio and protoc")
endif()

# bench/bench_swarm.c drives the aggregator's own handler code in-process: it needs the
# aggregator modules on top of libtau (the generic bench rule links libtau only).
if(TARGET bench_swarm AND TARGET tau_aggregator)
  target_link_libraries(bench_swarm PRIVATE tau_aggregator)
endif()
