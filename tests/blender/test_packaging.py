# SPDX-License-Identifier: GPL-3.0-or-later
"""The zip built by Blender's own extension tool installs, enables, disables and uninstalls cleanly."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_TOP_LEVEL = ("tests/", "bench/", "data/", ".ci/", "dev/", ".venvs/", "dist/", "out/", ".git", "Makefile")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """Run the whole cycle once in a fresh Blender process with an empty user folder."""
    user_dir = tmp_path_factory.mktemp("blender-user")
    out_dir = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(user_dir)}
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("packaging_check.py")), str(REPO_ROOT), str(out_dir)],
        env=env, capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_manifest_and_zip_validate(report):
    """Blender's validator accepts the source tree and the built zip."""
    assert report["validate_rc"] == 0
    assert report["build_rc"] == 0
    assert report["zips"] == ["articulate-0.1.0.zip"]
    assert report["validate_zip_rc"] == 0


@pytest.mark.slow
def test_manifest_declares_permissions_and_website(report):
    """The shipped manifest declares file access (and only that) with a reason, and a website."""
    manifest = report["zip_manifest"]
    assert set(manifest["permissions"]) == {"files"}
    reason = manifest["permissions"]["files"]
    for fmt in ("URDF", "CSV", "JSON", "BVH"):
        assert fmt in reason
    assert "write" in reason and len(reason) <= 64
    assert manifest["website"].startswith("https://")


@pytest.mark.slow
def test_zip_ships_the_addon_and_nothing_else(report):
    """The zip holds the add-on's packages and no tests, benchmarks, CI or development files."""
    names = report["zip_names"]
    for required in ("blender_manifest.toml", "__init__.py", "ik_core/__init__.py", "operators/__init__.py",
                     "ui/__init__.py", "presets/__init__.py", "wheels/xacro-2.1.1-py3-none-any.whl",
                     "wheels/LICENSE-xacro"):
        assert required in names
    leaked = [n for n in names if n.startswith(FORBIDDEN_TOP_LEVEL) or "__pycache__" in n or n.endswith(".pyc")]
    assert leaked == []


@pytest.mark.slow
def test_install_enable_disable_uninstall(report):
    """Installed from disk the add-on registers its operator, panel and settings (and Blender installs the bundled
    wheels, importable from its extensions' site-packages), and removes them all."""
    assert report["installed_dir_exists"]
    assert report["enabled"]
    assert all(report["registered"].values()), report["registered"]
    assert report["operator_callable"]
    assert report["wheels_installed"] == {"xacro": True, "yaml": True, "mcap": True, "mcap_ros2": True}
    assert report["disabled"]
    assert all(report["unregistered"].values()), report["unregistered"]
    assert report["uninstalled"]
