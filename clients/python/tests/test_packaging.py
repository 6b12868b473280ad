"""The package installs as the README says on Debian: a virtual environment that sees the Debian
packages (python3-venv, python3-setuptools, python3-wheel and the drivers), pip with
--no-build-isolation and nothing downloaded; then the installed copy (not the source tree)
imports and checks a key. From a clone it builds the compiled check (with python3-dev, g++ and
libxxhash-dev); the package directory alone installs without it, checking in pure Python."""

import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)


@pytest.mark.parametrize("layout", ["clone", "package alone", "clone, no compiling"])
def test_venv_install(tmp_path, layout):
    pytest.importorskip("ensurepip")
    venv = tmp_path / "venv"
    # Only what a plain shell has: no PIP_* settings, no PYTHONPATH to the source tree.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, env=env)
    python = str(venv / "bin" / "python")
    # From a copy: setuptools writes build/ and *.egg-info beside the sources. A clone has the
    # extension's core two directories up (setup.py builds bloomfilter._native from it).
    ignored = shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info", "*.so")
    if layout.startswith("clone"):
        source = tmp_path / "clone" / "clients" / "python"
        shutil.copytree(os.path.join(PACKAGE, "..", "..", "src", "core"), tmp_path / "clone" / "src" / "core",
                        ignore=ignored)
        if layout == "clone, no compiling":
            # As without a compiler or headers: the build of bloomfilter._native fails, the
            # package installs all the same.
            with open(tmp_path / "clone" / "src" / "core" / "bloom.cpp", "a") as core:
                core.write("\n#error as if a header were missing\n")
    else:
        source = tmp_path / "source"
    shutil.copytree(PACKAGE, source, ignore=ignored)
    run = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", str(source)],
                         env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    check = ("import bloomfilter, bloomfilter.follow, bloomfilter.psycopg, bloomfilter.psycopg2, "
             "bloomfilter.asyncpg, bloomfilter.sqlalchemy\n"
             "f = bloomfilter.Filter.empty(100); f.add('a')\n"
             "assert 'a' in f and 'b' not in f\n"
             # The compiled check from a clone; else NumPy from Debian's python3-numpy, seen
             # through --system-site-packages.
             "assert bloomfilter.accelerator() == %r, bloomfilter.accelerator()\n"
             "assert f.contains_many(['a', 'b']) == [True, False]\n" % ("native" if layout == "clone" else "numpy") +
             "print(bloomfilter.__file__)")
    out = subprocess.run([python, "-c", check], env=env, cwd=str(tmp_path), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(venv)), out.stdout
