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
