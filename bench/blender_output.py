# SPDX-License-Identifier: GPL-3.0-or-later
"""Keep a benchmark's stdout for its table and JSON: Blender's own prints go to stderr."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to file descriptor 1 (Blender's own reports included) to stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
