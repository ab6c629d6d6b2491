# SPDX-License-Identifier: GPL-3.0-or-later
"""Closed-form two-bone IK (ball root, hinge middle) by the law of cosines, with a pole vector."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import InvalidInputError, require_finite
from ...model.kinematics import forward_kinematics, rest_transforms
from ...model.skeleton import JointKind, Skeleton
from ..base import IKResult, Solver, Targets
from ..reach import ReachBound
from .group import TwoBoneGroup
from .kernel import Limb, effector_world, solve_limbs, swivel_into_limit
from .kernel import distance as limb_distance

_STRUCTURE = (
    "a root BALL joint (3 variables) followed by one REVOLUTE or CONTINUOUS hinge (1 variable), "
    "only FIXED joints otherwise, and a single effector at or below the hinge"
)


def limb_joints(skeleton: Skeleton, effector: int = 0) -> tuple[int, int] | None:
    """The ball joint and the hinge that move an effector, if they are the two-bone solver's limb, else None.

    The limb: a skeleton of 4 variables whose effector is moved by a BALL joint then a REVOLUTE or
    CONTINUOUS hinge (neither a mimic), FIXED joints aside. A bone whose IK locks leave it one
    axis is a hinge, not a ball joint: a chain whose root is one is no limb.
    """
    path = skeleton.ancestors(skeleton.effectors[effector].joint)
    moving = [i for i in path if skeleton.joints[i].kind is not JointKind.FIXED]
    ok = (
        skeleton.dof == 4
        and len(moving) == 2
        and skeleton.joints[moving[0]].kind is JointKind.BALL
        and skeleton.joints[moving[1]].kind in (JointKind.REVOLUTE, JointKind.CONTINUOUS)
        and all(skeleton.joints[i].mimic is None for i in moving)
    )
    return (moving[0], moving[1]) if ok else None


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


class TwoBoneSolver(Solver):
    """Analytic solver for a ball-and-hinge limb (shoulder-elbow, hip-knee).

    The hinge bend comes from the law of cosines (generalised to hinge axes that are not
    perpendicular to the bones), clamped to the hinge's range; the root ball joint then points
    the effector straight at the target and swivels so that the bend plane contains the pole,
    or, where the ball's limit forbids that plane (a twist limit), the nearest plane it allows.
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
    rotation_matched = False
    # Bakes and live posing pass a chain's pole only to solvers that declare it.
    call_options = ("pole",)
    # The swivel is the pole's plane, or without a pole the start's bend plane.
    ruled_self_motion = True

    def __init__(
        self, skeleton: Skeleton, effectors: str | int | Sequence[str | int] = 0, **kwargs: object
    ) -> None:
        super().__init__(skeleton, effectors, **kwargs)  # type: ignore[arg-type]
        if len(self.effector_ids) != 1:
            raise InvalidInputError(
                f"the two-bone solver drives one effector, got {len(self.effector_ids)}; it needs {_STRUCTURE}"
            )
        eff = skeleton.effectors[self.effector_ids[0]]
        limb = limb_joints(skeleton, self.effector_ids[0])
        if limb is None:
            path = skeleton.ancestors(eff.joint)
            kinds = [skeleton.joints[i].kind.value for i in path if skeleton.joints[i].kind is not JointKind.FIXED]
            raise InvalidInputError(
                f"skeleton {skeleton.name!r} is not a two-bone limb: effector {eff.name!r} is moved by "
                f"joints of kinds {kinds or 'none'} (skeleton dof {skeleton.dof}); the two-bone solver "
                f"needs {_STRUCTURE}"
            )
        ball, hinge = limb
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
        scalars = (self._K, self._M, self._phi, self._lower, self._upper)
        self._group = None  # the one-limb TwoBoneGroup of the lean single-target path, built on first use
        # The arm's exact reach inside its hinge range (its hinge axis need not be perpendicular
        # to the bones, nor its range hold the straightest bend) is tighter than the generic
        # bound, the sum of the bone lengths. Being exact, it certifies a stretched answer
        # beyond it as the best effort, with no search (Solver.at_reach_bound).
        self.reach_bound = ReachBound(self._pivot[None], np.array([self.limited_reach]))
        self._limb = Limb(
            self._pivot, self._R_pre, self._elbow, self._c0, self._u_x_c0, self._u_uc0,
            *(np.asarray(float(x)) for x in scalars), self._ends, np.asarray(self._scale),
        )

    @property
    def max_reach(self) -> float:
        """Largest root-to-effector distance [m] any hinge angle gives (ignoring its limits)."""
        return float(np.sqrt(max(self._K + 2.0 * self._M, 0.0)))

    @property
    def limited_reach(self) -> float:
        """Largest root-to-effector distance [m] the hinge angles inside its range give."""
        # |C(theta)|^2 = K + 2 M cos(theta - phi) peaks at phi; off the range, at the nearer end.
        lo, hi = self._lower, self._upper
        peak = self._phi + 2.0 * np.pi * np.ceil((lo - self._phi) / (2.0 * np.pi)) if np.isfinite(lo) else lo
        if not np.isfinite(lo) or not np.isfinite(hi) or peak <= hi:
            return self.max_reach
        best = max(np.cos(lo - self._phi), np.cos(hi - self._phi))
        return float(np.sqrt(max(self._K + 2.0 * self._M * best, 0.0)))

    @property
    def min_reach(self) -> float:
        """Smallest root-to-effector distance [m] any hinge angle gives (ignoring its limits)."""
        return float(np.sqrt(max(self._K - 2.0 * self._M, 0.0)))

    # --- the solve -------------------------------------------------------------------------
    def solve(self, targets: np.ndarray, q0: np.ndarray | None = None, **options: object) -> IKResult:
        """Solve for a batch of targets; see :meth:`Solver.solve` (same arguments and result).

        One position target in "position" mode (the live-posing call) takes a lean path, a
        group of one limb (:class:`~ik_core.solvers.two_bone.group.TwoBoneGroup`): same
        answer, without the general template's forward kinematics and eager projections.
        """
        if self.mode == "position" and set(options) <= {"pole"}:
            t = np.asarray(targets, dtype=float)
            q = np.asarray(self.skeleton.preferred_q if q0 is None else q0, dtype=float)
            pole = options.get("pole")
            p = None if pole is None else np.asarray(pole, dtype=float)
            if (
                t.shape in ((3,), (4, 4)) and q.shape == (self.skeleton.dof,) and (p is None or p.shape == (3,))
                and np.isfinite(t).all() and np.isfinite(q).all() and (p is None or np.isfinite(p).all())
            ):
                if self._group is None:
                    self._group = TwoBoneGroup([self])
                res = self._group.solve(t[None], q[None], None if p is None else [p])
                reason = np.empty((), dtype=object)
                reason[()] = res.reason[0]
                # The template's types for a single target: numpy scalars and 0-d arrays alike.
                return IKResult(
                    res.q[0], res.converged[0], res.position_error[0], np.zeros_like(res.position_error[0, ...]),
                    res.iterations[0, ...].copy(), reason, res.limit_hits[0],
                )
        return super().solve(targets, q0, **options)

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
        positions = targets.positions.reshape(n, 3)
        q = solve_limbs(self._limb, positions, q, self._ball_q, self._hinge_q, pole)
        limit = self.skeleton.joints[self._ball].limit
        if limit is not None:
            # The bend plane nearest the pole's inside the ball's limit, rather than the pole's
            # plane projected onto the limit afterwards (which moves the effector off target).
            bq = self._ball_q
            with np.errstate(invalid="ignore"):
                q[:, bq : bq + 3] = swivel_into_limit(
                    self._limb, positions, q[:, bq : bq + 3], lambda R, _rows: limit.contains_matrix(R)
                )
        return q.reshape(*batch, -1), np.ones(batch, dtype=int)

    def errors(self, q: np.ndarray, tg: Targets) -> tuple[np.ndarray, np.ndarray]:
        """(...,) position error [m] and rotation error [rad] (see :meth:`Solver.errors`).

        Position mode evaluates the limb's closed-form forward kinematics, a few times cheaper
        than the general one.
        """
        if self.mode != "position" and tg.rotations is not None:
            return super().errors(q, tg)
        d = effector_world(self._limb, q, self._ball_q, self._hinge_q) - tg.positions[..., 0, :]
        pos_err = np.sqrt(np.add.reduce(d * d, axis=-1))
        return pos_err, np.zeros_like(pos_err)

    # --- reporting -------------------------------------------------------------------------
    def elbow_position(self, q: np.ndarray) -> np.ndarray:
        """(..., 3) world position [m] of the hinge (the elbow or knee) for configurations ``q``."""
        frames = forward_kinematics(self.skeleton, np.asarray(q, dtype=float))
        return self._pivot + frames[..., self._ball, :3, :3] @ self._elbow

    def _unreached_reason(
        self, tg: Targets, q: np.ndarray, idx: tuple[int, ...], pos_err: float, rot_err: float,
        held: list[int] | None = None,
    ) -> str:
        if pos_err <= self.tolerance:
            return super()._unreached_reason(tg, q, idx, pos_err, rot_err, held)
        far = self._out_of_reach_reason(tg, idx, pos_err)
        if far is not None:
            return far + " (arm stretched toward it)"
        D = float(np.linalg.norm(tg.positions[idx][0] - self._pivot))
        if D < self.min_reach - self.tolerance:
            return (
                f"target {D:.4g} m away, too close: closer than |l1 - l2| = {self.min_reach:.4g} m; "
                "arm folded toward it"
            )
        theta = float(q[idx][self._hinge_q])
        # The hinge is to blame only where it rests on an end of its range.
        on_end = min(abs(theta - self._lower), abs(theta - self._upper)) <= 1e-9
        if on_end and abs(limb_distance(self._limb, np.array(theta)) - D) > self.tolerance:
            return (
                f"hinge {self._hinge_name!r} range [{self._lower:.4g}, {self._upper:.4g}] rad prevents the "
                f"bend needed for a target {D:.4g} m away; best effort leaves {pos_err:.3g} m of position error"
            )
        return "ball joint limit prevents pointing at the target; " + super()._unreached_reason(
            tg, q, idx, pos_err, rot_err, held
        )
