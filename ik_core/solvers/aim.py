# SPDX-License-Identifier: GPL-3.0-or-later
"""Aim chains: turn a chain so an axis of its last joint points at a target, rotation spread along the chain.

An aim chain (a head and neck that look, a spine that turns toward something, a turret) does not
reach a point: one axis of its aiming joint's frame, drawn from an origin on that joint, must
pass through the target. Optionally a second axis of that frame turns as close as it can to an
up direction (the twist about the aim axis, as Blender's Locked Track or Maya's aim up vector).

The solve is a weighted cyclic descent over the chain's joints. Each step measures the world
rotation ``D`` still needed (the smallest turn of the aim axis onto the target direction,
followed by the twist about it that brings the up axis to the up direction) and lets one joint
take a share of it: in a weighted pass the joints from the root to the tip take
``w_k / sum(w_j, j >= k)`` of what remains, so with no limit in the way the joints share the
turn by their weights and the tip takes the rest; every step is projected onto the joint's
limits, and the next step measures what remains, so a share a limit refused passes on. When a
weighted pass stops making progress (a tip stopped by its limit with spread 0, or a
compromise between aim and up), greedy passes from the tip to the root let each joint take all
it can, and last greedy passes on the aim alone, which keep the aim first when limits make the
aim and the up disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, require_finite
from ..limits import project_configuration
from ..model.kinematics import forward_kinematics
from ..model.rotation_kernels import matrix_to_rotvec_unchecked, rotvec_to_matrix_unchecked, unit_and_norm
from ..model.skeleton import JointKind, Skeleton
from .ccd import minimal_rotation

# Aim origins closer than this [m] to their target have no direction to aim along.
ORIGIN_EPS = 1e-9
# An up direction within this sine of the aim direction leaves the twist undefined (up ignored).
UP_PARALLEL_SIN = 1e-6
# Hinges weigh the up pair this much against the aim pair: the aim comes first.
_HINGE_UP_WEIGHT = 0.1
# A pass that leaves more than this fraction of the error moves the frame to the next stage
# (joints that turn about different axes, a turret's yaw and pitch, each take all they can there).
_SLOW = 0.4
# Passes in which no variable moves more than this [rad] have stalled.
_STALL = 1e-12
# The last stage stops once a pass gains less than this fraction of the tolerance.
_CREEP = 0.01
_STAGES = ("weighted", "greedy", "aim only")


@dataclass(frozen=True)
class AimResult:
    """What an aim solve returns for every target of a batch.

    Attributes:
        q: (..., dof) configurations, always finite and inside every limit.
        converged: (...,) True where the aim axis points at the target within the tolerance.
        aim_error: (...,) angle [rad] between the aim axis and the direction to the target.
        up_error: (...,) angle [rad] between the up axis and the up direction, both seen across
            the aim axis; 0 without an up axis or where the up direction is along the aim.
        iterations: (...,) passes over the chain used.
        reason: (...,) object array of strings ("converged", "limits stop the aim 12.3 deg short", ...).
        limit_hits: (...,) number of joints a limit stopped on the last pass.
    """

    q: np.ndarray
    converged: np.ndarray
    aim_error: np.ndarray
    up_error: np.ndarray
    iterations: np.ndarray
    reason: np.ndarray
    limit_hits: np.ndarray

    def __getitem__(self, index: object) -> AimResult:
        """The result for part of the batch (numpy indexing on the batch axes)."""
        return AimResult(*(getattr(self, f)[index] for f in self.__dataclass_fields__))


def spread_weights(n: int, spread: float) -> np.ndarray:
    """(n,) weights of the joints of a chain, root first, for a spread in [0, 1].

    Args:
        n: Moving joints in the chain (>= 1).
        spread: 0 puts all the weight on the last joint (the tip turns alone, as far as its limits
            let it); 1 weighs every joint equally; in between, a blend of the two.

    Returns:
        (n,) non-negative weights summing to 1.

    Raises:
        InvalidInputError: ``spread`` outside [0, 1] or ``n`` < 1.
    """
    if n < 1:
        raise InvalidInputError(f"an aim chain needs at least one moving joint, got {n}")
    if not (np.isfinite(spread) and 0.0 <= spread <= 1.0):
        raise InvalidInputError(f"spread must be in [0, 1], got {spread!r}")
    w = np.full(n, spread / n)
    w[-1] += 1.0 - spread
    return w


def _angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(...,) angles [rad] between vectors, by atan2 (exact near 0 and pi)."""
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.einsum("...i,...i->...", a, b))


class AimSolver:
    """Points an axis of a chain's last joint at targets, batched over frames.

    Args:
        skeleton: The chain. Its moving joints on the path from the root to ``joint`` turn;
            prismatic joints keep their values (an aim does not slide).
        joint: Name or index of the aiming joint; ``None`` means the last joint.
        aim_axis: (3,) axis in the aiming joint's frame that must point at the target (any
            length; normalised).
        up_axis: (3,) axis in the aiming joint's frame that turns toward the up direction, or
            ``None`` for no up (the twist about the aim axis is then left to the smallest turns).
            Its part across ``aim_axis`` is used.
        origin: (3,) point in the aiming joint's frame the aim axis is drawn from [m]; the
            joint's origin (a bone's head) by default.
        spread: How the turn is shared along the chain, in [0, 1] (see :func:`spread_weights`).
        weights: Per moving joint on the path, root first, non-negative weights (normalised)
            instead of ``spread``; ``None`` uses ``spread``.
        tolerance: Largest aim angle [rad] that counts as converged (> 0).
        up_tolerance: Up angle [rad] below which the up needs no more work (> 0).
        max_iterations: Passes over the chain per target (>= 1).

    Raises:
        InvalidInputError: A zero or non-finite axis, an up axis along the aim axis, a chain
            without a rotating joint, bad weights or tolerances.
    """

    name = "aim"

    def __init__(
        self,
        skeleton: Skeleton,
        joint: str | int | None = None,
        *,
        aim_axis: Sequence[float] = (0.0, 1.0, 0.0),
        up_axis: Sequence[float] | None = None,
        origin: Sequence[float] = (0.0, 0.0, 0.0),
        spread: float = 0.5,
        weights: Sequence[float] | None = None,
        tolerance: float = 1e-4,
        up_tolerance: float = 1e-3,
        max_iterations: int = 100,
    ) -> None:
        self.skeleton = skeleton
        self.joint = len(skeleton.joints) - 1 if joint is None else skeleton.joint_index(joint)
        aim = np.asarray(aim_axis, dtype=float)
        if aim.shape != (3,) or not np.all(np.isfinite(aim)) or not np.linalg.norm(aim) > 0:
            raise InvalidInputError(f"aim_axis must be a finite non-zero 3-vector, got {aim_axis!r}")
        self.aim_axis = aim / np.linalg.norm(aim)
        self.up_axis = None
        if up_axis is not None:
            up = np.asarray(up_axis, dtype=float)
            if up.shape != (3,) or not np.all(np.isfinite(up)):
                raise InvalidInputError(f"up_axis must be a finite 3-vector or None, got {up_axis!r}")
            across = up - (up @ self.aim_axis) * self.aim_axis
            if not np.linalg.norm(across) > 1e-6 * max(np.linalg.norm(up), 1e-300):
                raise InvalidInputError(
                    f"up_axis {up_axis!r} lies along aim_axis {aim_axis!r}: it must point across it (e.g. +Z for +Y)")
            self.up_axis = across / np.linalg.norm(across)
        org = np.asarray(origin, dtype=float)
        if org.shape != (3,) or not np.all(np.isfinite(org)):
            raise InvalidInputError(f"origin must be a finite 3-vector [m], got {origin!r}")
        self.origin = org
        if not (tolerance > 0 and up_tolerance > 0):
            raise InvalidInputError(f"tolerance and up_tolerance must be > 0 rad, got {tolerance!r}, {up_tolerance!r}")
        if int(max_iterations) < 1:
            raise InvalidInputError(f"max_iterations must be >= 1, got {max_iterations!r}")
        self.tolerance = float(tolerance)
        self.rotation_tolerance = self.tolerance  # the name bake reports read for an angular tolerance
        self.up_tolerance = float(up_tolerance)
        self.max_iterations = int(max_iterations)
        self.chain = tuple(
            i for i in skeleton.ancestors(self.joint)
            if skeleton.joints[i].dof and skeleton.joints[i].kind is not JointKind.PRISMATIC
        )
        if not self.chain:
            raise InvalidInputError(
                f"skeleton {skeleton.name!r} has no rotating joint above "
                f"{skeleton.joints[self.joint].name!r} to aim with")
        if weights is None:
            w = spread_weights(len(self.chain), spread)
        else:
            w = np.asarray(weights, dtype=float)
            if w.shape != (len(self.chain),) or not np.all(np.isfinite(w)) or (w < 0).any() or not w.sum() > 0:
                names = ", ".join(skeleton.joints[i].name for i in self.chain)
                raise InvalidInputError(
                    f"weights must hold {len(self.chain)} non-negative values, not all zero (one per joint: "
                    f"{names}), got {weights!r}")
            w = w / w.sum()
        self.weights = w
        self.spread = float(spread)
        # Share of the remaining turn each joint takes in a weighted pass, root to tip.
        suffix = np.cumsum(w[::-1])[::-1]
        self._shares = np.where(suffix > 0, w / np.where(suffix > 0, suffix, 1.0), 0.0)

    # --- geometry --------------------------------------------------------------------------
    def aim_frame(self, q: np.ndarray, frames: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """World aim origin (..., 3), aim axis (..., 3) and up axis (..., 3) (zeros without one).

        Args:
            q: (..., dof) configurations.
            frames: Optional (..., joints, 4, 4) forward kinematics of ``q``.
        """
        if frames is None:
            frames = forward_kinematics(self.skeleton, q)
        T = frames[..., self.joint, :, :]
        R = T[..., :3, :3]
        o = T[..., :3, 3] + R @ self.origin
        a = R @ self.aim_axis
        u = R @ self.up_axis if self.up_axis is not None else np.zeros_like(a)
        return o, a, u

    def errors(
        self, q: np.ndarray, targets: np.ndarray, up: np.ndarray | None = None, up_points: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(...,) aim angle [rad] and up angle [rad] of configurations against targets.

        Args:
            q: (..., dof) configurations.
            targets: (..., 3) target positions [m], in the skeleton's root frame.
            up: Optional (..., 3) up directions; see :meth:`solve`.
            up_points: Optional (..., 3) points the up axis turns toward [m].

        Returns:
            The aim angle in [0, pi] (0 where the target sits on the origin, which has no
            direction) and the up angle in [0, pi] (0 without an up axis or where it is undefined).
        """
        o, a, u = self.aim_frame(np.asarray(q, dtype=float))
        d, dist = unit_and_norm(np.asarray(targets, dtype=float) - o)
        aim = np.where(dist > ORIGIN_EPS, _angle(a, d), 0.0)
        return aim, self._up_error(o, a, u, up, up_points)

    def _up_direction(self, o: np.ndarray, up: np.ndarray | None, up_points: np.ndarray | None) -> np.ndarray | None:
        if self.up_axis is None:
            return None
        if up_points is not None:
            return unit_and_norm(up_points - o)[0]
        return None if up is None else unit_and_norm(np.broadcast_to(up, o.shape))[0]

    def _up_error(self, o, a, u, up, up_points) -> np.ndarray:
        v = self._up_direction(o, up, up_points)
        if v is None:
            return np.zeros(a.shape[:-1])
        across, n = unit_and_norm(v - np.einsum("...i,...i->...", v, a)[..., None] * a)
        return np.where(n > UP_PARALLEL_SIN, _angle(u, across), 0.0)

    def _turn(self, frames, t, up, up_points, use_up) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World turn still needed (n, 3) as a rotation vector, with the aim axis (n, 3) and up axis (n, 3)."""
        o, a, u = self.aim_frame(None, frames)
        d, dist = unit_and_norm(t - o)
        rv = minimal_rotation(a, d)
        rv[dist <= ORIGIN_EPS] = 0.0
        v = self._up_direction(o, up, up_points) if use_up else None
        if v is None:
            return rv, a, u
        R_aim = rotvec_to_matrix_unchecked(rv)
        u1 = np.einsum("nij,nj->ni", R_aim, u)  # the up axis once the aim is met: across d
        across, n = unit_and_norm(v - np.einsum("ni,ni->n", v, d)[:, None] * d)
        phi = np.arctan2(np.einsum("ni,ni->n", np.cross(u1, across), d), np.einsum("ni,ni->n", u1, across))
        phi = np.where((n > UP_PARALLEL_SIN) & (dist > ORIGIN_EPS), phi, 0.0)
        D = rotvec_to_matrix_unchecked(phi[:, None] * d) @ R_aim
        return matrix_to_rotvec_unchecked(D), a, u

    def blend(self, q: np.ndarray, influence: np.ndarray) -> np.ndarray:
        """Poses part of the way from the rest pose to ``q``, as a constraint's influence blends.

        Each turning joint of the chain is slerped from its rest rotation toward its rotation in
        ``q`` (a ball joint's rotation vector, a hinge's angle, scaled by the influence), then the
        pose is projected onto the limits: with influence 1 the aim, with 0 the rest pose, in
        between a look part of the way, every joint turning its share. Other variables keep
        their values in ``q``.

        Args:
            q: (..., dof) configurations, e.g. the ``q`` of :meth:`solve` started from rest.
            influence: (...,) or scalar influence in [0, 1] (clamped).

        Returns:
            (..., dof) blended configurations inside the limits.

        Raises:
            InvalidInputError: Shapes that do not broadcast, or values that are not finite.
        """
        q = np.array(q, dtype=float)
        w = np.asarray(influence, dtype=float)
        require_finite("q", q)
        require_finite("influence", w)
        try:
            w = np.clip(np.broadcast_to(w, q.shape[:-1]), 0.0, 1.0)[..., None]
        except ValueError:
            raise InvalidInputError(f"influence of shape {w.shape} does not broadcast to {q.shape[:-1]}") from None
        for i in self.chain:
            s = self.skeleton.q_index[i]
            dof = self.skeleton.joints[i].dof
            q[..., s : s + dof] *= w
        return project_configuration(self.skeleton, q)

    # --- the iterations --------------------------------------------------------------------
    def _step(self, q, k, share, t, up, up_points, use_up) -> tuple[np.ndarray, np.ndarray]:
        """Joint ``self.chain[k]`` takes ``share`` (n,) of the turn still needed; returns (q, limit stopped it)."""
        skel = self.skeleton
        i = self.chain[k]
        joint = skel.joints[i]
        s = skel.q_index[i]
        frames = forward_kinematics(skel, q)
        rv, a, u = self._turn(frames, t, up, up_points, use_up)
        Ri = frames[:, i, :3, :3]
        q_new = q.copy()
        if joint.kind is JointKind.BALL:
            local = np.einsum("nji,nj->ni", Ri, share[:, None] * rv)  # Ri^T delta: world pre-turn in the joint frame
            q_new[:, s : s + 3] = matrix_to_rotvec_unchecked(
                rotvec_to_matrix_unchecked(q[:, s : s + 3]) @ rotvec_to_matrix_unchecked(local))
        else:
            # The best turn about the hinge of the aim pair (and, lighter, the up pair), as CCD takes it.
            z = Ri @ joint.axis
            D = rotvec_to_matrix_unchecked(rv)
            A = [a]
            B = [np.einsum("nij,nj->ni", D, a)]
            w = [1.0]
            if use_up and self.up_axis is not None:
                A.append(u)
                B.append(np.einsum("nij,nj->ni", D, u))
                w.append(_HINGE_UP_WEIGHT)
            num = sum(wk * np.einsum("ni,ni->n", np.cross(Ak, Bk), z) for wk, Ak, Bk in zip(w, A, B))
            den = sum(wk * (np.einsum("ni,ni->n", Ak, Bk) - np.einsum("ni,ni->n", Ak, z) * np.einsum("ni,ni->n", Bk, z))
                      for wk, Ak, Bk in zip(w, A, B))
            q_new[:, s] += share * np.arctan2(num, den)
        wanted = q_new[:, s : s + joint.dof].copy()
        q_new = project_configuration(skel, q_new)
        stopped = np.max(np.abs(q_new[:, s : s + joint.dof] - wanted), axis=-1) > 1e-9
        return q_new, stopped

    def _pass(self, q, stage, t, up, up_points) -> tuple[np.ndarray, np.ndarray]:
        """One pass over the chain in a stage; returns (q, joints a limit stopped (n,))."""
        n = len(q)
        hits = np.zeros(n, dtype=int)
        use_up = stage != 2
        if stage == 0:
            order = [(k, np.full(n, self._shares[k])) for k in range(len(self.chain)) if self._shares[k] > 0]
        else:
            order = [(k, np.ones(n)) for k in reversed(range(len(self.chain)))]
        for k, share in order:
            q, stopped = self._step(q, k, share, t, up, up_points, use_up)
            hits += stopped
        return q, hits

    def solve(
        self,
        targets: np.ndarray,
        q0: np.ndarray | None = None,
        *,
        up: np.ndarray | None = None,
        up_points: np.ndarray | None = None,
    ) -> AimResult:
        """Aim at a batch of targets.

        Args:
            targets: (..., 3) target positions [m] in the skeleton's root frame; leading axes are
                the batch.
            q0: (..., dof) or (dof,) start; ``None`` starts from the rest pose (q = 0; the nearest
                pose inside the limits). The answer is the start turned by the smallest shared
                turn, so the same start and target always give the same pose.
            up: (..., 3) or (3,) up directions (any length) the up axis turns toward, e.g. world
                +Z in the root frame; ignored without an up axis. ``None``: no up.
            up_points: (..., 3) or (3,) points [m] the up axis turns toward instead (the
                direction from the aim origin to them); takes precedence over ``up``.

        Returns:
            An :class:`AimResult` with the batch shape of ``targets``. A target on the aim
            origin keeps the start pose and does not converge; a target the limits keep the aim
            from gets the closest aim they allow, ``converged`` False and a reason saying how
            far short it stops.

        Raises:
            InvalidInputError: Bad shapes, NaN or infinite targets, up vectors or warm start.
        """
        t = np.asarray(targets, dtype=float)
        if t.ndim < 1 or t.shape[-1] != 3:
            raise InvalidInputError(f"targets must have shape (..., 3) [m], got {t.shape}")
        require_finite("targets", t)
        batch = t.shape[:-1]
        n = int(np.prod(batch, dtype=int))
        dof = self.skeleton.dof
        q0 = np.zeros(self.skeleton.dof) if q0 is None else np.asarray(q0, dtype=float)
        require_finite("q0", q0)
        try:
            q0 = np.broadcast_to(q0, (*batch, dof))
        except ValueError:
            raise InvalidInputError(f"q0 must have shape (..., {dof}) broadcasting to {(*batch, dof)}, "
                                    f"got {q0.shape}") from None
        ups = []
        for name, value in (("up", up), ("up_points", up_points)):
            if value is None:
                ups.append(None)
                continue
            value = np.asarray(value, dtype=float)
            require_finite(name, value)
            try:
                ups.append(np.broadcast_to(value, (*batch, 3)).reshape(n, 3))
            except ValueError:
                raise InvalidInputError(f"{name} must have shape (3,) or {(*batch, 3)}, got {value.shape}") from None
        up, up_points = ups
        t = t.reshape(n, 3)
        q = project_configuration(self.skeleton, q0.reshape(n, dof).copy())
        with np.errstate(all="ignore"):
            out = self._iterate(q, t, up, up_points)
        return AimResult(*(np.asarray(v).reshape(batch + np.asarray(v).shape[1:]) for v in out))

    def _score(self, aim: np.ndarray, up_err: np.ndarray) -> np.ndarray:
        """Lower is better: the aim first, then (once the aim is met) the up."""
        return np.where(aim <= self.tolerance, up_err / np.pi, 10.0 + aim)

    def _iterate(self, q, t, up, up_points):
        n = len(q)
        use_up = self.up_axis is not None and (up is not None or up_points is not None)
        aim, up_err = self.errors(q, t, up, up_points)
        o = self.aim_frame(q)[0]
        degenerate = np.linalg.norm(t - o, axis=-1) <= ORIGIN_EPS
        best_q, best = q.copy(), self._score(aim, up_err)
        stage = np.zeros(n, dtype=int)
        hits = np.zeros(n, dtype=int)
        iterations = np.zeros(n, dtype=int)
        stalled = np.zeros(n, dtype=bool)
        done = degenerate | ((aim <= self.tolerance) & ((not use_up) | (up_err <= self.up_tolerance)))
        err = np.where(aim > self.tolerance, aim, 0.0) + (up_err if use_up else 0.0)
        while True:
            active = np.flatnonzero(~done & (iterations < self.max_iterations))
            if not active.size:
                break
            for st in range(len(_STAGES)):
                rows = active[(stage[active] == st) & (iterations[active] < self.max_iterations)]
                if not rows.size:
                    continue
                q_new, hits[rows] = self._pass(q[rows], st, t[rows], None if up is None else up[rows],
                                               None if up_points is None else up_points[rows])
                moved = np.max(np.abs(q_new - q[rows]), axis=-1, initial=0.0)
                q[rows] = q_new
                iterations[rows] += 1
                a_new, u_new = self.errors(q_new, t[rows], None if up is None else up[rows],
                                           None if up_points is None else up_points[rows])
                score = self._score(a_new, u_new)
                better = score < best[rows]
                best_q[rows[better]], best[rows[better]] = q_new[better], score[better]
                e_new = np.where(a_new > self.tolerance, a_new, 0.0) + (u_new if use_up and st < 2 else 0.0)
                met = (a_new <= self.tolerance) & ((not use_up) | (u_new <= self.up_tolerance) | (st == 2))
                slow = (moved < _STALL) | (e_new > _SLOW * err[rows]) if st < 2 else (
                    (moved < _STALL) | (e_new >= err[rows] - _CREEP * self.tolerance))
                err[rows] = e_new
                # A slow stage hands over to the next; the aim-only stage, the last, stops when it stalls.
                stalled[rows] = slow & (st == 2)
                stage[rows] = np.where(slow & (st < 2), st + 1, stage[rows])
                done[rows] = met | stalled[rows]
        q = project_configuration(self.skeleton, best_q)
        aim, up_err = self.errors(q, t, up, up_points)
        converged = (aim <= self.tolerance) & ~degenerate
        reason = np.empty(n, dtype=object)
        reason[:] = "converged"
        for r in np.flatnonzero(~converged):
            if degenerate[r]:
                reason[r] = "the target sits on the aim origin: no direction to aim along; the start pose is kept"
            elif hits[r] or stalled[r]:
                why = "limits stop" if hits[r] else "the chain cannot turn"
                reason[r] = f"{why} the aim {np.degrees(aim[r]):.1f} deg short"
            else:
                reason[r] = (f"iteration budget exhausted: the aim is {np.degrees(aim[r]):.3g} deg off after "
                             f"{iterations[r]} passes")
        return q, converged, aim, up_err, iterations, reason, hits
