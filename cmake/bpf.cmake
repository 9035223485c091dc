# ncclbpf_bpf_object(<target> <source.c> [OUTPUT_DIR dir] [OUTPUT_NAME name] [EXTRA_FLAGS ...])
# Compiles restricted C to a BPF ELF object with clang -target bpf -O2 -g (clang 14 floor).
# OUTPUT_NAME (default: the source's name) names <name>.bpf.o: one source, several variants.
find_program(NCCLBPF_CLANG NAMES clang clang-14 clang-15 clang-16 clang-17 clang-18 REQUIRED)
set(NCCLBPF_BPF_OBJECTS "" CACHE INTERNAL "all compiled BPF objects")
function(ncclbpf_bpf_object target src)
  cmake_parse_arguments(ARG "" "OUTPUT_DIR;OUTPUT_NAME" "EXTRA_FLAGS" ${ARGN})
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  get_filename_component(name ${src} NAME_WE)
  if(ARG_OUTPUT_NAME)
    set(name ${ARG_OUTPUT_NAME})
  endif()
  get_filename_component(abs ${src} ABSOLUTE)
  set(out ${ARG_OUTPUT_DIR}/${name}.bpf.o)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ARG_OUTPUT_DIR}
    COMMAND ${NCCLBPF_CLANG} -target bpf -O2 -g -Wall -Werror
            -I${CMAKE_SOURCE_DIR}/include ${ARG_EXTRA_FLAGS} -c ${abs} -o ${out}
    DEPENDS ${abs} ${CMAKE_SOURCE_DIR}/include/ncclbpf/policy.h
    COMMENT "BPF ${name}.bpf.o" VERBATIM)
  add_custom_target(${target} ALL DEPENDS ${out})
  set_property(TARGET ${target} PROPERTY BPF_OUTPUT ${out})
endfunction()
