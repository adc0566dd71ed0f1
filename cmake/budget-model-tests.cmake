# budget-model-tests.cmake - the team budget's randomized model test (issue 24).
#
# Included from the top-level CMakeLists.txt after the aggregator exists.
#   e2e/budget-model  tests/e2e/budget/model.py (/usr/bin/python3): seeded random sequences of
#                     node, team, workspace, capacityTeamRef, selector, foreign-object, admitted
#                     work and aggregator-restart operations against kube-sim and the real
#                     tau-aggregator of this tree, every write checked from kube-sim's write
#                     history, lifecycle operations (Observe, team and TauCluster
#                     deletion) and DRA nodes, slices and DeviceClass changes included; 5 seeds (about 2 minutes on 2 busy cores).  The full run:
#                     `make budget-model MODEL_ARGS="--seeds 200"`.
if(TAU_PYTHON_TESTS)
  add_test(NAME e2e/budget-model
           COMMAND ${SYSTEM_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/e2e/budget/model.py
                   --build ${PROJECT_BINARY_DIR} --seeds 5
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e)
  set_tests_properties(e2e/budget-model PROPERTIES
      TIMEOUT 900
      LABELS "e2e;python"
      # Starts the soak's cluster and agent swarm: two cores' worth, and first on a clean tree.
      PROCESSORS 2
      COST 150
      SKIP_RETURN_CODE ${TAU_SKIP_RETURN_CODE})
endif()
