# SPDX-License-Identifier: GPL-3.0-or-later
"""Enable the add-on exactly as Blender imports an installed extension: ``bl_ext.<repo>.articulate``."""

import importlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy")
import addon_utils  # noqa: E402  (only importable once bpy is)

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_REPO = "articulate_tests"
ADDON_MODULE = f"bl_ext.{TEST_REPO}.articulate"


def _raise(exc: BaseException) -> None:
    raise exc


@pytest.fixture(scope="session")
def addon():
    """The enabled add-on module, loaded from a throwaway local extension repository."""
    repo_dir = tempfile.mkdtemp(prefix="articulate-repo-")
    os.symlink(REPO_ROOT, os.path.join(repo_dir, "articulate"))
    repos = bpy.context.preferences.extensions.repos
    repo = repos.new(name=TEST_REPO, module=TEST_REPO, custom_directory=repo_dir, source="USER")
    module = addon_utils.enable(ADDON_MODULE, default_set=True, handle_error=_raise)
    assert module is not None and module.__name__ == ADDON_MODULE
    yield module
    addon_utils.disable(ADDON_MODULE, default_set=True, handle_error=_raise)
    repos.remove(repo)


@pytest.fixture
def core(addon):
    """``ik_core`` as the add-on sees it (``bl_ext.<repo>.articulate.ik_core``)."""
    return importlib.import_module(f"{ADDON_MODULE}.ik_core")


@pytest.fixture
def addon_module(addon):
    """Import a sub-module of the enabled add-on, e.g. ``addon_module('operators.compat')``."""
    return lambda name: importlib.import_module(f"{ADDON_MODULE}.{name}")


@pytest.fixture
def empty_scene(addon):
    """A fresh empty scene (add-ons stay enabled)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    yield bpy.context.scene


def pytest_report_header(config):
    return f"blender {bpy.app.version_string}, numpy {sys.modules['numpy'].__version__}"


@pytest.fixture(scope="session")
def blend_from_script(tmp_path_factory):
    """``build(script, name, *args)``: a .blend saved by ``script`` run in a child Python.

    The child gets the .blend path as ``sys.argv[1]`` (then ``args``) and its own user folder.
    Scenes that need Rigify are built this way: enabling it in the test process makes bpy 4.2
    segfault and bpy 4.5 hang at interpreter exit.
    """

    def build(script: str, name: str, *args: object) -> Path:
        folder = tmp_path_factory.mktemp(name)
        path = folder / f"{name}.blend"
        env = dict(os.environ)
        env.setdefault("BLENDER_USER_RESOURCES", str(folder / "user"))
        done = subprocess.run([sys.executable, "-c", script, str(path), *map(str, args)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and path.is_file(), done.stdout[-2000:] + done.stderr[-2000:]
        return path

    return build
