# SPDX-License-Identifier: GPL-3.0-or-later
"""FABRIK's exact step for a limb tip: a ball joint carrying a hinge that carries the effector.

On such a sub-chain (upper arm and elbow, thigh and knee) plain FABRIK alternates between the
hinge's plane and the target; near a straight limb, or with the ball's twist pinned at its
limit (which fixes the hinge axis), that alternation converges very slowly or not at all. The
sub-chain has a closed form instead: the hinge angle follows from the root-target distance
alone, and the ball joint then points the limb at the target, leaving one free turn (the
swivel of the bend plane about the root-target line). The swivel is taken nearest to the plane
the backward pass asked for (so the pole and frame-to-frame continuity carry over), moved to
the nearest swivel the ball's limit allows when that plane needs a twist beyond its range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...limits.ball import TWO_PI
from .primitives import EPS, axis_rotation, dot, hinge_fit, rotation_about, shortest_rotation, unit
from .tree import Tree

# Swivel grid searched for a plane the ball's limit allows, per side of the wanted plane [rad].
_STEP = np.radians(5.0)
_STEPS = 36
# Bisection steps refining the allowed swivel nearest the wanted one (2^-24 of a grid step).
_BISECT = 24


@dataclass(frozen=True)
class Limb:
    """A ball body ``ball`` whose only child ``hinge`` is a leaf carrying effector ``effector`` alone.

    Attributes:
        ball: Body index of the ball joint.
        hinge: Body index of the hinge.
        effector: Effector slot carried by the hinge.
        knee: (3,) hinge joint position [m] in the ball's frame.
        rot: (3, 3) the hinge's pre-motion frame in the ball's frame.
        tip_local: (3,) effector position [m] in the hinge's frame: the tip sits at
            ``knee + rot @ R(axis, theta) @ tip_local`` in the ball's frame.
        axis: (3,) hinge axis; ``lower``, ``upper`` its range [rad].
        constants: ``(|knee|^2 + |tip|^2, c0, a, b)``: the squared root-tip distance is
            ``const + 2 (c0 + a cos(theta) + b sin(theta))``.
    """

    ball: int
    hinge: int
    effector: int
    knee: np.ndarray
    rot: np.ndarray
    tip_local: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    constants: tuple[float, float, float, float]


def find_limbs(tree: Tree) -> dict[int, Limb]:
    """Ball bodies (key) that carry a single leaf hinge carrying one effector and nothing else."""
    limbs = {}
    for k, body in enumerate(tree.bodies):
        if body.hinge or len(body.children) != 1 or body.effectors:
            continue
        c = body.children[0]
        child = tree.bodies[c]
        if not child.hinge or child.children or len(child.effectors) != 1:
            continue
        e = child.effectors[0]
        o, C, tip, a = body.points[0], child.rot, tree.eff_pos[e], child.axis
        u = C.T @ o
        along = (tip @ a) * a
        consts = (float(o @ o + tip @ tip), float(u @ along), float(u @ (tip - along)), float(u @ np.cross(a, tip)))
        limbs[k] = Limb(k, c, e, o.copy(), C.copy(), tip.copy(), a.copy(), child.lower, child.upper, consts)
    return limbs


def _hinge_angles(limb: Limb, dist: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """(2, n) hinge angles [rad] in range putting the tip ``dist`` (n,) [m] from the ball joint.

    Both roots of the distance equation (mirror bends), the one nearer ``ref`` (n,) [rad]
    first. Out of reach (too far or too near, or beyond the range) they are the in-range
    angles that come closest.
    """
    const, c0, a, b = limb.constants
    lower, upper = limb.lower, limb.upper
    k = 0.5 * (dist * dist - const) - c0
    r = np.hypot(a, b)
    if r <= EPS:
        # The hinge turns the tip about the root itself: the distance does not depend on it.
        return np.stack([ref, ref])
    alpha = np.arctan2(b, a)
    c = k / r
    beta = np.arccos(np.clip(c, -1.0, 1.0))
    roots = alpha + np.stack([beta, -beta])
    roots += TWO_PI * np.round((ref - roots) / TWO_PI)
    inside = (roots >= lower) & (roots <= upper)
    if np.all(np.abs(c) <= 1.0) and np.all(inside.any(axis=0)):
        # The common case, every distance reachable inside the range: no clamping to weigh.
        far = np.where(inside, np.abs(roots - ref), np.inf)
        first = np.argmin(far, axis=0)
        best = np.take_along_axis(roots, first[None], axis=0)[0]
        other = np.take_along_axis(roots, 1 - first[None], axis=0)[0]
        return np.stack([best, np.where(inside.all(axis=0), other, best)])
    cands = [hinge_fit(alpha + s * beta, ref, lower, upper) for s in (1.0, -1.0)]
    cands += [np.full_like(ref, x) for x in (lower, upper) if np.isfinite(x)]
    cands = np.stack(cands)
    # Distance error first (rounded so the two exact roots tie), then closeness to ref.
    err = np.round(np.abs(r * np.cos(cands - alpha) - k), 12)
    order = np.argsort(err + 1e-9 * np.abs(cands - ref) / (1.0 + np.abs(cands - ref)), axis=0, kind="stable")
    return np.take_along_axis(cands, order[:2], axis=0)


def _swivel(d: np.ndarray, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(n,) angle [rad] about unit ``d`` (n, 3) turning ``x`` towards ``w`` (0 where undefined)."""
    xp = x - dot(x, d)[:, None] * d
    wp = w - dot(w, d)[:, None] * d
    s, c = dot(np.cross(xp, wp), d), dot(xp, wp)
    return np.where(np.hypot(s, c) > EPS, np.arctan2(s, c), 0.0)


def solve_limb(
    limb: Limb,
    limit: object | None,
    goal: np.ndarray,
    knee_wanted: np.ndarray,
    theta_ref: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ball rotation and hinge angle placing the limb's tip on its goal, in closed form.

    Args:
        limb: The sub-chain.
        limit: The ball joint's limit (``contains_matrix``), or None.
        goal: (n, 3) tip goal [m] relative to the ball joint, in its pre-motion frame.
        knee_wanted: (n, 3) where the backward pass put the hinge joint [m], same frame.
        theta_ref: (n,) current hinge angles [rad], picking between mirror solutions.

    Returns:
        (n, 3, 3) ball rotations, (n,) hinge angles, and (n,) True where the ball's limit
        allows some swivel (elsewhere the rotation breaks the limit and must not be used).
    """
    dist = np.sqrt(dot(goal, goal))
    thetas = _hinge_angles(limb, dist, theta_ref)
    R, ok = _place(limb, limit, thetas[0], goal, knee_wanted)
    theta = thetas[0].copy()
    # A mirror bend may swivel where the first one cannot (a swing limit on the ball).
    retry = np.nonzero(~ok & (thetas[1] != thetas[0]))[0]
    if retry.size:
        R2, ok2 = _place(limb, limit, thetas[1][retry], goal[retry], knee_wanted[retry])
        use = retry[ok2]
        R[use], theta[use], ok[use] = R2[ok2], thetas[1][use], True
    return R, theta, ok


def _place(
    limb: Limb, limit: object | None, theta: np.ndarray, goal: np.ndarray, knee_wanted: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(n, 3, 3) ball rotations aiming the tip for hinge angles ``theta`` (n,), swivel nearest the wanted knee.

    Returns the rotations and (n,) True where they are inside the ball's limit.
    """
    n = goal.shape[0]
    hinge = axis_rotation(limb.axis, theta)
    v = limb.knee + (limb.rot @ (hinge @ limb.tip_local)[..., None])[..., 0]
    vu, _ = unit(v, limb.knee / np.linalg.norm(limb.knee))
    d, _ = unit(goal, vu)
    R0 = shortest_rotation(vu, d)
    phi = _swivel(d, (R0 @ limb.knee), knee_wanted)
    R = rotation_about(d, phi) @ R0
    ok = np.ones(n, dtype=bool)
    if limit is None:
        return R, ok
    inside = limit.contains_matrix(R)
    if np.all(inside):
        return R, ok
    # The wanted plane needs a rotation outside the limit: search the nearest allowed swivel on
    # a grid widening from the wanted one, then bisect its boundary.
    bad = np.nonzero(~inside)[0]
    offsets = _STEP * np.arange(1, _STEPS + 1)
    offsets = np.stack([offsets, -offsets], axis=1).ravel()  # +h, -h, +2h, -2h, ...
    m = bad.size
    db, R0b, pb = d[bad], R0[bad], phi[bad]
    grid = pb[:, None] + offsets[None]
    Rg = rotation_about(np.repeat(db, offsets.size, axis=0), grid.ravel()) @ np.repeat(R0b, offsets.size, axis=0)
    feas = limit.contains_matrix(Rg).reshape(m, offsets.size)
    found = feas.any(axis=1)
    first = np.argmax(feas, axis=1)
    hi = offsets[first]  # allowed
    lo = hi - np.sign(hi) * _STEP  # not allowed (the previous ring, or the wanted plane)
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        good = limit.contains_matrix(rotation_about(db, pb + mid) @ R0b)
        hi = np.where(good, mid, hi)
        lo = np.where(good, lo, mid)
    R[bad] = rotation_about(db, pb + hi) @ R0b
    ok[bad] = found
    return R, ok
