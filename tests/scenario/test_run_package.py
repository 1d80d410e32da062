"""The package: ``python -m shiftsim``, the version from package metadata, a cheap and side-effect-free import."""

from __future__ import annotations

import pytest

import subprocess
import sys
from importlib.metadata import version

HEAVY = ("numpy", "scipy", "matplotlib", "pybullet", "lupa", "jsonschema", "pandas", "tqdm")


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_python_dash_m_shiftsim_runs_the_command_line():
    done = subprocess.run([sys.executable, "-m", "shiftsim", "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == f"shiftsim {version('shiftsim')}\n"
    done = subprocess.run([sys.executable, "-m", "shiftsim", "nonsense"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_import_loads_nothing_heavy_and_leaves_the_environment_alone():
    out = _python(f"""
import os, sys
before = dict(os.environ)
import shiftsim
assert dict(os.environ) == before
print(sorted(m for m in {HEAVY!r} if m in sys.modules))
print(shiftsim.__version__)
""")
    assert out.splitlines() == ["[]", version("shiftsim")]


@pytest.mark.slow
def test_the_public_api_loads_on_first_use():
    out = _python("""
import sys
import shiftsim
assert "shiftsim.statics" not in sys.modules
solve = shiftsim.solve
from shiftsim.statics import solve as direct
assert solve is direct and "shiftsim.statics" in sys.modules
assert set(shiftsim.__all__) <= set(dir(shiftsim))
for name in shiftsim.__all__:
    getattr(shiftsim, name)
try:
    shiftsim.no_such_name
except AttributeError as error:
    print(error)
""")
    assert out.strip() == "module 'shiftsim' has no attribute 'no_such_name'"
