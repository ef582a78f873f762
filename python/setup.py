"""Builds the tessera package with the repository's CMake build (the same one scripts/setup runs):
configures the repository root into the wheel's build directory (or, with TESSERA_BUILD_DIR set
to a configured build directory such as build/, reuses that one), builds the tessera_python
target, and puts the extension and libtessera.so (which the extension finds beside it) into the
package."""

import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        match = re.search(r"project\(tessera VERSION ([0-9.]+)", f.read())
    return match.group(1) if match else "0.0.0"


class CMakeExtension(Extension):
    def __init__(self):
        super().__init__("tessera._tessera", sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("TESSERA_BUILD_DIR")
        if build and os.path.exists(os.path.join(build, "CMakeCache.txt")):
            build = os.path.abspath(build)
        else:
            build = os.path.abspath(os.path.join(self.build_temp, "cmake"))
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.run(["cmake", "-S", ROOT, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release",
                            "-DTESSERA_BUILD_TESTS=OFF", "-DTESSERA_BUILD_BENCH=OFF", "-DTESSERA_BUILD_PYTHON=ON",
                            f"-DPython_EXECUTABLE={sys.executable}"], check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", build, "--target", "tessera_python", "-j", jobs], check=True)
        built = glob.glob(os.path.join(build, "python", "tessera", "_tessera*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _tessera module in {build}/python/tessera, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)
        # libtessera and the backend libraries (libtessera_<name>.so*), all beside libtessera.
        for lib in glob.glob(os.path.join(build, "libtessera.so*")) + glob.glob(
                os.path.join(build, "libtessera_*.so*")):
            shutil.copyfile(lib, os.path.join(os.path.dirname(target), os.path.basename(lib)))


setup(
    version=project_version(),
    packages=["tessera"],
    package_dir={"tessera": "tessera"},
    ext_modules=[CMakeExtension()],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
