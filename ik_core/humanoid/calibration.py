# SPDX-License-Identifier: GPL-3.0-or-later
"""Calibration from a standing reference frame: body dimensions, hinge axes and tracker offsets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, UnknownNameError
from .geometry import normalize, orthonormalize_rotations
from .roles import RoleMap

__all__ = ["TRACKERS", "TRACKER_ROLES", "Body", "Limb", "calibrate"]

# Tracker order of the solver's inputs: the three required ones first, then optional extras.
TRACKERS = ("head", "hand_l", "hand_r", "pelvis", "foot_l", "foot_r")
# The role whose bone each tracker is worn on.
TRACKER_ROLES = {
    "head": "head",
    "hand_l": "hand_l",
    "hand_r": "hand_r",
    "pelvis": "pelvis",
    "foot_l": "foot_l",
    "foot_r": "foot_r",
}


@dataclass(frozen=True, eq=False)
class Limb:
    """A two-bone limb (arm or leg) of the calibrated body.

    Attributes:
        root, mid, end: Role indices of the upper bone, lower bone and end bone (hand or foot).
        upper, lower: (3,) reference bone vectors root->mid and mid->end [m].
        hinge: (3,) unit hinge axis in the reference world frame; positive rotation about it
            flexes the limb (elbow bends the forearm forward, knee bends the shin back).
        rest_flex: Flexion angle of the reference pose [rad].
        flex_range: (min, max) flexion limits [rad].
    """

    root: int
    mid: int
    end: int
    upper: np.ndarray
    lower: np.ndarray
    hinge: np.ndarray
    rest_flex: float
    flex_range: tuple[float, float]

    @property
    def length(self) -> float:
        """Straight length |upper| + |lower| [m]."""
        return float(np.linalg.norm(self.upper) + np.linalg.norm(self.lower))

    @property
    def max_reach(self) -> float:
        """Root-to-end distance at zero flexion [m] (below :attr:`length` off the hinge plane)."""
        lower_perp = self.lower - np.dot(self.lower, self.hinge) * self.hinge
        l1 = np.linalg.norm(self.upper)
        return float(np.sqrt(l1**2 + np.dot(self.lower, self.lower) + 2.0 * l1 * np.linalg.norm(lower_perp)))


@dataclass(frozen=True, eq=False)
class Body:
    """A humanoid calibrated at a standing reference frame (world z up, metres).

    Attributes:
        roles: The role map.
        names: Role names in solve order (parents first).
        parents: (J,) index of each role's parent role, -1 for the pelvis.
        ref: (J, 4, 4) world transforms of the role bones at the reference frame.
        offsets: (J, 3) reference vector from the parent joint to each joint [m].
        floor: Floor height [m].
        forward: (3,) unit horizontal facing direction at the reference frame.
        tracker_offsets: Tracker name -> (4, 4) offset with ``bone = tracker @ offset``.
        arms, legs: Left and right :class:`Limb` of each.
        head_height: Head joint height above the floor [m].
        pelvis_height: Pelvis joint height above the floor [m].
        ankle_height: (2,) left and right ankle heights above the floor [m].
    """

    roles: RoleMap
    names: tuple[str, ...]
    parents: np.ndarray
    ref: np.ndarray
    offsets: np.ndarray
    floor: float
    forward: np.ndarray
    tracker_offsets: Mapping[str, np.ndarray]
    arms: tuple[Limb, Limb]
    legs: tuple[Limb, Limb]
    head_height: float
    pelvis_height: float
    ankle_height: np.ndarray

    def index(self, role: str) -> int:
        """Index of a role in :attr:`names`.

        Raises:
            UnknownNameError: If the rig has no such role.
        """
        try:
            return self.names.index(role)
        except ValueError:
            raise UnknownNameError("role", role, self.names) from None

    @property
    def bones(self) -> tuple[str, ...]:
        """Bone names in the order of :attr:`names`."""
        return tuple(self.roles[r] for r in self.names)

    @property
    def positions(self) -> np.ndarray:
        """(J, 3) reference joint positions [m]."""
        return self.ref[:, :3, 3]

    @property
    def arm_lengths(self) -> np.ndarray:
        """(2,) left and right straight arm lengths, shoulder to wrist [m]."""
        return np.array([limb.length for limb in self.arms])

    @property
    def leg_lengths(self) -> np.ndarray:
        """(2,) left and right straight leg lengths, hip to ankle [m]."""
        return np.array([limb.length for limb in self.legs])

    def trunk_path(self) -> list[int]:
        """Role indices from the pelvis up to the head, inclusive."""
        path, j = [], self.index("head")
        while j >= 0:
            path.append(j)
            j = int(self.parents[j])
        return path[::-1]


def _as_pose_table(roles: RoleMap, reference: Mapping[str, object] | np.ndarray) -> np.ndarray:
    names = roles.roles
    if isinstance(reference, Mapping):
        out = []
        for role in names:
            bone = roles[role]
            value = reference.get(bone, reference.get(role))
            if value is None:
                raise UnknownNameError("reference bone", bone, list(reference))
            out.append(value)
        arr = np.asarray(out, dtype=float)
    else:
        arr = np.asarray(reference, dtype=float)
    if arr.shape != (len(names), 4, 4):
        raise InvalidInputError(f"reference must hold {len(names)} (4, 4) bone transforms, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError("reference bone transforms contain NaN or infinite values")
    arr = arr.copy()
    arr[:, :3, :3] = orthonormalize_rotations(arr[:, :3, :3])
    return arr


def _hinge(upper: np.ndarray, lower: np.ndarray, natural: np.ndarray) -> tuple[np.ndarray, float]:
    """Hinge axis and rest flexion; ``natural`` is where the middle joint moves when it flexes."""
    u = normalize(upper + lower)
    axis = normalize(np.cross(natural - np.dot(natural, u) * u, u))
    bent = np.cross(upper, lower)
    # A clearly bent reference defines the plane exactly; a straight one uses anatomy.
    if np.linalg.norm(bent) > np.sin(np.radians(10)) * np.linalg.norm(upper) * np.linalg.norm(lower):
        b = normalize(bent)
        if abs(np.dot(b, axis)) > 0.5:
            axis = b * np.sign(np.dot(b, axis))
    axis = normalize(axis - np.dot(axis, normalize(upper)) * normalize(upper))
    lo = lower - np.dot(lower, axis) * axis
    flex = float(np.arctan2(np.dot(np.cross(upper, lo), axis), np.dot(upper, lo)))
    return axis, flex


def calibrate(
    roles: RoleMap,
    reference: Mapping[str, object] | np.ndarray,
    trackers: Mapping[str, object] | np.ndarray,
    floor: float = 0.0,
    elbow_range: tuple[float, float] = (0.0, 150.0),
    knee_range: tuple[float, float] = (0.0, 150.0),
) -> Body:
    """Calibrate a body from one standing frame.

    Args:
        roles: Role map of the rig.
        reference: World transforms of the role bones at the reference frame: a mapping from
            bone (or role) name to a (4, 4) matrix, or a (J, 4, 4) array in ``roles.roles``
            order; translations are joint positions [m], z up.
        trackers: Tracker poses at the same frame: a mapping from tracker name (see
            :data:`TRACKERS`) to (4, 4), or a (T, 4, 4) array in :data:`TRACKERS` order
            (T = 3 for head and hands, up to 6 with pelvis and feet).
        floor: Floor height [m].
        elbow_range: Elbow flexion limits [deg].
        knee_range: Knee flexion limits [deg].

    Returns:
        The calibrated body.

    Raises:
        InvalidInputError: For wrong shapes, non-finite values, a reference with the head
            below the pelvis, or a missing head or hand tracker.
        UnknownNameError: For an unknown tracker name or a bone absent from ``reference``.
    """
    ref = _as_pose_table(roles, reference)
    names = roles.roles
    index = {r: i for i, r in enumerate(names)}
    parents = np.array([-1 if (p := roles.parent_role(r)) is None else index[p] for r in names])
    pos = ref[:, :3, 3]
    offsets = np.where(parents[:, None] >= 0, pos - pos[np.maximum(parents, 0)], 0.0)
    up = np.array([0.0, 0.0, 1.0])
    head_h = pos[index["head"]][2] - floor
    pelvis_h = pos[index["pelvis"]][2] - floor
    if not head_h > pelvis_h:
        raise InvalidInputError(
            f"reference frame must be standing: head joint height {head_h:.3f} m is not above the "
            f"pelvis height {pelvis_h:.3f} m"
        )
    left = pos[index["thigh_l"]] - pos[index["thigh_r"]]
    left += 0.5 * (pos[index["upper_arm_l"]] - pos[index["upper_arm_r"]])
    left[2] = 0.0
    if np.linalg.norm(left) < 1e-6:
        raise InvalidInputError("reference frame: left and right hips coincide; cannot tell the facing")
    forward = normalize(np.cross(left, up))

    arms, legs = [], []
    for side in ("l", "r"):
        lateral = normalize(left) * (1.0 if side == "l" else -1.0)
        for kind, (a, b, c), natural, rng, out in (
            ("arm", ("upper_arm", "forearm", "hand"), normalize(-forward + 0.3 * lateral), elbow_range, arms),
            ("leg", ("thigh", "shin", "foot"), forward, knee_range, legs),
        ):
            ia, ib, ic = index[f"{a}_{side}"], index[f"{b}_{side}"], index[f"{c}_{side}"]
            upper, lower = pos[ib] - pos[ia], pos[ic] - pos[ib]
            if min(np.linalg.norm(upper), np.linalg.norm(lower)) < 1e-4:
                raise InvalidInputError(f"{kind} {side}: a bone of the reference has zero length")
            axis, flex = _hinge(upper, lower, natural)
            lo, hi = np.radians(rng)
            out.append(Limb(ia, ib, ic, upper, lower, axis, flex, (min(lo, flex), max(hi, flex))))

    tracker_table = _tracker_table(trackers)
    tracker_offsets = {}
    for name, T in tracker_table.items():
        tracker_offsets[name] = np.linalg.solve(T, ref[index[TRACKER_ROLES[name]]])
    ankle = np.array([pos[index[f"foot_{s}"]][2] - floor for s in "lr"])
    if np.any(ankle < 0.0):
        side = "left" if ankle[0] < 0.0 else "right"
        raise InvalidInputError(
            f"reference frame: the {side} ankle is {-float(np.min(ankle)):.3g} m below the floor (floor height "
            f"{floor:.3g} m): the body must stand on the floor or above it there; lower the floor height, or "
            "pick a reference frame where the rig stands on the floor")
    return Body(
        roles,
        names,
        parents,
        ref,
        offsets,
        float(floor),
        forward,
        tracker_offsets,
        (arms[0], arms[1]),
        (legs[0], legs[1]),
        float(head_h),
        float(pelvis_h),
        ankle,
    )


def _tracker_table(trackers: Mapping[str, object] | np.ndarray) -> dict[str, np.ndarray]:
    if isinstance(trackers, Mapping):
        table = {}
        for name, value in trackers.items():
            if name not in TRACKERS:
                raise UnknownNameError("tracker", name, TRACKERS)
            table[name] = np.asarray(value, dtype=float)
    else:
        arr = np.asarray(trackers, dtype=float)
        if arr.ndim != 3 or arr.shape[1:] != (4, 4) or not 3 <= arr.shape[0] <= len(TRACKERS):
            raise InvalidInputError(f"trackers must be (T, 4, 4) with 3 <= T <= 6, got shape {arr.shape}")
        table = dict(zip(TRACKERS, arr))
    for name in TRACKERS[:3]:
        if name not in table:
            raise InvalidInputError(f"the {name!r} tracker is required; given: {', '.join(table)}")
    for name, T in table.items():
        if T.shape != (4, 4):
            raise InvalidInputError(f"tracker {name!r} must be a (4, 4) pose, got shape {T.shape}")
        if not np.all(np.isfinite(T)):
            raise InvalidInputError(
                f"tracker {name!r} has no pose on the reference frame (NaN or infinite values: a dropout); "
                "pick a reference frame where every tracker is seen")
        T = T.copy()
        T[:3, :3] = orthonormalize_rotations(T[:3, :3])
        table[name] = T
    return table
