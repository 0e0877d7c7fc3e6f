"""The CMake step of `pip install .` (pyproject.toml): builds the extension module taihu._taihu
with the project's own CMake build (the same target as `cmake --build build --target taihu_python`)
and puts it into the wheel beside python/taihu/*.py."""
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(taihu VERSION ([0-9.]+)", f.read()).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("TAIHU_BUILD_DIR") or os.path.join(os.path.abspath(self.build_temp), "cmake")
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            # For the interpreter pip runs (a venv's included): its headers and module suffix.
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DTAIHU_BUILD_BENCH=OFF",
                            "-DPython_EXECUTABLE=" + sys.executable] + generator, check=True)
        jobs = os.environ.get("JOBS") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", build, "--target", "taihu_python", "-j", jobs], check=True)
        # A reused build folder keeps the interpreter it was configured for: its module must load here.
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = os.path.join(build, "python", "taihu", "_taihu" + suffix)
        if not os.path.exists(built):
            raise RuntimeError("{} has no {}: TAIHU_BUILD_DIR was configured for another Python than {}".format(
                build, os.path.basename(built), sys.executable))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)


# setuptools' own scratch under build/pip, beside a CMake build folder named build, not across it.
os.makedirs("build", exist_ok=True)
setup(version=version(), ext_modules=[Extension("taihu._taihu", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": os.path.join("build", "pip")}, "egg_info": {"egg_base": "build"}})
