# SPDX-License-Identifier: GPL-3.0-or-later
"""dev/check_imports.py finds import circles, private cross-module imports and upward imports, and passes the repo."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "dev" / "check_imports.py"


@pytest.fixture
def checker(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("check_imports", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)

    def run(files: dict[str, str]):
        for rel, text in files.items():
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        graph, private = module.analyse(module.find_modules())
        return module.circles(graph), private, module.upward(graph)

    return run


def test_a_clean_tree_passes(checker):
    circles, private, upward = checker({
        "ik_core/__init__.py": "", "ik_core/model/__init__.py": "", "ik_core/solvers/__init__.py": "",
        "ik_core/model/a.py": "X = 1\n",
        "ik_core/solvers/b.py": "from ..model.a import X\n",
    })
    assert (circles, private, upward) == ([], [], [])


def test_a_lazy_import_closing_a_circle_is_found(checker):
    circles, _, _ = checker({
        "ik_core/__init__.py": "", "ik_core/model/__init__.py": "",
        "ik_core/model/a.py": "from .b import Y\nX = 1\n",
        "ik_core/model/b.py": "Y = 2\ndef f():\n    from .a import X\n    return X\n",
    })
    assert circles == [["ik_core.model.a", "ik_core.model.b"]]


def test_a_type_only_import_closing_a_circle_is_found(checker):
    circles, _, _ = checker({
        "ik_core/__init__.py": "", "ik_core/model/__init__.py": "",
        "ik_core/model/a.py": "from .b import Y\nX = 1\n",
        "ik_core/model/b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import X\n"
                               "Y = 2\n"),
    })
    assert circles == [["ik_core.model.a", "ik_core.model.b"]]


def test_a_package_init_importing_its_importer_is_a_circle(checker):
    """Importing model.c runs model/__init__, which imports solvers.b, which imports model.c."""
    circles, _, _ = checker({
        "ik_core/__init__.py": "", "ik_core/solvers/__init__.py": "",
        "ik_core/model/__init__.py": "from ..solvers.b import Z\n",
        "ik_core/model/c.py": "W = 0\n",
        "ik_core/solvers/b.py": "from ..model.c import W\nZ = W\n",
    })
    assert circles and "ik_core.model" in circles[0] and "ik_core.solvers.b" in circles[0]


def test_private_names_and_upward_imports_are_found(checker):
    _, private, upward = checker({
        "ik_core/__init__.py": "", "ik_core/model/__init__.py": "", "ik_core/take/__init__.py": "",
        "ik_core/take/t.py": "_HIDDEN = 1\n",
        "ik_core/model/m.py": "from ..take import t\nfrom ..take.t import _HIDDEN\nY = t._HIDDEN\n",
    })
    assert len(private) == 2 and all("_HIDDEN" in line for line in private)
    assert upward and all("ik_core.model.m (model, layer 1) imports ik_core.take" in line for line in upward)


def test_the_repository_passes():
    spec = importlib.util.spec_from_file_location("check_imports_repo", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main([]) == 0


def test_test_files_have_unique_basenames():
    """bpy 5.0.1's run collects tests/core and tests/blender together, whose folders are not packages: two test
    files with one basename break collection there ("import file mismatch")."""
    tests = Path(__file__).resolve().parents[1]
    names: dict[str, list[str]] = {}
    for path in tests.rglob("test_*.py"):
        names.setdefault(path.name, []).append(str(path.relative_to(tests)))
    assert not {name: paths for name, paths in names.items() if len(paths) > 1}
