# SPDX-License-Identifier: GPL-3.0-or-later
"""The thread count of the OpenBLAS numpy has loaded, read and set at runtime."""

from __future__ import annotations

import ctypes
import functools
import sys
from pathlib import Path

import numpy as np

from .errors import InvalidInputError

# Exported names by build: numpy >= 2 wheels bundle scipy-openblas (symbols suffixed 64_ and
# prefixed scipy_), numpy 1.26 wheels an ILP64 OpenBLAS (suffixed 64_), distributions a plain
# one. The names with a trailing underscore before the suffix (openblas_set_num_threads_64_)
# are the Fortran interface, taking a pointer to a BLAS integer: not these.
_SETTERS = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")


def _loaded_paths() -> list[str]:
    """Paths of the shared libraries mapped into this process (Linux), else an empty list."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    return [line.split(maxsplit=5)[5] for line in lines if len(line.split(maxsplit=5)) == 6]


def _candidates() -> list[str]:
    """OpenBLAS libraries numpy has loaded, numpy's own first, each once.

    On Linux the process's memory map says which libraries are loaded (numpy's bundled copy, or
    a distribution's libopenblas that numpy links). Elsewhere the copy numpy's wheel bundles
    next to the package (``numpy.libs``, ``numpy/.dylibs``) is taken: numpy loads it at import.
    """
    root = Path(np.__file__).resolve().parent
    bundled = [
        p for folder in (root.parent / "numpy.libs", root / ".dylibs", root / ".libs")
        if folder.is_dir() for p in sorted(folder.iterdir()) if "openblas" in p.name.lower()
    ]
    # A distribution's OpenBLAS may sit behind a generic name (.../openblas-pthread/libblas.so.3).
    loaded = [p for p in dict.fromkeys(_loaded_paths()) if "openblas" in p.lower()]
    if loaded or sys.platform.startswith("linux"):
        own = [p for p in loaded if Path(p).parent in (b.parent for b in bundled)]
        return own + [p for p in loaded if p not in own]
    return [str(p) for p in bundled]


@functools.cache
def _libraries() -> tuple[tuple[object, object | None], ...]:
    """(setter, getter or None) of every OpenBLAS found; empty where none is (Accelerate, MKL)."""
    found = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, name) for name in _SETTERS if hasattr(lib, name)), None)
        if setter is None:
            continue
        setter.argtypes, setter.restype = [ctypes.c_int], None
        getter = next((getattr(lib, name) for name in _GETTERS if hasattr(lib, name)), None)
        if getter is not None:
            getter.argtypes, getter.restype = [], ctypes.c_int
        found.append((setter, getter))
    return tuple(found)


def blas_threads() -> int:
    """Threads the OpenBLAS numpy loaded runs a BLAS call on, or -1 where none is found (or unreadable)."""
    libraries = _libraries()
    if not libraries or libraries[0][1] is None:
        return -1
    return int(libraries[0][1]())


def limit_blas_threads(n: int = 1) -> int:
    """Set how many threads the OpenBLAS numpy loaded runs a BLAS call on, at runtime.

    The solvers' matrix products are small (6 x 7, batches of 4 x 4): threads only add
    start-up and wake-up cost, and an OpenBLAS spinning threads on every core slows the solve
    whenever another process loads a core. Environment variables (``OPENBLAS_NUM_THREADS``) are
    read when OpenBLAS loads, too late once numpy is imported (inside Blender, always); this
    calls the library's own setter instead. Every OpenBLAS in the process is set (numpy's, and
    one another package loaded). Call it from one thread while no BLAS call runs (at start-up:
    an add-on's ``register()``, a command-line tool's ``main``); it is never called on import.

    Args:
        n: Threads per BLAS call (>= 1).

    Returns:
        The thread count numpy's OpenBLAS had before, or -1 where no OpenBLAS was found (for
        example numpy on Accelerate or MKL) or its count cannot be read; then nothing is done.

    Raises:
        InvalidInputError: ``n`` is not an integer >= 1.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidInputError(f"the BLAS thread count must be an integer >= 1, got {n!r}")
    previous = blas_threads()
    for setter, _ in _libraries():
        setter(int(n))
    return previous
