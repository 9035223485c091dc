# ncclbpf_bpf_object(<target> <source.c> [OUTPUT_DIR dir] [OUTPUT_NAME name] [EXTRA_FLAGS ...])
# Compiles restricted C to a BPF ELF object with clang -target bpf -O2 -g (clang 14 floor).
# OUTPUT_NAME (default: the source's name) names <name>.bpf.o: one source, several variants.
find_program(NCCLBPF_CLANG NAMES clang clang-14 clang-15 clang-16 clang-17 clang-18 REQUIRED)
set(NCCLBPF_BPF_OBJECTS "" CACHE INTERNAL "all compiled BPF objects")

# NCCLBPF_BPF_FROM=<another build tree of this checkout, already built>: copy each BPF object
# from there instead of compiling it again. The objects do not depend on the C compiler,
# the build type or the sanitizers (clang -target bpf, the same flags), so a second tree
# (CI's sanitizer build) gets the same bytes without the ~190 clang runs. An object missing
# there, or older than its source or policy.h, is compiled as usual.
set(NCCLBPF_BPF_FROM "" CACHE PATH "a built tree of this checkout whose BPF objects to reuse")
if(NCCLBPF_BPF_FROM)
  get_filename_component(NCCLBPF_BPF_FROM "${NCCLBPF_BPF_FROM}" ABSOLUTE)
  set(from_cache "${NCCLBPF_BPF_FROM}/CMakeCache.txt")
  set(from_ok FALSE)
  if(EXISTS "${from_cache}")
    file(STRINGS "${from_cache}" from_home REGEX "^CMAKE_HOME_DIRECTORY:INTERNAL=")
    file(STRINGS "${from_cache}" from_clang REGEX "^NCCLBPF_CLANG:FILEPATH=")
    if(from_home STREQUAL "CMAKE_HOME_DIRECTORY:INTERNAL=${CMAKE_SOURCE_DIR}" AND
       from_clang STREQUAL "NCCLBPF_CLANG:FILEPATH=${NCCLBPF_CLANG}")
      set(from_ok TRUE)
    endif()
  endif()
  if(NOT from_ok)
    message(FATAL_ERROR "NCCLBPF_BPF_FROM=${NCCLBPF_BPF_FROM}: not a build tree of "
            "${CMAKE_SOURCE_DIR} configured with the same clang (${NCCLBPF_CLANG})")
  endif()
  message(STATUS "BPF objects: copied from ${NCCLBPF_BPF_FROM} where up to date")
endif()
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
  set(hdr ${CMAKE_SOURCE_DIR}/include/ncclbpf/policy.h)
  set(cc ${NCCLBPF_CLANG} -target bpf -O2 -g -Wall -Werror -I${CMAKE_SOURCE_DIR}/include
         ${ARG_EXTRA_FLAGS} -c ${abs} -o ${out})
  file(RELATIVE_PATH rel ${CMAKE_BINARY_DIR} ${out})
  set(pre ${NCCLBPF_BPF_FROM}/${rel})
  if(NCCLBPF_BPF_FROM AND EXISTS ${pre})
    # the same output path there is the same source and flags (one checkout)
    string(REPLACE ";" " " cc_sh "${cc}")
    add_custom_command(OUTPUT ${out}
      COMMAND sh -c "mkdir -p '${ARG_OUTPUT_DIR}' && if [ '${pre}' -nt '${abs}' ] && [ '${pre}' -nt '${hdr}' ]; then cp '${pre}' '${out}'; else ${cc_sh}; fi"
      DEPENDS ${abs} ${hdr} ${pre}
      COMMENT "BPF ${name}.bpf.o (from ${NCCLBPF_BPF_FROM})" VERBATIM)
  else()
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${ARG_OUTPUT_DIR}
      COMMAND ${cc}
      DEPENDS ${abs} ${hdr}
      COMMENT "BPF ${name}.bpf.o" VERBATIM)
  endif()
  add_custom_target(${target} ALL DEPENDS ${out})
  set_property(TARGET ${target} PROPERTY BPF_OUTPUT ${out})
endfunction()
