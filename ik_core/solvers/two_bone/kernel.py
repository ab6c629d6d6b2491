# SPDX-License-Identifier: GPL-3.0-or-later
"""The two-bone closed form on per-limb constants, shared by one solver and a group of limbs.

Every function takes a :class:`Limb` whose fields are either one limb's constants (shapes
``(3,)``, ``(3, 3)``, ``()``) or those of n limbs stacked on a leading axis (``(n, 3)``,
``(n, 3, 3)``, ``(n,)``), one limb per row of the batch. The arithmetic is the same either
way, so a group of limbs gets the answers each limb's own solver gives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ...model.rotations import matrix_to_rotvec_unchecked, rotvec_to_matrix_unchecked

# Relative size under which a direction is treated as undefined and a fallback is used.
DEGENERATE = 1e-9
# Hinge nudge [rad] that reveals the bend direction of a straight or fully folded arm.
NUDGE = 1e-4
# Swivel angles tried per turn when the bend plane's ball rotation leaves the ball's limit,
# and bisection steps that then find the limit's edge (2 pi / 72 / 2^30: far below 1e-9 rad).
SWIVEL_SAMPLES = 72
SWIVEL_BISECTIONS = 30


class Limb(NamedTuple):
    """Constants of a ball-and-hinge limb, in the ball joint's moved frame unless stated.

    Attributes:
        pivot: (..., 3) ball joint position in the skeleton's base frame [m].
        R_pre: (..., 3, 3) rest rotation of the ball frame in the base frame.
        elbow: (..., 3) hinge position [m].
        c0: (..., 3) hinge-to-effector vector at hinge angle 0 [m].
        u_x_c0: (..., 3) ``u x c0`` for the unit hinge axis u.
        u_uc0: (..., 3) ``u (u . c0)``.
        K: (...) constant of ``|C(theta)|^2 = K + 2 M cos(theta - phi)`` [m^2].
        M: (...) amplitude of that law [m^2].
        phi: (...) phase of that law [rad].
        lower: (...) hinge lower limit [rad] (may be -inf).
        upper: (...) hinge upper limit [rad] (may be inf).
        ends: (..., 2) finite hinge limits, NaN where infinite.
        scale: (...) limb size l1 + l2 [m] (at least 1e-12).
    """

    pivot: np.ndarray
    R_pre: np.ndarray
    elbow: np.ndarray
    c0: np.ndarray
    u_x_c0: np.ndarray
    u_uc0: np.ndarray
    K: np.ndarray
    M: np.ndarray
    phi: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    ends: np.ndarray
    scale: np.ndarray


def stack_limbs(limbs: list[Limb]) -> Limb:
    """One :class:`Limb` whose fields stack ``limbs`` (each of one limb) on a leading axis."""
    return Limb(*(np.stack([getattr(limb, f) for limb in limbs]) for f in Limb._fields))


def unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Directions (..., 3) (zero where ``v`` is zero) and norms (...,)."""
    # What np.linalg.norm(v, axis=-1) computes, without its per-call overhead.
    n = np.sqrt(np.add.reduce(v * v, axis=-1))
    return v / np.where(n > 0, n, 1.0)[..., None], n


def reject(v: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Component of ``v`` perpendicular to unit ``u`` (both (..., 3))."""
    return v - np.add.reduce(v * u, axis=-1, keepdims=True) * u


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.cross`` of (..., 3) vectors, same arithmetic, without its moveaxis overhead."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def any_perpendicular(u: np.ndarray) -> np.ndarray:
    """Unit vectors perpendicular to unit ``u`` (..., 3), chosen deterministically."""
    basis = np.eye(3)[np.argmin(np.abs(u), axis=-1)]
    return unit(cross(u, basis))[0]


def pick(primary: np.ndarray, fallback: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Rows of ``primary`` (..., 3) where ``ok`` (...,), else of ``fallback``."""
    return np.where(ok[..., None], primary, fallback)


def effector_local(P: Limb, theta: np.ndarray) -> np.ndarray:
    """(n, 3) effector position in the ball's moved frame for hinge angles (n,) [rad]."""
    c, s = np.cos(theta)[..., None], np.sin(theta)[..., None]
    return P.elbow + P.c0 * c + P.u_x_c0 * s + P.u_uc0 * (1.0 - c)


def distance(P: Limb, theta: np.ndarray) -> np.ndarray:
    """(n,) pivot-to-effector distance [m] for hinge angles (n,) [rad]."""
    return np.sqrt(np.maximum(P.K + 2.0 * P.M * np.cos(theta - P.phi), 0.0))


def effector_world(P: Limb, q: np.ndarray, bq: int, hq: int, R_ball: np.ndarray | None = None) -> np.ndarray:
    """(..., 3) effector position in the base frame [m] for configurations ``q`` (..., dof).

    The forward kinematics of the limb in closed form (the same product of rest transforms
    and joint motions as :func:`~ik_core.model.kinematics.forward_kinematics`). ``R_ball``
    (..., 3, 3), when given, is the ball's rotation matrix for ``q``, already computed.
    """
    R = P.R_pre @ (rotvec_to_matrix_unchecked(q[..., bq : bq + 3]) if R_ball is None else R_ball)
    return P.pivot + (R @ effector_local(P, q[..., hq])[..., None])[..., 0]


def hinge_angle(P: Limb, D: np.ndarray, theta0: np.ndarray) -> np.ndarray:
    """(n,) hinge angle inside its range whose reach is closest to ``D``, nearest ``theta0``."""
    lo, hi = P.lower, P.upper
    flat = P.M <= 1e-15 * P.scale**2
    if np.all(flat):
        return np.clip(theta0, lo, hi)  # the hinge cannot change the reach: keep it
    n = len(D)
    M = np.where(flat, 1.0, P.M)
    x = np.clip((D * D - P.K) / (2.0 * M), -1.0, 1.0)
    a = np.arccos(x)
    base = np.stack([P.phi + a, P.phi - a], axis=-1)
    base += 2.0 * np.pi * np.round((theta0[:, None] - base) / (2.0 * np.pi))
    shifts = np.array([0.0, 2.0 * np.pi, -2.0 * np.pi])
    cand = np.empty((n, 8))
    cand[:, :6] = (base[:, :, None] + shifts).reshape(n, -1)
    cand[:, 6:] = P.ends
    # Per-limb constants against the 8 candidates.
    K, M2, phi, lo_c, hi_c, scale = (np.asarray(f)[..., None] for f in (P.K, P.M, P.phi, lo, hi, P.scale))
    inside = (cand >= lo_c - 1e-12) & (cand <= hi_c + 1e-12)
    reach = np.sqrt(np.maximum(K + 2.0 * M2 * np.cos(cand - phi), 0.0))  # distance() per candidate
    err = np.where(inside, np.abs(reach - D[:, None]), np.inf)
    best = np.min(err, axis=-1, keepdims=True)
    # Both bend directions reach exactly; the warm start decides, so poses do not flip.
    tie = err <= best + 1e-12 * scale
    score = np.where(tie, np.abs(cand - theta0[:, None]), np.inf)
    theta = np.clip(cand[np.arange(n), np.argmin(score, axis=-1)], lo, hi)
    return np.where(flat, np.clip(theta0, lo, hi), theta) if flat.any() else theta


def bend_direction(P: Limb, theta: np.ndarray, theta0: np.ndarray, e1: np.ndarray) -> np.ndarray:
    """(n, 3) unit elbow direction across the root-effector line ``e1`` (n, 3), in the ball frame."""
    e2, n = unit(reject(P.elbow, e1))  # a constant elbow broadcasts against e1
    ok = n > DEGENERATE * P.scale
    if not ok.all():
        # Straight or folded arm: the elbow side is the one a slightly bent arm would take.
        sign = np.where(theta0 >= theta, 1.0, -1.0)
        c_alt, _ = unit(effector_local(P, theta + sign * NUDGE))
        alt, m = unit(reject(np.broadcast_to(P.elbow, e1.shape), c_alt))
        alt, _ = unit(reject(alt, e1))
        good = m > DEGENERATE * NUDGE * P.scale
        e2 = pick(e2, pick(alt, any_perpendicular(e1), good), ok)
    return e2


def solve_limbs(
    P: Limb,
    positions: np.ndarray,
    q: np.ndarray,
    bq: int,
    hq: int,
    pole: np.ndarray | None = None,
    has_pole: np.ndarray | None = None,
    ball_rotation: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """The closed form for n targets; writes the answer into ``q`` and returns it.

    Args:
        P: One limb, or n limbs stacked (one per target).
        positions: (n, 3) targets in the base frame [m].
        q: (n, dof) warm starts, hinge inside its range; overwritten with the answers.
        bq: Index of the ball joint's first variable in q.
        hq: Index of the hinge variable in q.
        pole: (n, 3) pole points in the base frame [m], or None.
        has_pole: (n,) rows of ``pole`` that hold a pole (None: all of them); the others keep
            their current bend plane, as without a pole.
        ball_rotation: Maps the warm start's ball rotation vectors (n, 3) to the rotation
            matrices (n, 3, 3) of their nearest values inside the ball's limit (None: they
            already are inside); called only if a fallback needs the current orientation.

    Returns:
        ``q`` (n, dof), the ball variables not yet projected onto the ball's limit.
    """
    v0 = q[:, bq : bq + 3]
    theta0 = q[:, hq]
    to_target = positions - P.pivot
    t_hat, D = unit(to_target)

    theta = hinge_angle(P, D, theta0)
    c_loc = effector_local(P, theta)
    e1, c_len = unit(c_loc)
    e2 = bend_direction(P, theta, theta0, e1)

    # Fallbacks below need the current ball rotation; common calls never do, so skip it then.
    R0 = None

    def current_world(local: np.ndarray) -> np.ndarray:
        nonlocal R0
        if R0 is None:
            R_v0 = rotvec_to_matrix_unchecked(v0) if ball_rotation is None else ball_rotation(v0)
            R0 = P.R_pre @ R_v0  # current world rotation of the ball frame
        return np.einsum("nij,nj->ni", R0, local)

    # Aim direction; a target on the pivot keeps the effector's current direction.
    t_ok = D > DEGENERATE * P.scale
    f1 = t_hat if t_ok.all() else pick(t_hat, current_world(e1), t_ok)

    # Bend plane: through the pole, else wherever the current ball orientation puts it.
    w_ok = None
    if pole is not None:
        w, w_n = unit(reject(pole - P.pivot, f1))
        to_pole = pole - P.pivot
        p_scale = np.maximum(P.scale, np.sqrt(np.add.reduce(to_pole * to_pole, axis=-1)))
        w_ok = w_n > DEGENERATE * p_scale
        if has_pole is not None:
            w_ok &= has_pole
    if w_ok is not None and w_ok.all():
        f2 = w
    else:
        keep, keep_n = unit(reject(current_world(e2), f1))
        keep_ok = keep_n > DEGENERATE
        f2 = keep if keep_ok.all() else pick(keep, any_perpendicular(f1), keep_ok)
        if w_ok is not None:
            f2 = pick(w, f2, w_ok)

    F_loc = np.stack([e1, e2, cross(e1, e2)], axis=-1)
    F_w = np.stack([f1, f2, cross(f1, f2)], axis=-1)
    R_world = F_w @ np.swapaxes(F_loc, -1, -2)
    v = matrix_to_rotvec_unchecked(np.swapaxes(P.R_pre, -1, -2) @ R_world)
    # An effector sitting on the pivot has no direction to aim: leave the ball alone.
    c_ok = c_len > DEGENERATE * P.scale
    if not c_ok.all():
        v = pick(v, v0, c_ok)
    q[:, bq : bq + 3] = v
    q[:, hq] = theta
    return q


def swivel_into_limit(
    P: Limb,
    positions: np.ndarray,
    v: np.ndarray,
    inside: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Ball rotations turned about the pivot-to-target line, by the least angle that brings them inside the limit.

    Turning the whole limb about the line from the pivot to its target (its swivel) keeps the
    effector where it is, on the target or stretched toward it, and moves only the bend plane.
    When the plane the pole (or the warm start) asks for needs a ball rotation outside the
    ball's limit (a twist limit the pole's plane exceeds), projecting that rotation onto the
    limit would move the effector off a target the limb can reach in another plane: the
    nearest plane inside the limit keeps it there. Per row, swivel angles are tried in order
    of size (both ways alternately, ``SWIVEL_SAMPLES`` a turn), and between the first one
    inside and the last one outside the edge of the limit is found by bisection. Rows that
    are inside already, whose target sits on the pivot, or that no swivel brings inside, are
    returned unchanged (the caller's projection then gives the best effort).

    Args:
        P: One limb, or n limbs stacked (one per row).
        positions: (n, 3) targets in the base frame [m].
        v: (n, 3) ball rotation vectors [rad] from :func:`solve_limbs`.
        inside: ``inside(R, rows)``: (k,) whether local ball rotations R (k, 3, 3) are inside
            the limit of their rows' limbs, ``rows`` (k,) indices into the n (repeated when
            several rotations of one row are asked at once).

    Returns:
        (n, 3) rotation vectors [rad].
    """
    R = rotvec_to_matrix_unchecked(v)
    rows = np.flatnonzero(~inside(R, np.arange(len(v))))
    if not len(rows):
        return v
    R_pre = P.R_pre if P.R_pre.ndim == 2 else P.R_pre[rows]
    pivot = P.pivot if P.pivot.ndim == 1 else P.pivot[rows]
    axis, D = unit(positions[rows] - pivot)
    scale = P.scale if np.ndim(P.scale) == 0 else P.scale[rows]
    keep = D > DEGENERATE * scale
    rows, axis = rows[keep], axis[keep]
    if P.R_pre.ndim == 3:
        R_pre = R_pre[keep]
    if not len(rows):
        return v
    # The line in the ball's rest frame: local rotations turn about it, R' = Rot(a, psi) R.
    a = np.einsum("...ji,...j->...i", R_pre, axis)
    R_rows = R[rows]
    m = len(rows)
    step = 2.0 * np.pi / SWIVEL_SAMPLES
    k = np.arange(1, SWIVEL_SAMPLES // 2 + 1)
    psi = np.stack([k * step, -k * step], axis=-1).reshape(-1)  # by size, each way in turn
    turned = rotvec_to_matrix_unchecked(a[:, None, :] * psi[None, :, None]) @ R_rows[:, None]
    ok = inside(turned.reshape(-1, 3, 3), np.repeat(rows, len(psi))).reshape(m, len(psi))
    hit = np.flatnonzero(ok.any(axis=1))
    if not len(hit):
        return v
    # The edge lies between the first swivel inside and the one a step nearer zero (outside).
    good = psi[np.argmax(ok[hit], axis=1)]
    bad = good - np.sign(good) * step
    for _ in range(SWIVEL_BISECTIONS):
        mid = 0.5 * (good + bad)
        ok_mid = inside(rotvec_to_matrix_unchecked(a[hit] * mid[:, None]) @ R_rows[hit], rows[hit])
        good = np.where(ok_mid, mid, good)
        bad = np.where(ok_mid, bad, mid)
    out = v.copy()
    out[rows[hit]] = matrix_to_rotvec_unchecked(rotvec_to_matrix_unchecked(a[hit] * good[:, None]) @ R_rows[hit])
    return out
