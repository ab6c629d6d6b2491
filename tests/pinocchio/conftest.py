# SPDX-License-Identifier: GPL-3.0-or-later
"""Pinocchio's answers for every case of :mod:`fk_cases`, computed once in the pinocchio venv's Python.

The tests never import pinocchio: ``reference_fk.py`` runs in its own venv (``$ARTICULATE_PINOCCHIO``,
which dev/test.sh sets, else ``.venvs/pinocchio``) and answers in a JSON file, so the same tests
run under any Blender's Python. A missing venv fails the tests: it is made by ``dev/envs.sh pinocchio``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # fk_cases, beside this file
from fk_cases import FkCase, all_cases  # noqa: E402

try:
    import bpy  # noqa: F401
except ImportError:  # the core half of the suite runs on any Python
    pass
else:  # the add-on, enabled as the Blender tests enable it
    from blender.conftest import addon, core, empty_scene  # noqa: E402, F401

REPO_ROOT = Path(__file__).resolve().parents[2]


def pinocchio_python() -> Path:
    """The pinocchio venv's interpreter: ``$ARTICULATE_PINOCCHIO``, else the repository's ``.venvs/pinocchio``."""
    configured = os.environ.get("ARTICULATE_PINOCCHIO")
    path = Path(configured) if configured else REPO_ROOT / ".venvs" / "pinocchio" / "bin" / "python"
    if not path.is_file():
        pytest.fail(f"no pinocchio venv at {path}: run dev/envs.sh pinocchio (dev/test.sh does)")
    return path


class Reference:
    """Pinocchio's link poses per case: ``poses(name)`` is {link: (C, 4, 4)} over the case's configurations."""

    def __init__(self, cases: list[FkCase], answer: dict) -> None:
        self.version = answer["pinocchio"]
        self.cases = {c.name: c for c in cases}
        self._answers = {c.name: a for c, a in zip(cases, answer["cases"])}

    def poses(self, name: str) -> dict[str, np.ndarray]:
        """Link -> (configurations, 4, 4) world poses [m], the root link's frame as the world."""
        answer = self._answers[name]
        P = np.array(answer["poses"])  # (C, L, 4, 4)
        return {link: P[:, k] for k, link in enumerate(answer["links"])}

    def joint_types(self, name: str) -> dict[str, str]:
        """Joint name -> pinocchio's joint model (``JointModelRZ``, ``JointModelFreeFlyer``, ...)."""
        return self._answers[name]["joint_types"]


@pytest.fixture(scope="session")
def reference(tmp_path_factory) -> Reference:
    """Pinocchio's answers for :func:`fk_cases.all_cases`, one child process for all of them."""
    cases = all_cases()
    folder = tmp_path_factory.mktemp("pinocchio")
    request, answer = folder / "request.json", folder / "answer.json"
    request.write_text(json.dumps({"cases": [{"urdf": c.urdf, "configurations": list(c.configurations)}
                                             for c in cases]}))
    done = subprocess.run([str(pinocchio_python()), str(Path(__file__).with_name("reference_fk.py")),
                           str(request), str(answer)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return Reference(cases, json.loads(answer.read_text()))
