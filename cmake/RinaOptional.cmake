# Detection of optional dependencies. Each is AUTO (use if found), ON
# (required) or OFF. Results: RINA_HAVE_<X> and a line in the summary.
include(CheckLanguage)

function(rina_resolve name found)
  if(RINA_WITH_${name} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "RINA_WITH_${name}=ON but it was not found")
  endif()
  if(RINA_WITH_${name} STREQUAL "OFF")
    set(RINA_HAVE_${name} OFF PARENT_SCOPE)
  else()
    set(RINA_HAVE_${name} ${${found}} PARENT_SCOPE)
  endif()
endfunction()

# MPI (C bindings; Fortran is looked for by the tests that need it).
set(_mpi_found OFF)
if(NOT RINA_WITH_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    set(_mpi_found ON)
  endif()
endif()
rina_resolve(MPI _mpi_found)
# Open MPI's mpirun needs flags to run more ranks than cores
# (RINA_MPIEXEC_FLAGS, used by the tests). FindMPI leaves
# MPI_C_LIBRARY_VERSION_STRING empty when it cannot run a probe, so ask mpirun.
set(RINA_MPIEXEC_FLAGS "")
if(RINA_HAVE_MPI AND MPIEXEC_EXECUTABLE)
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _mpiexec_version
    ERROR_QUIET RESULT_VARIABLE _mpiexec_rc)
  if(_mpiexec_rc EQUAL 0 AND _mpiexec_version MATCHES "Open MPI|OpenRTE")
    # Ranks poll; on a small machine they must yield (docs/testing.md, "The lab").
    set(RINA_MPIEXEC_FLAGS --oversubscribe --mca mpi_yield_when_idle 1)
  endif()
endif()

# hwloc through pkg-config.
set(_hwloc_found OFF)
if(NOT RINA_WITH_HWLOC STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc)
    if(HWLOC_FOUND)
      set(_hwloc_found ON)
    endif()
  endif()
endif()
rina_resolve(HWLOC _hwloc_found)

# libibverbs: library and header.
set(_verbs_found OFF)
if(NOT RINA_WITH_VERBS STREQUAL "OFF")
  find_library(IBVERBS_LIBRARY ibverbs)
  find_path(IBVERBS_INCLUDE_DIR infiniband/verbs.h)
  if(IBVERBS_LIBRARY AND IBVERBS_INCLUDE_DIR)
    set(_verbs_found ON)
  endif()
endif()
rina_resolve(VERBS _verbs_found)

# GLPK (the GRID / InArt LPs in lib/plan): library and header.
set(_glpk_found OFF)
if(NOT RINA_WITH_GLPK STREQUAL "OFF")
  find_library(GLPK_LIBRARY glpk)
  find_path(GLPK_INCLUDE_DIR glpk.h)
  if(GLPK_LIBRARY AND GLPK_INCLUDE_DIR)
    set(_glpk_found ON)
  endif()
endif()
rina_resolve(GLPK _glpk_found)

# CUDA: a compiler is enough to build; whether a GPU exists is a run-time
# question. Without a GPU, "native" architectures fail, so pick explicit ones.
set(_cuda_found OFF)
if(NOT RINA_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures")
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # CMake < 3.26 does not know nvcc's C++20 flag; nvcc >= 12 accepts it.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      set(_cuda_found ON)
    endif()
  endif()
endif()
rina_resolve(CUDA _cuda_found)

# PyTorch (python/: the rina_torch backend), for the torch that RINA_PYTHON
# imports (Debian's 1.13 by default) and, when RINA_TORCH2_PYTHON names an
# interpreter (tools/deps.sh's torch 2.x venv), for its torch too: the
# interpreters are asked for their torch's headers and libraries
# (python/cmake/RinaTorch.cmake). Not built with the sanitizers: the
# extension runs inside a python3 that does not load their runtime.
set(RINA_PYTHON /usr/bin/python3 CACHE FILEPATH
  "Python interpreter of the rina_torch extension and of its tests")
set(RINA_TORCH2_PYTHON "" CACHE FILEPATH
  "A second interpreter (a torch 2.x venv) rina_torch is also built and tested for")
include(${CMAKE_CURRENT_LIST_DIR}/../python/cmake/RinaTorch.cmake)
set(_torch_found OFF)
set(_torch2_found OFF)
set(RINA_TORCH_NOTE "")
set(RINA_TORCH2_NOTE "(RINA_TORCH2_PYTHON not set: tools/deps.sh makes a torch 2.x venv)")
if(NOT RINA_WITH_TORCH STREQUAL "OFF")
  if(RINA_SANITIZE)
    set(RINA_TORCH_NOTE "(not with RINA_SANITIZE)")
    set(RINA_TORCH2_NOTE "(not with RINA_SANITIZE)")
  else()
    rina_torch_probe(RINA_TORCH "${RINA_PYTHON}")
    set(_torch_found ${RINA_TORCH_FOUND})
    if(_torch_found)
      set(RINA_PYTHON_VERSION ${RINA_TORCH_PYTHON_VERSION})
      set(RINA_PYTHON_EXT_SUFFIX ${RINA_TORCH_EXT_SUFFIX})
      # Where `cmake --install` puts the package, relative to the prefix:
      # Debian's interpreter looks in <prefix>/lib/pythonX.Y/dist-packages
      # (/usr/local and /usr), others in site-packages.
      if(RINA_TORCH_SCHEME STREQUAL "posix_local")
        set(_python_dir "lib/python${RINA_PYTHON_VERSION}/dist-packages")
      else()
        set(_python_dir "lib/python${RINA_PYTHON_VERSION}/site-packages")
      endif()
      set(RINA_PYTHON_INSTALL_DIR "${_python_dir}" CACHE STRING
        "Where rina_torch is installed, relative to the install prefix")
    endif()
    if(RINA_TORCH2_PYTHON)
      rina_torch_probe(RINA_TORCH2 "${RINA_TORCH2_PYTHON}")
      if(RINA_TORCH2_FOUND AND RINA_TORCH2_VERSION VERSION_LESS 2.0)
        set(RINA_TORCH2_NOTE "(${RINA_TORCH2_PYTHON} imports torch ${RINA_TORCH2_VERSION}, not 2.x)")
      elseif(RINA_TORCH2_FOUND)
        set(_torch2_found ON)
      endif()
    endif()
  endif()
endif()
rina_resolve(TORCH _torch_found)
set(RINA_HAVE_TORCH2 ${_torch2_found})

function(rina_print_summary)
  message(STATUS "rina ${PROJECT_VERSION} configuration:")
  message(STATUS "  build type     : ${CMAKE_BUILD_TYPE}")
  message(STATUS "  sanitizers     : ${RINA_SANITIZE}")
  message(STATUS "  MPI            : ${RINA_HAVE_MPI} ${MPI_C_VERSION}")
  message(STATUS "  hwloc          : ${RINA_HAVE_HWLOC} ${HWLOC_VERSION}")
  message(STATUS "  libibverbs     : ${RINA_HAVE_VERBS}")
  message(STATUS "  GLPK           : ${RINA_HAVE_GLPK}")
  message(STATUS "  CUDA           : ${RINA_HAVE_CUDA} ${CUDAToolkit_VERSION} (archs ${CMAKE_CUDA_ARCHITECTURES})")
  message(STATUS "  PyTorch        : ${RINA_HAVE_TORCH} ${RINA_TORCH_NOTE}")
  message(STATUS "  PyTorch 2.x    : ${RINA_HAVE_TORCH2} ${RINA_TORCH2_NOTE}")
  message(STATUS "  tests          : ${RINA_BUILD_TESTS}")
endfunction()
