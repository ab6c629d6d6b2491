# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of ik_core.blas_threads: the thread count of numpy's OpenBLAS, set at runtime."""

from __future__ import annotations

import numpy as np
import pytest

import ik_core
from ik_core import InvalidInputError, blas_threads, limit_blas_threads


@pytest.fixture
def restore_threads():
    """Put numpy's OpenBLAS back to the thread count it had."""
    before = blas_threads()
    yield before
    if before > 0:
        limit_blas_threads(before)


def test_the_count_reads_back_after_setting(restore_threads: int) -> None:
    """After limit_blas_threads(1) the library runs one thread; the call returned the count it had."""
    if restore_threads < 0:
        pytest.skip("numpy is not running on an OpenBLAS here (Accelerate, MKL)")
    assert limit_blas_threads(1) == restore_threads
    assert blas_threads() == 1
    assert limit_blas_threads(2) == 1 and blas_threads() == 2
    # BLAS results do not depend on the count.
    a = np.random.default_rng(0).normal(size=(300, 300))
    with_two = a @ a
    limit_blas_threads(1)
    np.testing.assert_allclose(a @ a, with_two, rtol=1e-12, atol=1e-9)


def test_numpy_wheels_bundle_an_openblas_we_find() -> None:
    """On Linux numpy's wheels (1.26 and 2.x) bundle an OpenBLAS: finding none would be a lookup bug."""
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("only Linux lists the loaded libraries")
    config = np.show_config(mode="dicts") if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else None
    if config is not None and "openblas" not in str(config["Build Dependencies"]["blas"]).lower():
        pytest.skip("this numpy is not built on OpenBLAS")
    assert blas_threads() >= 1


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True])
def test_bad_counts_are_rejected(bad: object) -> None:
    """Counts that are not integers >= 1 raise InvalidInputError and change nothing."""
    before = blas_threads()
    with pytest.raises(InvalidInputError):
        limit_blas_threads(bad)  # type: ignore[arg-type]
    assert blas_threads() == before


def test_importing_the_core_does_not_touch_the_count() -> None:
    """The count is the host's business: ik_core sets it only when asked (register(), the CLI)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if (os.cpu_count() or 1) < 2:
        pytest.skip("OpenBLAS caps the count at the cores: one core cannot tell set from default")
    code = "import numpy, ik_core; print(ik_core.blas_threads())"
    env = {"OPENBLAS_NUM_THREADS": "2", "PYTHONPATH": str(Path(ik_core.__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split()[-1] in ("2", "-1")
