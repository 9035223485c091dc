# Profiler side of the mock NCCL host (profiler_host.c) and its latency model
# (profiler_model.c), as a static library for tests/profiler and bench/.
# Included from tests/profiler/CMakeLists.txt (and may be included by others): guarded.
if(NOT TARGET mock_nccl_profiler)
  get_filename_component(_nb_root ${CMAKE_CURRENT_LIST_DIR}/../.. ABSOLUTE)
  add_library(mock_nccl_profiler STATIC
    ${CMAKE_CURRENT_LIST_DIR}/profiler_host.c
    ${CMAKE_CURRENT_LIST_DIR}/profiler_model.c)
  target_include_directories(mock_nccl_profiler PUBLIC ${CMAKE_CURRENT_LIST_DIR}
                             ${_nb_root}/include ${_nb_root}/src)
  target_link_libraries(mock_nccl_profiler PUBLIC dl m)
endif()
