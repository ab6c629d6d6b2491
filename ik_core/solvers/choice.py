# SPDX-License-Identifier: GPL-3.0-or-later
"""Which solver a chain gets: the names and labels users pick from, and what "Auto" picks."""

from __future__ import annotations

from ..errors import UnknownNameError

AUTO = "auto"
SOLVER_LABELS: dict[str, str] = {AUTO: "Auto", "fabrik": "FABRIK", "ccd": "CCD", "dls": "DLS", "two_bone": "Two-bone"}
SOLVER_DESCRIPTIONS: dict[str, str] = {
    AUTO: "Picks for the chain: Two-bone for 2 bones, FABRIK for longer chains with a pole (both honour the "
          "pole), DLS for rotation-matching targets and robots",
    "fabrik": "Forward and backward reaching, projected onto the joint limits: fast on long chains; honours poles; "
              "matches the target's rotation only with the last bone",
    "ccd": "Cyclic coordinate descent: each bone in turn, tip to root, takes its best turn; matches rotation "
           "too; ignores poles",
    "dls": "Damped least squares: exact position and rotation (6-D) targets, robots, chains that share bones; "
           "ignores poles",
    "two_bone": "Closed form for exactly two bones (upper and lower limb), no iterations; honours poles; "
                "reports rotation but does not match it",
}
SOLVER_CHOICES: tuple[str, ...] = (AUTO, "fabrik", "ccd", "dls", "two_bone")


def auto_solver(bones: int, *, pole: bool, full_pose: bool, robot: bool, limb: bool = True) -> str:
    """The solver "Auto" picks for a chain: one that honours what the chain asks for.

    Args:
        bones: Bones (or joints) in the chain.
        pole: The chain has a pole target.
        full_pose: The target's orientation must be matched too (6-D target).
        robot: The chain belongs to a robot rig (exact joint kinds, tight tolerances).
        limb: A two-bone chain is (or is built as) a ball joint and a hinge, the closed form's
            limb; an armature's chain always can be.

    Returns:
        ``"dls"`` for robots and full 6-D targets, ``"two_bone"`` for two-bone limbs (the
        closed form, pole honoured), ``"fabrik"`` for other chains with a pole, and ``"dls"``
        for the rest.
    """
    if robot or full_pose:
        return "dls"
    if bones == 2 and limb:
        return "two_bone"
    return "fabrik" if pole else "dls"


def resolve_solver(name: str, bones: int, *, pole: bool, full_pose: bool, robot: bool, limb: bool = True) -> str:
    """``name`` itself, or what :func:`auto_solver` picks when it is ``"auto"``.

    Raises:
        UnknownNameError: ``name`` is not one of :data:`SOLVER_CHOICES` (the message lists them).
    """
    if name not in SOLVER_CHOICES:
        raise UnknownNameError("solver", name, SOLVER_CHOICES)
    return auto_solver(bones, pole=pole, full_pose=full_pose, robot=robot, limb=limb) if name == AUTO else name
