# SPDX-License-Identifier: GPL-3.0-or-later
"""Alternative poses: distinct configurations of a redundant chain that all reach one target, ranked.

Where :func:`.branches.distinct_solutions` lists a robot's IK branches nearest first, this
module serves chains with more freedom than their target needs (an arm with a shoulder, a
tail, a redundant robot): starts are spread over the chain's self-motion (the current pose
turned about the root-to-target line, bends flipped, samples of the limit ranges), solved,
and the converged answers that differ by more than a separation are ranked by a score of
distance from the current pose and margin from the joint limits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, require_finite
from ..limits import ConeTwistLimit, EulerLimit, SwingTwistLimit, limit_violation, project_configuration
from ..model.distance import joint_steps
from ..model.euler import AXIS_INDICES, matrix_to_euler_unchecked
from ..model.kinematics import forward_kinematics
from ..model.poles import chain_root
from ..model.rotations import axis_angle_to_matrix, matrix_to_rotvec, rotvec_to_matrix
from ..model.skeleton import JointKind, Skeleton
from .base import Solver
from .branches import first_distinct, random_configurations

#: Margins are capped here [rad or m]: a joint this far from all its limits counts as free.
MARGIN_CAP = np.pi
# Turns of the current pose about the root-to-target line used as starts (a full turn in steps).
_SWIVELS = 8
# Points on the edge of a swing ellipse the swing's distance to it is measured on (a quarter
# degree apart: within 0.007 rad of the true distance for semi-axes up to pi).
_EDGE_SAMPLES = 1440
# The swing-twist split about Y (a bone's axis) that SwingTwistLimit reads, without bounds of its own.
_SWING_TWIST_Y = ConeTwistLimit(np.pi, np.pi, -np.pi, np.pi)
# Solutions this far [rad or m] outside a limit count as outside.
_LIMIT_TOL = 1e-7


@dataclass(frozen=True)
class AlternativePoses:
    """Distinct configurations reaching one target, best score first.

    Attributes:
        q: (K, dof) the poses [rad or m], each inside every limit.
        position_error: (K,) [m, base-frame units].
        rotation_error: (K,) [rad]; 0 in position mode.
        distance: (K,) largest joint change from the current pose [rad or m] (a ball joint by
            the angle of its relative rotation, see :func:`~ik_core.model.distance.joint_steps`).
        margin: (K,) smallest margin of any joint from its limits [rad or m], at most
            :data:`MARGIN_CAP` (see :func:`limit_margin`).
        score: (K,) ``distance + limit_weight * max(0, comfort - margin)``, lower first.
        swivel: (K,) bend direction about the root-to-target line [rad] in (-pi, pi], from the
            pole's direction (with a pole) or the current pose's (see :func:`swivel_angles`).
        starts: Number of starts solved.
        reason: "found K distinct poses ..." or, when K is 0, why nothing was found.
        best_effort: (dof,) with K == 0, the start's answer nearest the target (finite, inside
            the limits); with K > 0 the first pose.
    """

    q: np.ndarray
    position_error: np.ndarray
    rotation_error: np.ndarray
    distance: np.ndarray
    margin: np.ndarray
    score: np.ndarray
    swivel: np.ndarray
    starts: int
    reason: str
    best_effort: np.ndarray

    def __len__(self) -> int:
        return len(self.q)


def _range_margin(angle: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """(...,) distance [rad] of angles to the nearer end of [lo, hi] (modulo 2 pi), 0 outside; cap if free."""
    if not hi - lo < 2 * np.pi:
        return np.full(np.shape(angle), MARGIN_CAP)
    r = lo + np.mod(np.asarray(angle, dtype=float) - lo, 2 * np.pi)
    return np.where(r <= hi, np.minimum(r - lo, hi - r), 0.0)


def _swing_margin(su: np.ndarray, sw: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(...,) distance [rad] of swing vectors (su, sw) to the edge of their per-quadrant ellipses.

    The semi-axes are ``hi`` on the positive side of each axis and ``-lo`` on the negative one
    (``lo``, ``hi``: (2,) bounds [rad] for u and w); a side of zero width puts the edge on the
    other axis. An axis with no width either way leaves the swing a segment along the other;
    two such axes, or two free ones (a full turn each way), leave nothing to measure (the cap).
    """
    flat_u, flat_w = hi[0] - lo[0] <= 0.0, hi[1] - lo[1] <= 0.0
    free = (lo <= -np.pi) & (hi >= np.pi)
    if (flat_u and flat_w) or free.all():
        return np.full(np.shape(su), MARGIN_CAP)
    if flat_u:
        return _range_margin(sw, lo[1], hi[1])
    if flat_w:
        return _range_margin(su, lo[0], hi[0])
    theta = np.linspace(0.0, 2 * np.pi, _EDGE_SAMPLES, endpoint=False)
    c, s = np.cos(theta), np.sin(theta)
    edge_u = np.where(c >= 0, hi[0], -lo[0]) * c
    edge_w = np.where(s >= 0, hi[1], -lo[1]) * s
    du = np.asarray(su, dtype=float)[..., None] - edge_u
    dw = np.asarray(sw, dtype=float)[..., None] - edge_w
    return np.sqrt(np.min(du * du + dw * dw, axis=-1))


def _ball_margin(limit: object, R: np.ndarray) -> np.ndarray:
    """(n,) margin [rad] of rotations R (n, 3, 3) inside a ball-joint limit, read in its own terms.

    Euler ranges: the smallest distance of a limited angle to its range's ends (the better of
    the two decompositions). Swing-twist and cone-twist limits: the smaller of the twist's
    distance to its range's ends and the swing vector's distance to the edge of its ellipse.
    Locked axes and free ones (a full turn) do not count. 0 outside the limit; the cap for a
    kind of limit this function does not know.
    """
    if isinstance(limit, EulerLimit):
        lo = np.where(limit.locked, 0.0, limit.lower)
        hi = np.where(limit.locked, 0.0, limit.upper)
        i, j, k = AXIS_INDICES[limit.order]
        e0 = matrix_to_euler_unchecked(R, limit.order)
        e1 = e0.copy()
        e1[..., i] += np.pi
        e1[..., j] = np.pi - e0[..., j]
        e1[..., k] += np.pi
        margins = []
        for e in (e0, e1):
            per_axis = [np.full(len(R), MARGIN_CAP) if limit.locked[n] else _range_margin(e[..., n], lo[n], hi[n])
                        for n in range(3)]
            margins.append(np.min(per_axis, axis=0))
        margin = np.maximum(*margins)
    elif isinstance(limit, (SwingTwistLimit, ConeTwistLimit)):
        if isinstance(limit, SwingTwistLimit):
            lo = np.where(limit.locked, 0.0, limit.lower)
            hi = np.where(limit.locked, 0.0, limit.upper)
            su, sw, twist = _SWING_TWIST_Y.swing_twist_angles(R)
            twist_margin = np.full(len(R), MARGIN_CAP) if limit.locked[1] else _range_margin(twist, lo[1], hi[1])
        else:
            lo = np.array([-limit.swing_x, limit.twist_min, -limit.swing_z])
            hi = np.array([limit.swing_x, limit.twist_max, limit.swing_z])
            su, sw, twist = limit.swing_twist_angles(R)
            flat = limit.twist_max - limit.twist_min <= 0.0
            twist_margin = np.full(len(R), MARGIN_CAP) if flat else _range_margin(twist, lo[1], hi[1])
        margin = np.minimum(twist_margin, _swing_margin(su, sw, lo[[0, 2]], hi[[0, 2]]))
    else:
        margin = np.full(len(R), MARGIN_CAP)
    return np.where(limit.contains_matrix(R, 1e-9), np.clip(margin, 0.0, MARGIN_CAP), 0.0)


def limit_margins(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """Per moving joint, how far it can move before a limit stops it.

    A 1-DoF joint's margin is its distance to the nearer end of its range. A ball joint's is
    read in its limit's own terms, as the limit's ranges are set: for Euler ranges the
    smallest distance of a limited angle to an end of its range; for swing-twist (Blender's
    IK limits) and cone-twist limits the smaller of the twist's distance to an end of its
    range and the swing vector's distance to the edge of its ellipse (to about 0.007 rad).
    Locked axes do not count. Unlimited joints, and ranges of a full turn or more, get
    :data:`MARGIN_CAP`; a joint outside its limit gets 0.

    Args:
        skeleton: The skeleton whose limits apply.
        q: (..., dof) configurations [rad or m].

    Returns:
        (..., J) margins [rad or m] in [0, MARGIN_CAP], J the joints owning variables, in ``q`` order.
    """
    q = np.asarray(q, dtype=float)
    batch = q.shape[:-1]
    flat = q.reshape(-1, skeleton.dof)
    out = []
    for i, joint in enumerate(skeleton.joints):
        if not joint.dof:
            continue
        s = int(skeleton.q_index[i])
        if joint.kind is JointKind.BALL:
            if joint.limit is None:
                out.append(np.full(len(flat), MARGIN_CAP))
            else:
                out.append(_ball_margin(joint.limit, rotvec_to_matrix(flat[:, s : s + 3])))
            continue
        lo, hi = joint.lower, joint.upper
        if not hi - lo < 2 * np.pi and joint.kind is not JointKind.PRISMATIC:
            out.append(np.full(len(flat), MARGIN_CAP))
            continue
        v = flat[:, s]
        with np.errstate(invalid="ignore"):
            m = np.minimum(v - lo, hi - v)
        out.append(np.clip(np.nan_to_num(m, nan=MARGIN_CAP, posinf=MARGIN_CAP), 0.0, MARGIN_CAP))
    margins = np.stack(out, axis=-1) if out else np.zeros((len(flat), 0))
    return margins.reshape(*batch, margins.shape[-1])


def limit_margin(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """(...,) smallest margin of any joint of ``q`` (..., dof) from its limits [rad or m], see :func:`limit_margins`."""
    return np.min(limit_margins(skeleton, q), axis=-1, initial=MARGIN_CAP)


def _unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 1e-12, n, 1.0), n[..., 0]


def _bend_directions(skeleton: Skeleton, q: np.ndarray, root: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """(..., 3) where the chain's middle lies off the root-to-target line (not normalised; 0 if on it)."""
    points = forward_kinematics(skeleton, q)[..., 1:, :3, 3]  # the joints after the root
    if points.shape[-2] == 0:
        return np.zeros((*q.shape[:-1], 3))
    middle = points.mean(axis=-2) - root
    return middle - axis * np.sum(middle * axis, axis=-1, keepdims=True)


def swivel_angles(
    skeleton: Skeleton, q: np.ndarray, target: np.ndarray, reference: np.ndarray | None = None
) -> np.ndarray:
    """The turn of each pose's bend about the line from the chain's root to the target.

    The bend is where the joints after the root lie, on average, off that line (an elbow,
    for an arm). The angle is measured right-handed about the root-to-target direction from
    ``reference``'s direction off the line (a pole, say); 0 for a pose whose bend lies on the line.

    Args:
        skeleton: The chain.
        q: (..., dof) configurations [rad or m].
        target: (3,) target position in the chain's base frame [m].
        reference: (3,) point giving the zero direction; None (or a point on the line) uses
            the base frame's X axis (or Y if X lies near the line).

    Returns:
        (...,) angles [rad] in (-pi, pi].
    """
    root = chain_root(skeleton)
    axis, _ = _unit(np.asarray(target, dtype=float) - root)
    fallback = np.eye(3)[0] if abs(axis[0]) < 0.9 else np.eye(3)[1]
    ref = fallback if reference is None else np.asarray(reference, dtype=float) - root
    ref = ref - axis * float(ref @ axis)
    if not np.linalg.norm(ref) > 1e-9:  # a reference on the line gives no direction
        ref = fallback - axis * float(fallback @ axis)
    bend = _bend_directions(skeleton, np.asarray(q, dtype=float), root, axis)
    ref_u, ref_n = _unit(ref)
    bend_u, bend_n = _unit(bend)
    angle = np.arctan2(np.sum(np.cross(ref_u, bend_u) * axis, axis=-1), np.sum(ref_u * bend_u, axis=-1))
    return np.where((bend_n > 1e-9) & (ref_n > 1e-9), angle, 0.0)


def _swivelled(skeleton: Skeleton, q: np.ndarray, axis: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """(A, dof) ``q`` turned by ``angles`` (A,) about ``axis`` through the root; empty unless the root is a ball."""
    root = skeleton.joints[0]
    if root.kind is not JointKind.BALL or root.parent >= 0 or not root.dof or len(angles) == 0:
        return np.zeros((0, skeleton.dof))
    O = root.origin[:3, :3]
    turn = axis_angle_to_matrix(np.broadcast_to(axis, (len(angles), 3)), angles)  # (A, 3, 3) in the base frame
    M = O.T @ turn @ O @ rotvec_to_matrix(q[:3])
    out = np.repeat(q[None], len(angles), axis=0)
    out[:, :3] = matrix_to_rotvec(M)
    return out


def _flips(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """(J + 1, dof) ``q`` with one moving joint's bend reversed in each row, then with all of them reversed."""
    rows = []
    for i, joint in enumerate(skeleton.joints):
        if joint.dof:
            s = int(skeleton.q_index[i])
            flipped = q.copy()
            flipped[s : s + joint.dof] *= -1.0
            rows.append(flipped)
    rows.append(-q)
    return np.array(rows)


def _starts(
    skeleton: Skeleton, current: np.ndarray, target_pos: np.ndarray, pole: np.ndarray | None,
    random_starts: int, rng: np.random.Generator,
) -> np.ndarray:
    """(S, dof) starts, projected onto the limits.

    The current pose, its turns about the root-to-target line (and toward the pole), its bend
    flips (also turned half a turn), then samples of the limit ranges.
    """
    root = chain_root(skeleton)
    axis, length = _unit(target_pos - root)
    parts = [current[None]]
    if length > 1e-12:
        angles = 2.0 * np.pi * np.arange(1, _SWIVELS) / _SWIVELS
        if pole is not None:
            angles = np.append(angles, -swivel_angles(skeleton, current, target_pos, pole))
        parts.append(_swivelled(skeleton, current, axis, angles))
    flips = _flips(skeleton, current)
    parts.append(flips)
    if length > 1e-12:
        parts += [_swivelled(skeleton, f, axis, np.array([np.pi])) for f in flips]
    parts.append(random_configurations(skeleton, random_starts, rng))
    return project_configuration(skeleton, np.concatenate(parts))


def _spread(skeleton: Skeleton, q: np.ndarray, kept: list[int], count: int, penalty: np.ndarray) -> list[int]:
    """At most ``count`` of ``kept`` (best first), spread apart.

    The first, then each time the one farthest from those taken, less its limit ``penalty``
    (per row of ``q``).
    """
    if len(kept) <= count:
        return kept
    pool = q[kept]
    cost = penalty[kept]
    taken = [0]
    nearest = joint_steps(skeleton, pool[0], pool)
    while len(taken) < count:
        value = np.where(nearest > 0, nearest - cost, -np.inf)
        k = int(np.argmax(value))  # ties go to the better-ranked
        taken.append(k)
        nearest = np.minimum(nearest, joint_steps(skeleton, pool[k], pool))
    return [kept[k] for k in taken]


def alternative_poses(
    solver: Solver,
    target: np.ndarray,
    current: np.ndarray,
    pole: np.ndarray | None = None,
    *,
    count: int = 8,
    random_starts: int = 32,
    separation: float = 0.3,
    comfort: float = 0.25,
    limit_weight: float = 1.0,
    rng_seed: int = 0,
) -> AlternativePoses:
    """Distinct poses of a chain that all reach ``target``, ranked by distance from ``current`` and limit margin.

    Starts: ``current``; ``current`` turned about the line from the chain's root to the
    target (seven turns of 45 degrees, and one toward ``pole``), when the root is a ball
    joint; each joint's bend reversed (its variables negated), one at a time and all at once,
    also turned half a turn; ``random_starts`` samples of the limit ranges. Every start is
    projected onto the limits and solved in one batch; the converged answers inside the
    limits are ranked by

        ``score = distance + limit_weight * max(0, comfort - margin)``

    (``distance`` the largest joint change from ``current``, ``margin`` the smallest joint
    margin from its limits: a pose loses score only as it comes within ``comfort`` of a
    limit). In score order, an answer within ``separation`` of a better one is dropped (by
    the largest joint change, :func:`~ik_core.model.distance.joint_steps`); of those left, at
    most ``count`` are kept, spread over the self-motion: the best, then each time the one
    farthest from those kept less its limit penalty (the nearest of a chain's continuum of
    poses would crowd out the other ways of reaching); they are returned by score. With the defaults
    (``limit_weight * comfort`` below ``separation``) a ``current`` that already reaches the
    target comes first: any other kept pose is farther from it than the largest penalty.

    Use a solver that stays near its start: DLS with ``restarts=0`` and ``null_space_gain=0``
    (restarts and the pull toward the preferred pose would merge the starts' answers).

    Args:
        solver: A solver for the chain (one effector), tolerances in base-frame units.
        target: (3,) position or (4, 4) pose in the chain's base frame, as ``solver`` takes.
        current: (dof,) the chain's current configuration [rad or m].
        pole: (3,) pole position in the base frame [m], or None: one start turns the bend
            toward it, and swivel angles are measured from it.
        count: Most poses returned (>= 1).
        random_starts: Samples of the limit ranges added to the starts (>= 0).
        separation: Poses closer than this in every joint are one pose [rad or m] (> 0).
        comfort: Margin from the limits below which a pose's score grows [rad or m] (>= 0).
        limit_weight: Score per unit of margin missing below ``comfort`` (>= 0).
        rng_seed: Seed of the limit-range samples; equal inputs give equal results.

    Returns:
        The poses, best score first; none, with a reason and a best effort, when the target
        lies beyond reach or no start converged.

    Raises:
        InvalidInputError: A solver with several effectors, a ``current`` or ``pole`` of the
            wrong shape or not finite, an option out of range, or a bad target (as the
            solver raises it).
    """
    skeleton = solver.skeleton
    if len(solver.effector_ids) != 1:
        raise InvalidInputError(f"alternative poses need a solver with one effector, got {len(solver.effector_ids)}")
    if count < 1 or random_starts < 0:
        raise InvalidInputError(f"count must be >= 1 and random_starts >= 0, got {count} and {random_starts}")
    if not (separation > 0 and comfort >= 0 and limit_weight >= 0):
        raise InvalidInputError(
            f"separation must be > 0, comfort and limit_weight >= 0; got {separation}, {comfort}, {limit_weight}")
    current = np.asarray(current, dtype=float)
    if current.shape != (skeleton.dof,):
        raise InvalidInputError(f"current must have shape ({skeleton.dof},), got {current.shape}")
    require_finite("current", current)
    if pole is not None:
        pole = np.asarray(pole, dtype=float)
        if pole.shape != (3,):
            raise InvalidInputError(f"pole must be a (3,) position, got shape {pole.shape}")
        require_finite("pole", pole)
    target = np.asarray(target, dtype=float)
    require_finite("target", target)
    target_pos = target[:3, 3] if target.shape == (4, 4) else target
    if target_pos.shape != (3,):
        raise InvalidInputError(f"target must be a (3,) position or a (4, 4) pose, got shape {target.shape}")
    starts = _starts(skeleton, project_configuration(skeleton, current), target_pos, pole, random_starts,
                     np.random.default_rng(rng_seed))
    result = solver.solve(np.broadcast_to(target, (len(starts), *target.shape)), starts)
    inside = limit_violation(skeleton, result.q) <= _LIMIT_TOL
    ok = np.flatnonzero(result.converged & inside)
    if not len(ok):
        misses = result.position_error / solver.tolerance + result.rotation_error / solver.rotation_tolerance
        best = int(np.argmin(np.where(inside, misses, np.inf))) if inside.any() else 0
        if solver.reach_excess(target) > solver.tolerance:
            reason = str(result.reason[best])
        else:
            reason = (f"none of {len(starts)} starts reached the target inside the limits: the nearest leaves "
                      f"{result.position_error[best]:.3g} m (tolerance {solver.tolerance:g} m)")
            if solver.mode != "position":
                reason += f" and {result.rotation_error[best]:.3g} rad (tolerance {solver.rotation_tolerance:g} rad)"
        empty = np.zeros(0)
        return AlternativePoses(np.zeros((0, skeleton.dof)), empty, empty, empty, empty, empty, empty,
                                len(starts), reason, project_configuration(skeleton, result.q[best]))
    q = result.q[ok]
    distance = joint_steps(skeleton, current, q)
    margin = limit_margin(skeleton, q)
    penalty = limit_weight * np.maximum(0.0, comfort - margin)
    score = distance + penalty
    order = np.lexsort((distance, score))
    kept = first_distinct(q, order, separation, lambda a, b: joint_steps(skeleton, a, b))
    kept = _spread(skeleton, q, kept, count, penalty)
    kept = sorted(kept, key=lambda k: (score[k], distance[k]))
    reference = pole
    if reference is None:
        root = chain_root(skeleton)
        axis, _ = _unit(target_pos - root)
        reference = root + _bend_directions(skeleton, current, root, axis)
    swivel = swivel_angles(skeleton, q[kept], target_pos, reference)
    reason = (f"found {len(kept)} distinct pose(s) from {len(starts)} starts ({len(ok)} converged inside the "
              f"limits), at least {separation:g} apart")
    return AlternativePoses(q[kept], result.position_error[ok][kept], result.rotation_error[ok][kept],
                            distance[kept], margin[kept], score[kept], swivel, len(starts), reason, q[kept[0]])
