# SPDX-License-Identifier: GPL-3.0-or-later
"""The batched full-body solve: head and hand trackers (plus optional pelvis and feet) -> a body pose."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .arms import solve_arms
from .cadence import StepSchedule
from .calibration import TRACKERS, Body
from .geometry import mv, normalize
from .legs import solve_legs
from .options import SolveOptions
from .trackers import clean_trackers
from .trunk import head_heading, heading_of, solve_trunk

__all__ = ["BodyPose", "SolveOptions", "solve_body"]


@dataclass(frozen=True, eq=False)
class BodyPose:
    """A solved take.

    Attributes:
        names: Role names, one per joint column.
        bones: Bone names in the same order.
        parents: (J,) parent role index, -1 for the pelvis.
        world: (N, J, 4, 4) world transforms of the role bones (rotations relative to the
            reference pose's bone frames, translations at the joints) [m].
        trackers: Names of the trackers used, one per tracker column of the arrays below.
        tracker_error: (N, T) distance between each tracked bone and its tracker target [m].
        tracker_angle: (N, T) rotation error of each tracked bone [rad].
        reachable: (N, T) False where a target lay beyond the limb (or spine) reach.
        held: (N, T) True for frames whose tracker pose was NaN and held.
        jumps: Tracker name -> frame indices where the tracker jumped.
        contacts: (N, 2) True while the left / right foot is planted.
        flex: (N, 4) elbow left/right and knee left/right flexion [rad].
    """

    names: tuple[str, ...]
    bones: tuple[str, ...]
    parents: np.ndarray
    world: np.ndarray
    trackers: tuple[str, ...]
    tracker_error: np.ndarray
    tracker_angle: np.ndarray
    reachable: np.ndarray
    held: np.ndarray
    jumps: dict[str, tuple[int, ...]]
    contacts: np.ndarray
    flex: np.ndarray

    @property
    def positions(self) -> np.ndarray:
        """(N, J, 3) world joint positions [m]."""
        return self.world[..., :3, 3]

    @property
    def held_counts(self) -> dict[str, int]:
        """Number of held (NaN) frames per tracker."""
        return {n: int(c) for n, c in zip(self.trackers, self.held.sum(axis=0))}

    def local(self) -> np.ndarray:
        """(N, J, 4, 4) transforms relative to the parent role's bone (world for the pelvis)."""
        out = self.world.copy()
        child = np.flatnonzero(self.parents >= 0)
        Wp = self.world[:, self.parents[child]]
        Wc = self.world[:, child]
        Rt = np.swapaxes(Wp[..., :3, :3], -1, -2)
        rel = Wc.copy()
        rel[..., :3, :3] = Rt @ Wc[..., :3, :3]
        rel[..., :3, 3] = mv(Rt, Wc[..., :3, 3] - Wp[..., :3, 3])
        out[:, child] = rel
        return out


def solve_body(
    body: Body,
    trackers: np.ndarray,
    frame_time: float,
    options: SolveOptions | None = None,
    steps: StepSchedule | None = None,
) -> BodyPose:
    """Solve whole-body poses for a take from head and hand trackers.

    Args:
        body: Calibrated body (see :func:`ik_core.humanoid.calibrate`).
        trackers: (N, T, 4, 4) world tracker poses [m], z up, in :data:`TRACKERS` order: head,
            left hand, right hand, then optionally pelvis, left foot, right foot. NaN poses
            (lost tracking) are held from the last good frame and counted; an optional
            tracker that is NaN in every frame counts as absent (so feet can be given
            without a pelvis).
        frame_time: Seconds per frame.
        options: Tuning; defaults when None.
        steps: Known step timing of the feet without trackers (e.g. :func:`steps_from_contacts`
            of annotated contacts), over the same N frames; None: timed from the head while the
            body walks (``options.gait.cadence``).

    Returns:
        The solved poses, with tracker errors, held-frame counts and detected jumps.

    Raises:
        InvalidInputError: On wrong shapes, a tracker the body was not calibrated with, or a
            tracker that is never valid.
    """
    o = options or SolveOptions()
    arr = np.asarray(trackers, dtype=float)
    if arr.ndim != 4 or not 3 <= arr.shape[1] <= len(TRACKERS):
        raise InvalidInputError(f"trackers must be (N, T, 4, 4) with 3 <= T <= 6, got shape {arr.shape}")
    # An optional tracker whose column is NaN throughout is absent (e.g. feet without a pelvis).
    with np.errstate(invalid="ignore"):
        seen = np.any(np.all(np.isfinite(arr), axis=(-1, -2)), axis=0)
    columns = [t for t in range(arr.shape[1]) if t < 3 or seen[t]]
    names = tuple(TRACKERS[t] for t in columns)
    for name in names:
        if name not in body.tracker_offsets:
            raise InvalidInputError(
                f"tracker {name!r} was not calibrated; calibrated trackers: {', '.join(body.tracker_offsets)}"
            )
    stream = clean_trackers(arr[:, columns], names, frame_time, o.jump_speed, o.jump_turn)
    target = {n: stream.poses[:, t] @ body.tracker_offsets[n] for t, n in enumerate(names)}
    n, J = arr.shape[0], len(body.names)
    if steps is not None and steps.walking.shape != (n,):
        raise InvalidInputError(
            f"steps cover {steps.walking.shape[0]} frames; the trackers have {n} (one step timing per take)"
        )
    D = np.broadcast_to(np.eye(3), (n, J, 3, 3)).copy()
    P = np.zeros((n, J, 3))
    idx = body.index

    if "pelvis" in target:
        fwd = mv(target["pelvis"][:, :3, :3], body.ref[0, :3, :3].T @ body.forward)
        fwd[:, 2] = 0.0
        heading = np.unwrap(heading_of(normalize(fwd, fallback=body.forward)))
    else:
        heading = head_heading(body, target["head"][:, :3, :3], o.heading_smoothing / frame_time)
    solve_trunk(
        body,
        target["head"],
        heading,
        (o.pelvis_bend, o.spine_bend),
        o.spine_twist,
        o.crouch_lean,
        o.neck_share,
        o.spine_stiffness,
        D,
        P,
        target.get("pelvis"),
        o.hip_smoothing / frame_time,
        stream.jumps["head"],
    )

    flex = np.zeros((n, 4))
    reach = {}
    contacts = solve_legs(body, o, heading, frame_time, target, D, P, flex, reach, stream.jumps["head"], steps)
    solve_arms(body, target, D, P, flex, reach, o, frame_time)
    world = np.broadcast_to(np.eye(4), (n, J, 4, 4)).copy()
    world[..., :3, :3] = D @ body.ref[:, :3, :3]
    world[..., :3, 3] = P
    err = np.zeros((n, len(names)))
    ang = np.zeros((n, len(names)))
    ok = np.ones((n, len(names)), dtype=bool)
    for t, name in enumerate(names):
        j = idx(name)
        err[:, t] = np.linalg.norm(world[:, j, :3, 3] - target[name][:, :3, 3], axis=-1)
        rel = np.swapaxes(world[:, j, :3, :3], -1, -2) @ target[name][:, :3, :3]
        ang[:, t] = np.arccos(np.clip((np.trace(rel, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0))
        if name in reach:
            ok[:, t] = reach[name]
    return BodyPose(
        body.names,
        body.bones,
        body.parents,
        world,
        names,
        err,
        ang,
        ok,
        stream.held,
        stream.jumps,
        contacts,
        flex,
    )
