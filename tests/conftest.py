# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared test set-up; imports nothing from Blender so core tests run on a Python without bpy."""

import os
import tempfile

# Blender reads this on the first `import bpy`: keep its config out of the user's home.
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="articulate-user-"))

try:  # the same examples on every run and machine: a red CI must be reproducible
    from hypothesis import settings

    settings.register_profile("articulate", derandomize=True, database=None, deadline=None)
    settings.load_profile("articulate")
except ImportError:  # hypothesis is in every dev environment; tolerate its absence elsewhere
    pass


_exit_status = 0


def pytest_sessionfinish(session, exitstatus) -> None:
    """Keep the session's exit status for :func:`pytest_unconfigure`."""
    global _exit_status
    _exit_status = int(exitstatus)


def pytest_unconfigure(config) -> None:
    """With the bpy module loaded, end the process once pytest has reported, with its exit status.

    The bpy module's own teardown at interpreter exit can deadlock (seen once on 4.5.15: four
    threads waiting on futexes after the summary was printed, the run never ending); nothing
    after the summary is the tests' business.
    """
    import sys

    if "bpy" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status)
