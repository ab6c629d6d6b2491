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
