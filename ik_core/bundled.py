# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the pure-Python packages bundled with the add-on come from: installed, else the wheels in ``wheels/``.

Blender installs the wheels the manifest lists (``blender_manifest.toml``, ``wheels = [...]``)
into its extensions' ``site-packages`` when the extension is installed or enabled, so inside
Blender ``import xacro`` just works. Outside Blender (the core tests, ``ik_core`` used as a
library, ``cli.py`` before the add-on is enabled) the same wheel files are put on ``sys.path``:
a pure-Python wheel is a zip archive Python imports from directly. A package installed in the
environment wins over the bundled wheel (the wheels are appended to ``sys.path``, not prepended).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

from .errors import DependencyError

# The add-on's folder holds ik_core/ and wheels/ side by side (the manifest's wheel paths are relative to it).
WHEELS_DIR = Path(__file__).resolve().parents[1] / "wheels"
# Import name -> (distribution as its wheel file names it, what Articulate needs it for).
PACKAGES = {
    "xacro": ("xacro", "expanding .xacro robot descriptions"),
    "yaml": ("pyyaml", "xacro's substitution arguments and load_yaml"),
    "mcap": ("mcap", "reading and writing MCAP files (ROS 2 bags)"),
    "mcap_ros2": ("mcap_ros2_support", "decoding and encoding ROS 2 messages in MCAP files"),
}


def bundled_wheels() -> list[Path]:
    """The wheel files shipped in ``wheels/``, sorted by name (empty when the folder is missing)."""
    return sorted(WHEELS_DIR.glob("*-py3-none-any.whl")) if WHEELS_DIR.is_dir() else []


def add_bundled_wheels() -> list[Path]:
    """Append every bundled wheel that is not yet on ``sys.path``; returns those added."""
    added = [w for w in bundled_wheels() if str(w) not in sys.path]
    sys.path.extend(str(w) for w in added)
    if added:
        importlib.invalidate_caches()
    return added


def import_bundled(name: str) -> ModuleType:
    """Import a bundled package (or one of its modules, ``"mcap_ros2.decoder"``), from the bundled wheels if need be.

    Args:
        name: Dotted module name whose top-level package is one of :data:`PACKAGES`.

    Returns:
        The imported module.

    Raises:
        DependencyError: The package is neither installed nor bundled (its wheel missing from
            ``wheels/``); the message names the package, what it is needed for and how to get it.
    """
    top = name.partition(".")[0]
    if top not in PACKAGES:
        raise ValueError(f"{top!r} is not a bundled package; bundled: {', '.join(sorted(PACKAGES))}")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name is None or err.name.partition(".")[0] not in PACKAGES:
            raise
    add_bundled_wheels()
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        missing = (err.name or top).partition(".")[0]
        if missing not in PACKAGES:
            raise
        dist, purpose = PACKAGES[missing]
        raise DependencyError(
            f"the Python package {missing!r} ({dist} on PyPI), needed for {purpose}, is not installed and its "
            f"wheel is missing from {WHEELS_DIR}: reinstall the Articulate extension, or run "
            f"'pip install {dist.replace('_', '-')}' for the Python that runs Articulate"
        ) from None
