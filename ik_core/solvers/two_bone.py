# SPDX-License-Identifier: GPL-3.0-or-later
"""Closed-form two-bone IK (ball root, hinge middle) by the law of cosines, with a pole vector."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InvalidInputError, require_finite
from ..kinematics import forward_kinematics, rest_transforms
from ..rotations import _matrix_to_rotvec, _rotvec_to_matrix
from ..skeleton import JointKind, Skeleton
from .base import Solver, Targets

_STRUCTURE = (
    "a root BALL joint (3 variables) followed by one REVOLUTE or CONTINUOUS hinge (1 variable), "
    "only FIXED joints otherwise, and a single effector at or below the hinge"
)
# Relative size under which a direction is treated as undefined and a fallback is used.
_DEGENERATE = 1e-9
# Hinge nudge [rad] that reveals the bend direction of a straight or fully folded arm.
_NUDGE = 1e-4


def two_bone_angles(
    l1: np.ndarray | float, l2: np.ndarray | float, distance: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """Law-of-cosines angles of a two-bone arm reaching a point ``distance`` from its root.

    The distance is first clamped into the reachable range ``[|l1 - l2|, l1 + l2]``, so an
    unreachable distance gives the straight (or fully folded) arm.

    Args:
        l1: (...) length of the first bone [m], >= 0.
        l2: (...) length of the second bone [m], >= 0.
        distance: (...) root-to-target distance [m], >= 0; broadcast with the lengths.

    Returns:
        root_offset_angle: (...) angle [rad] in [0, pi] between the first bone and the
            root-to-target line (0 when it is undefined: a zero-length bone, or a target on
            the root reached by equal bones).
        hinge_angle: (...) bend [rad] in [0, pi] of the middle joint away from straight
            (0: straight arm, pi: second bone folded back onto the first).

    Raises:
        InvalidInputError: Non-finite or negative lengths or distances.
    """
    arrays = []
    for name, value in (("l1", l1), ("l2", l2), ("distance", distance)):
        a = np.asarray(value, dtype=float)
        require_finite(name, a)
        if np.any(a < 0):
            raise InvalidInputError(f"{name} must be >= 0 m, got min {a.min():g}")
        arrays.append(a)
    l1, l2, d = np.broadcast_arrays(*arrays)
    d = np.clip(d, np.abs(l1 - l2), l1 + l2)
    # Angles do not depend on scale; a power-of-two rescale is exact and keeps squares finite.
    _, exponent = np.frexp(np.maximum(l1, l2))
    l1, l2, d = (np.ldexp(x, -exponent) for x in (l1, l2, d))
    # Kahan's needle-safe area: 4 * area from the sides sorted a >= b >= c, so a folded or
    # straight arm gives an exact 0 instead of the sqrt(eps) noise of arccos near +-1.
    sides = np.sort(np.stack([l1, l2, d]), axis=0)
    c, b, a = sides[0], sides[1], sides[2]
    prod = (a + (b + c)) * (c - (a - b)) * (c + (a - b)) * (a + (b - c))
    area4 = np.sqrt(np.maximum(prod, 0.0))
    # The cosine terms pair the two nearly equal squares through a difference of sides, so
    # needle triangles (one tiny side) keep their small terms instead of rounding them away.
    root = np.arctan2(area4, _sum_of_squares(l1, d, l2))
    hinge = np.arctan2(area4, 0.0 - _sum_of_squares(l1, l2, d))  # 0.0 - x: a zero bone gives +0, not pi
    return root, hinge


def _sum_of_squares(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``x^2 + y^2 - z^2`` with z^2 taken from whichever of x^2, y^2 cancels it more exactly."""
    via_y = x * x + (y - z) * (y + z)
    via_x = y * y + (x - z) * (x + z)
    bound_y = x * x + np.abs(y - z) * (y + z)
    bound_x = y * y + np.abs(x - z) * (x + z)
    return np.where(bound_y <= bound_x, via_y, via_x)


def _unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Directions (..., 3) (zero where ``v`` is zero) and norms (...,)."""
    # What np.linalg.norm(v, axis=-1) computes, without its per-call overhead.
    n = np.sqrt(np.add.reduce(v * v, axis=-1))
    return v / np.where(n > 0, n, 1.0)[..., None], n


def _reject(v: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Component of ``v`` perpendicular to unit ``u`` (both (..., 3))."""
    return v - np.add.reduce(v * u, axis=-1, keepdims=True) * u


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.cross`` of (..., 3) vectors, same arithmetic, without its moveaxis overhead."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def _any_perpendicular(u: np.ndarray) -> np.ndarray:
    """Unit vectors perpendicular to unit ``u`` (..., 3), chosen deterministically."""
    basis = np.eye(3)[np.argmin(np.abs(u), axis=-1)]
    return _unit(_cross(u, basis))[0]


def _pick(primary: np.ndarray, fallback: np.ndarray, ok: np.ndarray) -> np.ndarray:
    return np.where(ok[..., None], primary, fallback)


class TwoBoneSolver(Solver):
    """Analytic solver for a ball-and-hinge limb (shoulder-elbow, hip-knee).

    The hinge bend comes from the law of cosines (generalised to hinge axes that are not
    perpendicular to the bones), clamped to the hinge's range; the root ball joint then points
    the effector straight at the target and swivels so that the bend plane contains the pole.
    Without a pole the ball keeps its current orientation as far as possible, which keeps
    the bend plane of the warm start. One evaluation, no iterations. In "aim" and "full"
    modes only the position is solved; the orientation error is reported, not reduced.

    Args:
        skeleton: A skeleton with the structure described above.
        effectors: The one effector at the end of the second bone.
        **kwargs: ``mode``, ``tolerance``, ``rotation_tolerance``, ``aim_axis``, see
            :class:`~ik_core.solvers.base.Solver`.

    Raises:
        InvalidInputError: If the skeleton or effector does not have the two-bone structure.
    """

    name = "two_bone"

    def __init__(
        self, skeleton: Skeleton, effectors: str | int | Sequence[str | int] = 0, **kwargs: object
    ) -> None:
        super().__init__(skeleton, effectors, **kwargs)  # type: ignore[arg-type]
        if len(self.effector_ids) != 1:
            raise InvalidInputError(
                f"the two-bone solver drives one effector, got {len(self.effector_ids)}; it needs {_STRUCTURE}"
            )
        eff = skeleton.effectors[self.effector_ids[0]]
        path = skeleton.ancestors(eff.joint)
        moving = [i for i in path if skeleton.joints[i].kind is not JointKind.FIXED]
        kinds = [skeleton.joints[i].kind.value for i in moving]
        ok = (
            skeleton.dof == 4
            and len(moving) == 2
            and skeleton.joints[moving[0]].kind is JointKind.BALL
            and skeleton.joints[moving[1]].kind in (JointKind.REVOLUTE, JointKind.CONTINUOUS)
            and all(skeleton.joints[i].mimic is None for i in moving)
        )
        if not ok:
            raise InvalidInputError(
                f"skeleton {skeleton.name!r} is not a two-bone limb: effector {eff.name!r} is moved by "
                f"joints of kinds {kinds or 'none'} (skeleton dof {skeleton.dof}); the two-bone solver "
                f"needs {_STRUCTURE}"
            )
        ball, hinge = moving
        self._ball = ball
        self._ball_q = int(skeleton.q_index[ball])
        self._hinge_q = int(skeleton.q_index[hinge])
        self._hinge_name = skeleton.joints[hinge].name
        self._lower = skeleton.joints[hinge].lower
        self._upper = skeleton.joints[hinge].upper
        ends = np.array([self._lower, self._upper], dtype=float)
        # Finite hinge ends are candidates too; infinite ones drop out as NaN.
        self._ends = np.where(np.isfinite(ends), ends, np.nan)
        rest = rest_transforms(skeleton)
        # Everything below lives in the ball's moved frame, where the limb's shape is constant.
        T_bh = np.linalg.inv(rest[ball]) @ rest[hinge]
        c_h = (np.linalg.inv(rest[hinge]) @ rest[eff.joint] @ eff.offset)[:3, 3]
        self._pivot = rest[ball][:3, 3].copy()
        self._R_pre = rest[ball][:3, :3].copy()
        self._elbow = T_bh[:3, 3].copy()
        self._u = T_bh[:3, :3] @ skeleton.joints[hinge].axis
        self._c0 = T_bh[:3, :3] @ c_h
        B, u, c0 = self._elbow, self._u, self._c0
        self.l1 = float(np.linalg.norm(B))
        self.l2 = float(np.linalg.norm(c_h))
        # |C(theta)|^2 = K + 2 M cos(theta - phi): the law of cosines for any hinge axis.
        self._K = float(B @ B + c0 @ c0 + 2.0 * (B @ u) * (u @ c0))
        alpha = float(B @ c0 - (B @ u) * (u @ c0))
        beta = float(B @ np.cross(u, c0))
        self._M = float(np.hypot(alpha, beta))
        # Constant terms of _effector_local (Rodrigues' formula for the hinge).
        self._u_x_c0 = np.cross(u, c0)
        self._u_uc0 = u * (u @ c0)
        self._phi = float(np.arctan2(beta, alpha))
        self._scale = max(self.l1 + self.l2, 1e-12)

    @property
    def max_reach(self) -> float:
        """Largest root-to-effector distance [m] any hinge angle gives (ignoring its limits)."""
        return float(np.sqrt(max(self._K + 2.0 * self._M, 0.0)))

    @property
    def min_reach(self) -> float:
        """Smallest root-to-effector distance [m] any hinge angle gives (ignoring its limits)."""
        return float(np.sqrt(max(self._K - 2.0 * self._M, 0.0)))

    # --- geometry --------------------------------------------------------------------------
    def _effector_local(self, theta: np.ndarray) -> np.ndarray:
        """(..., 3) effector position in the ball's moved frame for hinge angles (...,)."""
        c, s = np.cos(theta)[..., None], np.sin(theta)[..., None]
        return self._elbow + self._c0 * c + self._u_x_c0 * s + self._u_uc0 * (1.0 - c)

    def _distance(self, theta: np.ndarray) -> np.ndarray:
        return np.sqrt(np.maximum(self._K + 2.0 * self._M * np.cos(theta - self._phi), 0.0))

    def _hinge_angle(self, D: np.ndarray, theta0: np.ndarray) -> np.ndarray:
        """(n,) hinge angle inside its range whose reach is closest to ``D``, nearest ``theta0``."""
        lo, hi = self._lower, self._upper
        if self._M <= 1e-15 * self._scale**2:
            return np.clip(theta0, lo, hi)  # the hinge cannot change the reach: keep it
        x = np.clip((D * D - self._K) / (2.0 * self._M), -1.0, 1.0)
        a = np.arccos(x)
        base = np.stack([self._phi + a, self._phi - a], axis=-1)
        base += 2.0 * np.pi * np.round((theta0[:, None] - base) / (2.0 * np.pi))
        shifts = np.array([0.0, 2.0 * np.pi, -2.0 * np.pi])
        cand = np.empty((len(D), 8))
        cand[:, :6] = (base[:, :, None] + shifts).reshape(len(D), -1)
        cand[:, 6:] = self._ends
        inside = (cand >= lo - 1e-12) & (cand <= hi + 1e-12)
        err = np.where(inside, np.abs(self._distance(cand) - D[:, None]), np.inf)
        best = np.min(err, axis=-1, keepdims=True)
        # Both bend directions reach exactly; the warm start decides, so poses do not flip.
        tie = err <= best + 1e-12 * self._scale
        score = np.where(tie, np.abs(cand - theta0[:, None]), np.inf)
        theta = cand[np.arange(len(D)), np.argmin(score, axis=-1)]
        return np.clip(theta, lo, hi)

    def _bend_direction(self, theta: np.ndarray, theta0: np.ndarray, e1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unit elbow direction across the root-effector line, in the ball frame, and validity."""
        e2, n = _unit(_reject(self._elbow, e1))  # the constant elbow broadcasts against e1
        ok = n > _DEGENERATE * self._scale
        if not ok.all():
            # Straight or folded arm: the elbow side is the one a slightly bent arm would take.
            sign = np.where(theta0 >= theta, 1.0, -1.0)
            c_alt, _ = _unit(self._effector_local(theta + sign * _NUDGE))
            alt, m = _unit(_reject(np.broadcast_to(self._elbow, e1.shape), c_alt))
            alt, _ = _unit(_reject(alt, e1))
            good = m > _DEGENERATE * _NUDGE * self._scale
            e2 = _pick(e2, _pick(alt, _any_perpendicular(e1), good), ok)
        return e2, ok

    # --- the solve -------------------------------------------------------------------------
    def _solve(self, targets: Targets, q0: np.ndarray, **options: object) -> tuple[np.ndarray, np.ndarray]:
        pole = options.pop("pole", None)
        if options:
            raise InvalidInputError(
                f"unknown option(s) {', '.join(sorted(options))} for the two_bone solver; valid options: pole"
            )
        batch = targets.batch_shape
        n = int(np.prod(batch, dtype=int))
        q = q0.reshape(n, -1).copy()
        if pole is not None:
            pole = np.asarray(pole, dtype=float)
            if not np.isfinite(pole).all():
                require_finite("pole", pole)
            if pole.shape[-1:] != (3,):
                raise InvalidInputError(f"pole must have shape (..., 3) world points [m], got {pole.shape}")
            if pole.shape == (*batch, 3):
                pole = pole.reshape(n, 3)
            else:
                try:
                    pole = np.broadcast_to(pole, (*batch, 3)).reshape(n, 3)
                except ValueError:
                    raise InvalidInputError(f"pole shape {pole.shape} does not broadcast to batch {batch}") from None

        bq, hq = self._ball_q, self._hinge_q
        v0 = q[:, bq : bq + 3]
        theta0 = q[:, hq]
        to_target = targets.positions.reshape(n, 3) - self._pivot
        t_hat, D = _unit(to_target)

        theta = self._hinge_angle(D, theta0)
        c_loc = self._effector_local(theta)
        e1, c_len = _unit(c_loc)
        e2, _ = self._bend_direction(theta, theta0, e1)

        # Fallbacks below need the current ball rotation; common calls never do, so skip it then.
        R0 = None

        def current_world(local: np.ndarray) -> np.ndarray:
            nonlocal R0
            if R0 is None:
                R0 = self._R_pre @ _rotvec_to_matrix(v0)  # current world rotation of the ball frame
            return np.einsum("nij,nj->ni", R0, local)

        # Aim direction; a target on the pivot keeps the effector's current direction.
        t_ok = D > _DEGENERATE * self._scale
        f1 = t_hat if t_ok.all() else _pick(t_hat, current_world(e1), t_ok)

        # Bend plane: through the pole, else wherever the current ball orientation puts it.
        w_ok = None
        if pole is not None:
            w, w_n = _unit(_reject(pole - self._pivot, f1))
            to_pole = pole - self._pivot
            p_scale = np.maximum(self._scale, np.sqrt(np.add.reduce(to_pole * to_pole, axis=-1)))
            w_ok = w_n > _DEGENERATE * p_scale
        if w_ok is not None and w_ok.all():
            f2 = w
        else:
            keep, keep_n = _unit(_reject(current_world(e2), f1))
            keep_ok = keep_n > _DEGENERATE
            f2 = keep if keep_ok.all() else _pick(keep, _any_perpendicular(f1), keep_ok)
            if w_ok is not None:
                f2 = _pick(w, f2, w_ok)

        F_loc = np.stack([e1, e2, _cross(e1, e2)], axis=-1)
        F_w = np.stack([f1, f2, _cross(f1, f2)], axis=-1)
        R_world = F_w @ np.swapaxes(F_loc, -1, -2)
        v = _matrix_to_rotvec(self._R_pre.T @ R_world)
        # An effector sitting on the pivot has no direction to aim: leave the ball alone.
        c_ok = c_len > _DEGENERATE * self._scale
        if not c_ok.all():
            v = _pick(v, v0, c_ok)
        q[:, bq : bq + 3] = v
        q[:, hq] = theta
        return q.reshape(*batch, -1), np.ones(batch, dtype=int)

    # --- reporting -------------------------------------------------------------------------
    def elbow_position(self, q: np.ndarray) -> np.ndarray:
        """(..., 3) world position [m] of the hinge (the elbow or knee) for configurations ``q``."""
        frames = forward_kinematics(self.skeleton, np.asarray(q, dtype=float))
        return self._pivot + frames[..., self._ball, :3, :3] @ self._elbow

    def _unreached_reason(
        self, tg: Targets, q: np.ndarray, idx: tuple[int, ...], pos_err: float, rot_err: float
    ) -> str:
        if pos_err <= self.tolerance:
            return super()._unreached_reason(tg, q, idx, pos_err, rot_err)
        D = float(np.linalg.norm(tg.positions[idx][0] - self._pivot))
        if D > self.max_reach + self.tolerance:
            return f"target {D:.4g} m away, beyond the arm's reach {self.max_reach:.4g} m; arm stretched toward it"
        if D < self.min_reach - self.tolerance:
            return (
                f"target {D:.4g} m away, too close: closer than |l1 - l2| = {self.min_reach:.4g} m; "
                "arm folded toward it"
            )
        theta = float(q[idx][self._hinge_q])
        if abs(self._distance(np.array(theta)) - D) > self.tolerance:
            return (
                f"hinge {self._hinge_name!r} range [{self._lower:.4g}, {self._upper:.4g}] rad prevents the "
                f"bend needed for a target {D:.4g} m away; best effort leaves {pos_err:.3g} m of position error"
            )
        return "ball joint limit prevents pointing at the target; " + super()._unreached_reason(
            tg, q, idx, pos_err, rot_err
        )
