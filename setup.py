"""The compiled core's extension (shiftsim/core/src, docs/core.md); every other setting is in pyproject.toml.

setuptools' stable route for C extensions: ``ext_modules`` here, the project's metadata in pyproject.toml.
"""

from pathlib import Path

from setuptools import Extension, setup

SOURCES = Path("shiftsim/core/src")

setup(
    ext_modules=[
        Extension(
            "shiftsim.core._core",
            sources=sorted(str(path) for path in SOURCES.glob("*.c")),
            depends=sorted(str(path) for path in SOURCES.glob("*.h")),
            extra_compile_args=["-O2", "-std=c99", "-D_GNU_SOURCE"],
            libraries=["m", "pthread"],
        )
    ]
)
