# SPDX-License-Identifier: GPL-3.0-or-later
"""The "Auto" solver choice: a solver that honours what the chain asks for."""

import pytest

from ik_core import UnknownNameError
from ik_core.solvers import AUTO, SOLVER_CHOICES, SOLVER_LABELS, SOLVER_NAMES, auto_solver, resolve_solver, solver_class


def test_auto_honours_poles_and_full_poses():
    """Two bones: the closed form; longer with a pole: FABRIK; full 6-D targets and robots: DLS."""
    assert auto_solver(2, pole=True, full_pose=False, robot=False) == "two_bone"
    assert auto_solver(2, pole=False, full_pose=False, robot=False) == "two_bone"
    assert auto_solver(4, pole=True, full_pose=False, robot=False) == "fabrik"
    assert auto_solver(4, pole=False, full_pose=False, robot=False) == "dls"
    assert auto_solver(2, pole=True, full_pose=True, robot=False) == "dls"
    assert auto_solver(6, pole=False, full_pose=True, robot=True) == "dls"


@pytest.mark.parametrize("bones", [2, 3, 5])
def test_auto_with_a_pole_picks_a_solver_that_takes_poles(bones):
    """Whatever Auto picks for a position chain with a pole declares the pole option."""
    name = auto_solver(bones, pole=True, full_pose=False, robot=False)
    assert "pole" in solver_class(name).call_options


def test_every_choice_has_a_label_and_resolves():
    """Every choice is labelled; explicit names pass through; unknown names list the valid ones."""
    assert set(SOLVER_CHOICES) == {AUTO, *SOLVER_NAMES} and set(SOLVER_LABELS) == set(SOLVER_CHOICES)
    for name in SOLVER_NAMES:
        assert resolve_solver(name, 3, pole=True, full_pose=False, robot=False) == name
    with pytest.raises(UnknownNameError, match="valid solvers: 'auto'"):
        resolve_solver("newton", 3, pole=False, full_pose=False, robot=False)
