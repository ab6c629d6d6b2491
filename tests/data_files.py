# SPDX-License-Identifier: GPL-3.0-or-later
"""Paths of the third-party files the tests read, all bundled in the repository (``data/``, ``presets/``).

A missing file is an error, never a skip: a clone of the repository must test everything.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "data"
ROBOTS = DATA / "robots"
MOCAP = DATA / "mocap"
# The UR5's official visual meshes, bundled once for the UR5 preset (presets/robots/meshes/README.md).
UR5_VISUAL = REPO_ROOT / "presets" / "robots" / "meshes" / "ur5" / "visual"
UR5_PACKAGE_PATH = Path("ur_description") / "meshes" / "ur5" / "visual"  # where ur5.urdf's package:// points


def data_file(*parts: str) -> Path:
    """The bundled file ``data/<parts>`` (e.g. ``"mocap", "cmu_131_01.bvh"``).

    Raises:
        FileNotFoundError: The file is not in the repository.
    """
    path = DATA.joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: it is part of the repository (see data/README.md)")
    return path


def ur5_package_dir(folder: Path) -> Path:
    """A ROS package folder in ``folder`` resolving ``ur5.urdf``'s ``package://ur_description/...`` meshes.

    Links ``folder/ur_description/meshes/ur5/visual`` to the bundled UR5 meshes and returns ``folder``.
    """
    target = folder / UR5_PACKAGE_PATH
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(UR5_VISUAL, target, target_is_directory=True)
    return folder
