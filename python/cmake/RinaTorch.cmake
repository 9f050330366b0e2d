# rina_torch's extension for one Python interpreter and the torch it imports
# (Debian's 1.13 or a pip-installed 2.x: torch_version.h takes the
# differences). Everything is asked of the interpreter itself: torch's
# headers and libraries, its C++ ABI and pybind11 ABI tags (so the extension
# shares torch's pybind11 types), Python's headers and extension suffix. No
# find_package(Torch): the pip wheels' TorchConfig looks for a CUDA toolkit.
#
#   rina_torch_probe(PREFIX PYTHON)   sets PREFIX_FOUND, PREFIX_NOTE (why not,
#       or the version and interpreter), PREFIX_VERSION, PREFIX_PYTHON_VERSION,
#       PREFIX_EXT_SUFFIX, PREFIX_SCHEME and what rina_add_torch_extension needs
#   rina_add_torch_extension(TARGET PREFIX OUTPUT_DIR)   the module
#       OUTPUT_DIR/_C<suffix>, linked to the target or library in RINA_TORCH_LIBRINA

set(RINA_TORCH_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/..)

function(rina_torch_probe prefix python)
  set(${prefix}_FOUND OFF PARENT_SCOPE)
  if(NOT EXISTS "${python}")
    set(${prefix}_NOTE "(${python} does not exist)" PARENT_SCOPE)
    return()
  endif()
  # Outside pip's isolated build environment, if any: the interpreter's own
  # site-packages, where its torch is.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONNOUSERSITE
    --unset=PYTHONHOME "${python}" -c [=[
import os, sys, sysconfig, warnings
warnings.simplefilter("ignore")
import torch
inc = os.path.join(os.path.dirname(torch.__file__), "include")
print(torch.__version__.split("+")[0])
print("%d.%d" % sys.version_info[:2])
print(sysconfig.get_config_var("EXT_SUFFIX"))
print(sysconfig.get_default_scheme())
print(sysconfig.get_paths()["include"])
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(os.path.join(os.path.dirname(torch.__file__), "lib"))
print(inc + "|" + os.path.join(inc, "torch", "csrc", "api", "include"))
print("|".join(getattr(torch._C, "_PYBIND11_" + k, "") for k in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI")))
]=]
    OUTPUT_VARIABLE out ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REGEX MATCH "[^\n]*$" err "${err}")
    set(${prefix}_NOTE "(${python} cannot import torch: ${err})" PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "\n" ";" out "${out}")
  list(GET out 0 version)
  list(GET out 1 pyversion)
  list(GET out 2 suffix)
  list(GET out 3 scheme)
  list(GET out 4 pyinclude)
  list(GET out 5 abi)
  list(GET out 6 libdir)
  list(GET out 7 includes)
  list(GET out 8 pybind)
  string(REPLACE "|" ";" includes "${includes}")
  string(REPLACE "|" ";" pybind "${pybind}")
  if(version VERSION_LESS 1.13)
    set(${prefix}_NOTE "(${python} imports torch ${version}; rina_torch needs 1.13 or 2.5 on)" PARENT_SCOPE)
    return()
  endif()
  if(version VERSION_GREATER_EQUAL 2.0 AND version VERSION_LESS 2.5)
    set(${prefix}_NOTE "(${python} imports torch ${version}; rina_torch needs 1.13 or 2.5 on)" PARENT_SCOPE)
    return()
  endif()
  if(NOT EXISTS "${pyinclude}/Python.h")
    set(${prefix}_NOTE "(no Python headers in ${pyinclude})" PARENT_SCOPE)
    return()
  endif()
  # pybind11: torch's wheels ship it with their headers; Debian's torch
  # wants pybind11-dev.
  find_path(_pybind_dir_${prefix} pybind11/pybind11.h HINTS ${includes} NO_CACHE)
  if(NOT _pybind_dir_${prefix})
    set(${prefix}_NOTE "(no pybind11 headers: install pybind11-dev)" PARENT_SCOPE)
    return()
  endif()
  set(libs "")
  foreach(lib torch_python torch torch_cpu c10)
    find_library(_torch_lib_${prefix}_${lib} ${lib} HINTS "${libdir}" NO_CACHE)
    if(NOT _torch_lib_${prefix}_${lib})
      set(${prefix}_NOTE "(lib${lib}.so not found beside ${python}'s torch: ${libdir})" PARENT_SCOPE)
      return()
    endif()
    list(APPEND libs ${_torch_lib_${prefix}_${lib}})
  endforeach()
  set(${prefix}_FOUND ON PARENT_SCOPE)
  set(${prefix}_NOTE "${version} (${python}, Python ${pyversion})" PARENT_SCOPE)
  set(${prefix}_VERSION "${version}" PARENT_SCOPE)
  set(${prefix}_PYTHON_VERSION "${pyversion}" PARENT_SCOPE)
  set(${prefix}_EXT_SUFFIX "${suffix}" PARENT_SCOPE)
  set(${prefix}_SCHEME "${scheme}" PARENT_SCOPE)
  set(${prefix}_INCLUDE_DIRS ${includes} ${_pybind_dir_${prefix}} ${pyinclude} PARENT_SCOPE)
  set(${prefix}_LIBRARIES ${libs} PARENT_SCOPE)
  set(${prefix}_DEFINITIONS _GLIBCXX_USE_CXX11_ABI=${abi} PARENT_SCOPE)
  list(GET pybind 0 compiler)
  if(compiler)
    list(GET pybind 1 stdlib)
    list(GET pybind 2 buildabi)
    set(${prefix}_DEFINITIONS _GLIBCXX_USE_CXX11_ABI=${abi} PYBIND11_COMPILER_TYPE="${compiler}"
      PYBIND11_STDLIB="${stdlib}" PYBIND11_BUILD_ABI="${buildabi}" PARENT_SCOPE)
  endif()
endfunction()

function(rina_add_torch_extension target prefix output_dir)
  set(src ${RINA_TORCH_SOURCE_DIR}/csrc)
  add_library(${target} MODULE
    ${src}/module.cc ${src}/backend.cc ${src}/movement_calls.cc ${src}/exchange_calls.cc
    ${src}/communicator.cc ${src}/device_order.cc ${src}/tensor_types.cc ${src}/work_thread.cc)
  target_include_directories(${target} PRIVATE ${src})
  target_include_directories(${target} SYSTEM PRIVATE ${${prefix}_INCLUDE_DIRS})
  target_compile_definitions(${target} PRIVATE ${${prefix}_DEFINITIONS})
  target_link_libraries(${target} PRIVATE ${RINA_TORCH_LIBRINA} ${${prefix}_LIBRARIES})
  # Line tables only where the build type asks for debug information: full
  # -g over torch's headers nearly triples each file's compile time, and
  # backtraces through the extension need only the lines.
  target_compile_options(${target} PRIVATE $<$<CONFIG:RelWithDebInfo,Debug>:-g1>)
  # One precompiled copy of torch's headers for all of the extension's files.
  target_precompile_headers(${target} PRIVATE <ATen/ATen.h> <torch/csrc/distributed/c10d/Work.hpp>)
  if(TARGET rina_warnings)
    target_link_libraries(${target} PRIVATE rina_warnings)
  endif()
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME _C PREFIX "" SUFFIX "${${prefix}_EXT_SUFFIX}"
    LIBRARY_OUTPUT_DIRECTORY ${output_dir}
    CXX_VISIBILITY_PRESET hidden)
  configure_file(${RINA_TORCH_SOURCE_DIR}/rina_torch/__init__.py ${output_dir}/__init__.py COPYONLY)
endfunction()
