"""pip install ./python: rina_torch's extension built by CMake
(python/CMakeLists.txt) for this interpreter and the torch it imports, and
linked to librina: RINA_PREFIX (an install prefix, or rina's build folder),
else CMAKE_PREFIX_PATH and the system, else this checkout's build/."""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        out = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        build = os.path.abspath(self.build_temp)
        configure = ["cmake", "-S", HERE, "-B", build, f"-DRINA_PYTHON={sys.executable}",
                     f"-DRINA_TORCH_OUTPUT_DIR={out}", "-DCMAKE_BUILD_TYPE=Release"]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if os.environ.get("RINA_PREFIX"):
            configure.append(f"-DRINA_PREFIX={os.environ['RINA_PREFIX']}")
        subprocess.check_call(configure)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(min(os.cpu_count() or 1, 4)))
        subprocess.check_call(["cmake", "--build", build, "-j", jobs])


setup(ext_modules=[CMakeExtension("rina_torch._C")], cmdclass={"build_ext": CMakeBuild})
