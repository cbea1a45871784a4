# The dependency matrix of the code's folders: every `#include "dir/..."` of a source file must
# name its own folder or one its folder may use. The same matrix is in README.md ("Layout of
# the code"); change both together.
#
#   cmake -DROOT=<source tree> -P check_layering.cmake
# Exit status 0 when every include follows the matrix; otherwise each offending include is
# listed as file:line and the script fails.

cmake_minimum_required(VERSION 3.25)

set(LAYERS core models topologies workload nccl sim step input campaign validation sweep tools
           fuzz tests)

# Folder -> the folders it may include besides itself.
set(ALLOWED_core "")
set(ALLOWED_models core)
set(ALLOWED_topologies core)
set(ALLOWED_workload core models)
set(ALLOWED_nccl core topologies)
set(ALLOWED_sim core topologies nccl)
set(ALLOWED_step core models topologies workload nccl sim)
set(ALLOWED_input core)
set(ALLOWED_campaign core step models)
set(ALLOWED_validation core models topologies nccl step input)
set(ALLOWED_sweep core input step campaign)
set(ALLOWED_tools core models topologies workload nccl sim step input campaign validation sweep)
set(ALLOWED_fuzz core models input validation)
set(ALLOWED_tests ${LAYERS})

if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P check_layering.cmake")
endif()

file(GLOB_RECURSE sources RELATIVE "${ROOT}" "${ROOT}/*.cpp" "${ROOT}/*.hpp" "${ROOT}/*.h"
     "${ROOT}/*.cc")
set(violations "")
set(checked 0)
foreach(rel IN LISTS sources)
  string(REGEX MATCH "^[^/]+" folder "${rel}")
  # Build trees and hidden folders are not the project's sources.
  if(rel STREQUAL folder OR folder MATCHES "^(build.*|\\..*)$")
    continue()
  endif()
  if(NOT folder IN_LIST LAYERS)
    string(APPEND violations "  ${rel}: folder ${folder}/ is not in the layering matrix\n")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  file(STRINGS "${ROOT}/${rel}" lines)
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([a-z_]+)/")
      continue()
    endif()
    set(target "${CMAKE_MATCH_1}")
    # Quoted includes of folders that are not the project's (none today) are not checked.
    if(NOT target IN_LIST LAYERS OR target STREQUAL folder)
      continue()
    endif()
    if(NOT target IN_LIST ALLOWED_${folder})
      string(STRIP "${line}" text)
      string(APPEND violations
             "  ${rel}:${number}: ${text}: ${folder}/ may not include ${target}/ "
             "(${folder}/ may include: ${ALLOWED_${folder}})\n")
    endif()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "layering: no source file found under ${ROOT}")
endif()
if(violations)
  message(FATAL_ERROR "layering: includes against the dependency matrix:\n${violations}")
endif()
message(STATUS "layering: ${checked} files follow the dependency matrix")
