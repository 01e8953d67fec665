"""`pip install ./python` (from a checkout): the kiln package, with this
checkout's kiln-compile and runtime archive packed inside it (kiln/_bin), so
that the installed package needs nothing else. Builds them first (`make
build`) when build/ does not have them yet."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
FILES = [("bin", "kiln-compile"), ("bin", "kiln-run"), ("lib", "libkiln_runtime.a")]


class BuildWithKiln(build_py):
    def run(self):
        super().run()
        if not all(os.path.exists(os.path.join(BUILD, d, f)) for d, f in FILES):
            if not os.path.exists(os.path.join(ROOT, "Makefile")):
                raise RuntimeError("kiln: build kiln-compile first (make build in the checkout)")
            subprocess.check_call(["make", "-C", ROOT, "build", "BUILD=" + BUILD])
        for d, f in FILES:
            dst = os.path.join(self.build_lib, "kiln", "_bin", d)
            os.makedirs(dst, exist_ok=True)
            shutil.copy2(os.path.join(BUILD, d, f), os.path.join(dst, f))


setup(cmdclass={"build_py": BuildWithKiln})
