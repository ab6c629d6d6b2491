# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures of the farm tests: the OpenJD CLI from its dev venv, Node, and small saved scenes."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("bpy")  # the jobs run cli.py bake with this Python's bpy module

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def openjd() -> Path:
    """The ``openjd`` command: ``$ARTICULATE_OPENJD`` (dev/test.sh sets it), else the repo's dev venv."""
    configured = os.environ.get("ARTICULATE_OPENJD")
    path = Path(configured) if configured else REPO_ROOT / ".venvs" / "openjd" / "bin" / "openjd"
    if not path.is_file():
        if configured:  # asked for and missing: a broken environment, not a reason to skip
            pytest.fail(f"ARTICULATE_OPENJD={configured} does not exist; run dev/envs.sh openjd")
        pytest.skip("no OpenJD CLI: run dev/envs.sh openjd (dev/test.sh does)")
    return path


@pytest.fixture(scope="session")
def node() -> str:
    """Node.js, to run the Flamenco job type's JavaScript."""
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed (the Flamenco job type is JavaScript)")
    return found


@pytest.fixture(scope="session")
def user_folder(tmp_path_factory) -> Path:
    """A Blender user folder for the child processes (nothing written to the home folder)."""
    return tmp_path_factory.mktemp("blender-user")


@pytest.fixture(scope="session")
def scenes(tmp_path_factory, user_folder) -> Path:
    """A folder with shot1..shot3.blend (the arm over 20, 30, 40 frames), rigged.blend (the arm over 25
    frames rigged with an IK constraint instead of a chain) and far.blend (out of reach)."""
    folder = tmp_path_factory.mktemp("scenes")
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(user_folder)}
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("build_scenes.py")), str(folder),
                           "shot1:arm:20", "shot2:arm:30", "shot3:arm:40", "rigged:ik:25", "far:far:10"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return folder
