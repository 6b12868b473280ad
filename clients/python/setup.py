"""The compiled check, bloomfilter._native: optional. Built from the extension's C++ core
(src/core of the repository this package is in, or BLOOMFILTER_CORE) and src/native.cpp, when
the package is built from a clone with a C++ compiler, Python's headers (Debian: python3-dev)
and xxHash's (libxxhash-dev). Where any is missing the build goes on without it, and the package
checks in pure Python (bloomfilter.accelerator() says which). Everything else is in
pyproject.toml."""

import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
CORE = os.environ.get("BLOOMFILTER_CORE") or os.path.join(HERE, "..", "..", "src", "core")

extensions = []
if os.path.isfile(os.path.join(CORE, "bloom.cpp")):
    extensions.append(Extension(
        "bloomfilter._native",
        sources=["src/native.cpp", "src/core.cpp"],
        depends=["src/register_blocks.hpp", os.path.join(CORE, "bloom.cpp"),
                 os.path.join(CORE, "hash_lanes.hpp"),
                 os.path.join(CORE, "bloom.hpp")],
        include_dirs=[os.path.abspath(CORE)],
        language="c++",
        extra_compile_args=["-std=c++17", "-O2"],
        # A failed build (no compiler, no Python.h, no xxhash.h) leaves the pure-Python check.
        optional=True,
    ))
else:
    print("bloomfilter: %s has no bloom.cpp (not a clone of the repository?): building without "
          "the compiled check" % CORE)

setup(ext_modules=extensions)
