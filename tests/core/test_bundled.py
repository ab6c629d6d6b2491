# SPDX-License-Identifier: GPL-3.0-or-later
"""The bundled wheels: pure Python, listed in the manifest with a licence each, importable without Blender."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from ik_core import bundled

ROOT = Path(__file__).resolve().parents[2]


def test_every_wheel_is_pure_python_and_listed_in_the_manifest() -> None:
    """Each file in wheels/ is tagged py3-none-any, holds no compiled code, and the manifest lists exactly them."""
    wheels = bundled.bundled_wheels()
    assert {w.name.split("-")[0] for w in wheels} == {"xacro", "pyyaml", "mcap", "mcap_ros2_support"}
    assert sorted(p.name for p in (ROOT / "wheels").glob("*.whl")) == [w.name for w in wheels]
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            info = z.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
        assert "Root-Is-Purelib: true" in info and [t for t in info.splitlines() if t.startswith("Tag:")] == [
            "Tag: py3-none-any"], wheel.name
        code = [n for n in names if not n.endswith("/") and ".dist-info/" not in n]
        assert code and all(n.endswith((".py", ".typed")) for n in code), wheel.name
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    assert sorted(manifest["wheels"]) == sorted(f"./wheels/{w.name}" for w in wheels)
    readme = (ROOT / "wheels" / "README.md").read_text()
    for wheel in wheels:
        assert wheel.name in readme
    for licence in ("LICENSE-xacro", "LICENSE-pyyaml", "LICENSE-mcap"):
        assert (ROOT / "wheels" / licence).stat().st_size > 500


def _run(code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh Python that cannot see any installed xacro, mcap or yaml (only the repository)."""
    return subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_imported_from_the_wheels_when_not_installed() -> None:
    """Without the packages installed, import_bundled imports them from the wheel files."""
    done = _run("from ik_core.bundled import import_bundled as b; "
                "print(b('xacro').__file__); print(b('mcap_ros2.decoder').__file__); print(b('yaml').__file__)")
    assert done.returncode == 0, done.stderr
    files = done.stdout.split()
    assert [Path(f).parts[-3] for f in files] == [
        "xacro-2.1.1-py3-none-any.whl", "mcap_ros2_support-0.6.0-py3-none-any.whl", "pyyaml-6.0.3-py3-none-any.whl"]


def test_missing_wheel_is_a_clear_error() -> None:
    """With the wheel folder empty and the package not installed: a DependencyError naming the package and the fix."""
    done = _run("import ik_core.bundled as b, pathlib, tempfile; b.WHEELS_DIR = pathlib.Path(tempfile.mkdtemp()); "
                "from ik_core.errors import DependencyError\n"
                "try:\n    b.import_bundled('mcap')\nexcept DependencyError as e:\n    print(e)")
    assert done.returncode == 0, done.stderr
    assert "'mcap' (mcap on PyPI), needed for reading and writing MCAP files" in done.stdout
    assert "reinstall the Articulate extension, or run 'pip install mcap'" in done.stdout
