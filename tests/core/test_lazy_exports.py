# SPDX-License-Identifier: GPL-3.0-or-later
"""ik_core and ik_core.trajectory import their public names on first use: the same objects, fewer imports."""

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", ["ik_core", "ik_core.trajectory"])
def test_every_public_name_is_its_modules_object(package):
    """Each name of ``__all__`` is importable from the package, is the very object its module defines (never a
    submodule of the same name, such as ``blas_threads`` or ``resample``), and is listed by dir()."""
    pkg = importlib.import_module(package)
    for name in pkg.__all__:
        value = getattr(pkg, name)
        assert not isinstance(value, ModuleType), f"{package}.{name} is a module"
        if callable(value):
            assert getattr(sys.modules[value.__module__], value.__name__) is value
    assert set(pkg.__all__) <= set(dir(pkg))
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = pkg.no_such_name


def _modules_after(code: str) -> set[str]:
    """The ik_core modules a fresh interpreter has imported after running ``code``."""
    probe = f"import sys; {code}; print(' '.join(m for m in sys.modules if m.startswith('ik_core')))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_importing_a_folder_does_not_import_the_others():
    """``import ik_core`` loads only the error types and the BLAS switch; one folder's module only what it imports;
    a name imports its own module."""
    assert _modules_after("import ik_core") == {"ik_core", "ik_core.errors", "ik_core.blas_threads"}
    limits = _modules_after("import ik_core.limits")
    assert not {m for m in limits if m.startswith(("ik_core.formats", "ik_core.take", "ik_core.solvers"))}
    topic = _modules_after("from ik_core.trajectory.mcap_files import DEFAULT_TOPIC")
    assert "ik_core.trajectory.check" not in topic and "ik_core.trajectory.io" not in topic
    assert "ik_core.formats.urdf" in _modules_after("from ik_core import parse_urdf")
