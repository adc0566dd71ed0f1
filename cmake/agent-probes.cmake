# agent-probes.cmake - what the agent's node-local probes need beyond the glob in CMakeLists.txt.
#
# Included at the end of the top-level CMakeLists.txt (after the tau_agent library and the unit
# test targets exist):
#   - the fake libnvidia-ml.so.1 (tests/fakes/nvml/fake_nvml.c), built twice: full, and as an
#     "old driver" lacking some optional entry points; only tests and the e2e dlopen them
#     (TAU_AGENT_NVML=<path>), nothing links them.

foreach(variant IN ITEMS full old)
  add_library(fake_nvml_${variant} SHARED ${PROJECT_SOURCE_DIR}/tests/fakes/nvml/fake_nvml.c)
  target_compile_options(fake_nvml_${variant} PRIVATE ${TAU_WARNINGS})
  if(variant STREQUAL "old")
    target_compile_definitions(fake_nvml_${variant} PRIVATE FAKE_NVML_OLD)
  endif()
  # Exactly the file name the agent loads by default, one folder per variant.
  set_target_properties(fake_nvml_${variant} PROPERTIES
      OUTPUT_NAME nvidia-ml PREFIX lib SUFFIX .so.1 NO_SONAME ON
      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fakes/nvml-${variant})
endforeach()
set(TAU_FAKE_NVML ${CMAKE_BINARY_DIR}/fakes/nvml-full/libnvidia-ml.so.1)
set(TAU_FAKE_NVML_OLD ${CMAKE_BINARY_DIR}/fakes/nvml-old/libnvidia-ml.so.1)

foreach(t IN ITEMS test_agent_nvml_fake test_agent_inventory)
  if(TARGET ${t})
    add_dependencies(${t} fake_nvml_full fake_nvml_old)
  endif()
endforeach()

# The node-local APIs the agent calls as a gRPC client: kubelet pod-resources, kubelet plugin
# registration, CSI Identity (proto/kubelet, proto/csi: our own files, written from the APIs'
# field names and numbers). Compiled by protoc-c like proto/tau into build/gen-node, and built
# into the agent's library only: the aggregator and the CLI never speak these APIs.
set(TAU_NODE_PROTO_DIR ${CMAKE_BINARY_DIR}/gen-node)
file(MAKE_DIRECTORY ${TAU_NODE_PROTO_DIR})
set(TAU_NODE_PROTO_SOURCES "")
foreach(rel IN ITEMS kubelet/podresources/v1/podresources.proto
                     kubelet/pluginregistration/v1/registration.proto
                     csi/v1/identity.proto)
  string(REGEX REPLACE "\\.proto$" "" stem ${rel})
  add_custom_command(
    OUTPUT ${TAU_NODE_PROTO_DIR}/${stem}.pb-c.c ${TAU_NODE_PROTO_DIR}/${stem}.pb-c.h
    COMMAND ${PROTOC_C_EXECUTABLE} -I${PROJECT_SOURCE_DIR}/proto --c_out=${TAU_NODE_PROTO_DIR}
            ${PROJECT_SOURCE_DIR}/proto/${rel}
    DEPENDS ${PROJECT_SOURCE_DIR}/proto/${rel}
    COMMENT "protoc-c ${rel}"
    VERBATIM)
  list(APPEND TAU_NODE_PROTO_SOURCES ${TAU_NODE_PROTO_DIR}/${stem}.pb-c.c)
endforeach()
add_library(tau_node_proto OBJECT ${TAU_NODE_PROTO_SOURCES})
target_compile_options(tau_node_proto PRIVATE -w)
target_include_directories(tau_node_proto PUBLIC ${TAU_NODE_PROTO_DIR})
target_link_libraries(tau_node_proto PUBLIC PkgConfig::PROTOBUFC)
target_sources(tau_agent PRIVATE $<TARGET_OBJECTS:tau_node_proto>)
target_include_directories(tau_agent PUBLIC ${TAU_NODE_PROTO_DIR})
add_dependencies(tau_agent tau_node_proto)

# Fake node plugins for tests and the e2e: a kubelet pod-resources server and a CSI driver
# (registration socket + Identity), each a program on libtau's rpc server answering from a
# JSON file it reads on every call (tests/fakes/<name>/). build/fakes/bin/<name>.
foreach(fake IN ITEMS fake_kubelet fake_csi_driver)
  string(REPLACE "fake_" "" dir ${fake})
  add_executable(${fake} ${PROJECT_SOURCE_DIR}/tests/fakes/${dir}/${fake}.c
                         $<TARGET_OBJECTS:tau_node_proto>)
  target_include_directories(${fake} PRIVATE ${TAU_NODE_PROTO_DIR})
  target_compile_options(${fake} PRIVATE ${TAU_WARNINGS})
  target_link_libraries(${fake} PRIVATE tau)
  add_dependencies(${fake} tau_node_proto)
  set_target_properties(${fake} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fakes/bin)
endforeach()
foreach(t IN ITEMS test_agent_podresources test_agent_csiprobe test_agent_inventory)
  if(TARGET ${t})
    add_dependencies(${t} fake_kubelet fake_csi_driver)
  endif()
endforeach()

# e2e of the node-local probes: the real agent with the fakes above (tests/e2e/test_agent_node_truth.py).
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/agent-node-truth
      TESTS test_agent_node_truth
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      LABELS e2e python
      ENVIRONMENT "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>" "TAU_BUILD_DIR=${CMAKE_BINARY_DIR}"
                  "TAU_PROTOC=${TAU_PROTOC}" "TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto"
                  "KUBECTL=${TAU_KUBECTL}")
endif()

# e2e of node truth in the aggregator (tests/e2e/test_aggregator_node_truth.py): the real agent
# with the fakes above streams to the real tau-aggregator; `tau inventory fit`, `nodes` (HEALTH,
# FREE) and `pool` (free now) follow a pod taking GPUs, an unhealthy GPU, IB ports going down;
# DraFreeNow: a DRA-only node's GPUs in use while a ResourceClaim holds them (issue 26).
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/aggregator-node-truth
      TESTS test_aggregator_node_truth
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 180
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>"
                  "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>" "TAU_CLI_BIN=$<TARGET_FILE:tau-cli>"
                  "TAU_BUILD_DIR=${CMAKE_BINARY_DIR}" "TAU_PROTOC=${TAU_PROTOC}"
                  "TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto" "KUBECTL=${TAU_KUBECTL}")
endif()

# e2e of --node-conditions under kube-sim's RBAC (tests/e2e/test_agent_node_conditions.py): the
# chart's rendered ClusterRoles, three real agents (rights and flag, flag without the rights, no flag).
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/agent-node-conditions
      TESTS test_agent_node_conditions
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 120
      LABELS e2e python
      ENVIRONMENT "TAU_AGENT_BIN=$<TARGET_FILE:tau-node-agent>" "TAU_BUILD_DIR=${CMAKE_BINARY_DIR}"
                  "TAU_PROTOC=${TAU_PROTOC}" "TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto")
endif()
