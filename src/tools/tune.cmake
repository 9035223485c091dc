# The offline tuner and rules compiler of the CLI (cmd_tune.c, cmd_rules.c): their helper
# sources, and the table policy template embedded as a C array.
set(NCCLBPF_TUNE_TEMPLATE_C ${CMAKE_BINARY_DIR}/generated/tuned_rules_template.c)
add_custom_command(OUTPUT ${NCCLBPF_TUNE_TEMPLATE_C}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/generated
  COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_BINARY_DIR}/policies/tuned_rules.bpf.o
          -DOUT=${NCCLBPF_TUNE_TEMPLATE_C} -DNAME=ncclbpf_tuned_rules_template
          -P ${CMAKE_CURRENT_LIST_DIR}/embed_file.cmake
  DEPENDS policy_tuned_rules ${CMAKE_BINARY_DIR}/policies/tuned_rules.bpf.o
          ${CMAKE_CURRENT_LIST_DIR}/embed_file.cmake
  COMMENT "embedding the tuned_rules template" VERBATIM)
set(NCCLBPF_TUNE_SRCS ${CMAKE_CURRENT_LIST_DIR}/tune_stats.c ${CMAKE_CURRENT_LIST_DIR}/tune_input.c
    ${CMAKE_CURRENT_LIST_DIR}/tune_nccltests.c
    ${CMAKE_CURRENT_LIST_DIR}/tune_analyze.c ${CMAKE_CURRENT_LIST_DIR}/tune_object.c
    CACHE INTERNAL "offline tuner sources")
add_library(ncclbpf_tune STATIC ${NCCLBPF_TUNE_SRCS} ${NCCLBPF_TUNE_TEMPLATE_C})
target_include_directories(ncclbpf_tune PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(ncclbpf_tune PUBLIC ncclbpf_static m)
target_link_libraries(ncclbpf_cli PRIVATE ncclbpf_tune)
