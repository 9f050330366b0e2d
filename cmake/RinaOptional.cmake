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

# PyTorch (python/: the rina_torch process group). Needs libtorch's CMake
# package, libtorch_python, Python's headers, pybind11's headers, and an
# interpreter (RINA_PYTHON) that imports the same torch version. Not built
# with the sanitizers: the extension runs inside a python3 that does not
# load their runtime.
set(RINA_PYTHON /usr/bin/python3 CACHE FILEPATH
  "Python interpreter of the rina_torch extension and of its tests")
set(_torch_found OFF)
set(RINA_TORCH_NOTE "")
if(NOT RINA_WITH_TORCH STREQUAL "OFF")
  if(RINA_SANITIZE)
    set(RINA_TORCH_NOTE "(not with RINA_SANITIZE)")
  else()
    find_package(Torch QUIET)
    set(Python3_EXECUTABLE "${RINA_PYTHON}")
    find_package(Python3 QUIET COMPONENTS Interpreter Development.Module)
    find_library(TORCH_PYTHON_LIBRARY torch_python PATHS "${TORCH_INSTALL_PREFIX}/lib")
    find_path(PYBIND11_INCLUDE_DIR pybind11/pybind11.h)
    set(_torch_py_version "")
    if(EXISTS "${RINA_PYTHON}")
      execute_process(COMMAND "${RINA_PYTHON}" -c
        "import sys, sysconfig, torch; print(torch.__version__.split('+')[0]); print('%d.%d' % sys.version_info[:2]); print(sysconfig.get_config_var('EXT_SUFFIX')); print(sysconfig.get_default_scheme())"
        OUTPUT_VARIABLE _torch_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
        RESULT_VARIABLE _torch_py_rc)
      if(_torch_py_rc EQUAL 0)
        string(REPLACE "\n" ";" _torch_py "${_torch_py}")
        list(GET _torch_py 0 _torch_py_version)
        list(GET _torch_py 1 RINA_PYTHON_VERSION)
        list(GET _torch_py 2 RINA_PYTHON_EXT_SUFFIX)
        list(GET _torch_py 3 _python_scheme)
      endif()
    endif()
    if(NOT Torch_FOUND)
      set(RINA_TORCH_NOTE "(no libtorch-dev: find_package(Torch) failed)")
    elseif(NOT TORCH_PYTHON_LIBRARY OR NOT Python3_Development.Module_FOUND
           OR NOT PYBIND11_INCLUDE_DIR)
      set(RINA_TORCH_NOTE "(libtorch_python, Python headers or pybind11 headers missing)")
    elseif(_torch_py_version STREQUAL "")
      set(RINA_TORCH_NOTE "(${RINA_PYTHON} cannot import torch)")
    elseif(NOT _torch_py_version MATCHES "^${Torch_VERSION}")
      set(RINA_TORCH_NOTE "(${RINA_PYTHON} imports torch ${_torch_py_version}, libtorch is ${Torch_VERSION})")
    elseif(NOT Python3_VERSION MATCHES "^${RINA_PYTHON_VERSION}")
      set(RINA_TORCH_NOTE "(Python headers ${Python3_VERSION} do not match ${RINA_PYTHON} ${RINA_PYTHON_VERSION})")
    else()
      set(_torch_found ON)
      set(RINA_TORCH_NOTE "${Torch_VERSION} (${RINA_PYTHON}, Python ${RINA_PYTHON_VERSION})")
      # Where `cmake --install` puts the package, relative to the prefix:
      # Debian's interpreter looks in <prefix>/lib/pythonX.Y/dist-packages
      # (/usr/local and /usr), others in site-packages.
      if(_python_scheme STREQUAL "posix_local")
        set(_python_dir "lib/python${RINA_PYTHON_VERSION}/dist-packages")
      else()
        set(_python_dir "lib/python${RINA_PYTHON_VERSION}/site-packages")
      endif()
      set(RINA_PYTHON_INSTALL_DIR "${_python_dir}" CACHE STRING
        "Where rina_torch is installed, relative to the install prefix")
    endif()
  endif()
endif()
rina_resolve(TORCH _torch_found)

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
  message(STATUS "  tests          : ${RINA_BUILD_TESTS}")
endfunction()
