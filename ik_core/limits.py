# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint limits: box ranges on the skeleton, Euler and cone-twist limits for ball joints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .errors import InvalidInputError, LimitError
from .euler import _AXIS_INDICES, _euler_to_matrix, _matrix_to_euler
from .rotations import EULER_ORDERS, _matrix_to_rotvec, _rotvec_to_matrix, rotvec_to_matrix
from .skeleton import JointKind, Skeleton

__all__ = [
    "ConeTwistLimit",
    "EulerLimit",
    "circular_clamp",
    "ellipse_project",
    "limit_violation",
    "project_configuration",
]

TWO_PI = 2.0 * np.pi
# Values this far [rad] outside a limit count as inside, so projecting twice changes nothing.
FEASIBLE_TOL = 1e-9
# Below this cos(middle angle) an Euler triple is at gimbal lock: only one combination of the
# first and last angles is defined, and feasibility is decided on that combination.
_GIMBAL_COS = 1e-6
_AXES = "XYZ"
# Ellipse semi-axes below this [rad] count as zero (the ellipse is then a segment).
_THIN = 1e-12


def circular_clamp(
    angle: np.ndarray, lower: np.ndarray | float, upper: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """Move angles into a range modulo 2 pi, or onto its circularly nearer end.

    Args:
        angle: (...,) angles [rad].
        lower: Lower ends [rad], broadcast against ``angle``; ``upper - lower >= 2 pi`` means
            the range is the whole circle.
        upper: Upper ends [rad].

    Returns:
        clamped: (...,) angles equal to ``angle`` modulo 2 pi where inside the range, else the
            nearer end (measured around the circle).
        distance: (...,) angular distance [rad] from ``angle`` to the range (0 inside).
    """
    angle = np.asarray(angle, dtype=float)
    if np.ndim(lower) == 0 and np.ndim(upper) == 0:
        lo, hi = float(lower), float(upper)
        if not hi - lo < TWO_PI:
            return angle, np.zeros(angle.shape)
        r = lo + np.mod(angle - lo, TWO_PI)
        d_hi, d_lo = r - hi, lo + TWO_PI - r
        inside = d_hi <= 0.0
        return np.where(inside, r, np.where(d_hi <= d_lo, hi, lo)), np.where(inside, 0.0, np.minimum(d_hi, d_lo))
    lower, upper = np.broadcast_arrays(np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))
    free = ~(upper - lower < TWO_PI)
    # Free ranges may hold infinities; give them finite stand-ins so no NaN is ever computed.
    return _clamp_ranges(angle, np.where(free, -np.pi, lower), np.where(free, np.pi, upper), free)


def _clamp_ranges(
    angle: np.ndarray, lo: np.ndarray, hi: np.ndarray, free: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`circular_clamp` for array ranges whose free mask and finite ends are precomputed."""
    r = lo + np.mod(angle - lo, TWO_PI)
    inside = r <= hi
    d_hi = r - hi
    d_lo = lo + TWO_PI - r
    to_hi = d_hi <= d_lo
    clamped = np.where(inside, r, np.where(to_hi, hi, lo))
    distance = np.where(inside, 0.0, np.minimum(d_hi, d_lo))
    return np.where(free, angle, clamped), np.where(free, 0.0, distance)


def ellipse_project(
    x: np.ndarray, y: np.ndarray, a: float, b: float, iterations: int = 100
) -> tuple[np.ndarray, np.ndarray]:
    """Closest points of the filled ellipse ``(x/a)^2 + (y/b)^2 <= 1``.

    Points inside are returned unchanged. For points outside, Newton's method finds the root
    of Eberly's distance function; started left of the root it climbs to it monotonically, so
    it neither overshoots nor leaves the function's domain, however thin the ellipse.

    Args:
        x: (...,) first coordinates.
        y: (...,) second coordinates.
        a: Semi-axis along x (>= 0; 0, or below 1e-12, collapses the ellipse onto the y segment).
        b: Semi-axis along y (>= 0).
        iterations: Newton iteration cap.

    Returns:
        (px, py), each (...,), the closest point.
    """
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    # Semi-axes this thin are segments to rounding; treating them so keeps (x / a)^2 finite.
    a, b = (0.0 if v < _THIN else float(v) for v in (a, b))
    if a == 0.0 or b == 0.0:
        return np.clip(x, -a, a), np.clip(y, -b, b)
    px, py = x.copy(), y.copy()
    if a == b:  # a circle: radial scaling is the exact closest point
        scale = np.minimum(1.0, a / np.maximum(np.hypot(x, y), a))
        return px * scale, py * scale
    out = (x / a) ** 2 + (y / b) ** 2 > 1.0
    if not out.any():
        return px, py
    ax, ay = np.abs(x[out]), np.abs(y[out])
    a2, b2 = a * a, b * b
    # F(t) = (a x / (t + a^2))^2 + (b y / (t + b^2))^2 - 1 is convex and decreasing; each term
    # alone reaches 1 at these t, so F >= 0 there and Newton climbs monotonically to the root.
    t = np.maximum(a * ax - a2, b * ay - b2)
    scale = min(a2, b2)
    for _ in range(iterations):
        da, db = t + a2, t + b2
        ra, rb = a * ax / da, b * ay / db
        f = ra * ra + rb * rb - 1.0
        df = -2.0 * (ra * ra / da + rb * rb / db)
        step = f / df
        t = t - step
        if (np.abs(step) <= 1e-15 * (np.abs(t) + scale)).all():
            break
    px[out] = np.copysign(a2 * ax / (t + a2), x[out])
    py[out] = np.copysign(b2 * ay / (t + b2), y[out])
    return px, py


def _as_rotvec(rotvec: object) -> np.ndarray:
    v = np.asarray(rotvec, dtype=float)
    if v.ndim == 0 or v.shape[-1] != 3:
        raise InvalidInputError(f"rotvec must have shape (..., 3), got {v.shape}")
    if not np.isfinite(v).all():
        raise InvalidInputError("rotvec contains NaN or infinite values")
    return v


class _BallLimit:
    """Shared rotation-vector front end; subclasses implement ``_project(R, tol)``."""

    def _project(self, R: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def project_matrix(self, R: np.ndarray) -> np.ndarray:
        """Nearest feasible rotation matrices (see :meth:`project`).

        Args:
            R: (..., 3, 3) rotation matrices.

        Returns:
            (..., 3, 3) rotations inside the limit; feasible inputs are returned unchanged.
        """
        return self._project(np.asarray(R, dtype=float), FEASIBLE_TOL)[0]

    def project(self, rotvec: np.ndarray) -> np.ndarray:
        """Nearest feasible value of ball-joint rotation vectors (batched and idempotent).

        Args:
            rotvec: (..., 3) rotation vectors [rad].

        Returns:
            (..., 3) rotation vectors inside the limit; feasible inputs come back bit for bit.

        Raises:
            InvalidInputError: Wrong shape or non-finite entries.
        """
        v = _as_rotvec(rotvec)
        R, ok = self._project(_rotvec_to_matrix(v), FEASIBLE_TOL)
        if ok.all():
            return v.copy()
        # Only the projected rows need the logarithm (the common single feasible pose skips it).
        out = v.copy() if v.shape == R.shape[:-1] else np.array(np.broadcast_to(v, R.shape[:-1]))
        bad = ~ok
        out[bad] = _matrix_to_rotvec(R[bad])
        return out

    def contains(self, rotvec: np.ndarray, tol: float = FEASIBLE_TOL) -> np.ndarray:
        """(...,) True where rotation vectors (..., 3) [rad] are inside the limit within ``tol`` [rad]."""
        return self._project(_rotvec_to_matrix(_as_rotvec(rotvec)), float(tol))[1]

    def contains_matrix(self, R: np.ndarray, tol: float = FEASIBLE_TOL) -> np.ndarray:
        """(...,) True where rotation matrices (..., 3, 3) are inside the limit within ``tol`` [rad]."""
        return self._project(np.asarray(R, dtype=float), float(tol))[1]


@dataclass(frozen=True)
class EulerLimit(_BallLimit):
    """Per-axis Euler-angle ranges of a ball joint, with Blender's pose-bone IK semantics.

    The joint rotation ``R`` is read as Blender Euler angles in ``order`` ('XYZ' means
    ``R = Rz @ Ry @ Rx``), stored as (x, y, z) whatever the order. A locked axis has the
    range [0, 0]; an axis whose range spans 2 pi or more is free. Both Euler decompositions
    of a rotation are considered, and at gimbal lock only the coupled combination of the
    first and last angles is checked. Projection clamps each angle (of both decompositions)
    into its range and keeps the result closer to ``R``: close to, not exactly, the nearest
    feasible rotation.

    Attributes:
        lower: (3,) lower angles [rad] about X, Y, Z.
        upper: (3,) upper angles [rad] about X, Y, Z.
        locked: (3,) True for axes that may not rotate at all.
        order: Euler order, one of 'XYZ', 'XZY', 'YXZ', 'YZX', 'ZXY', 'ZYX'.

    Raises:
        LimitError: A lower angle above its upper one, a NaN, a bad shape or an unknown order.
    """

    lower: Sequence[float] = (-np.pi, -np.pi, -np.pi)
    upper: Sequence[float] = (np.pi, np.pi, np.pi)
    locked: Sequence[bool] = (False, False, False)
    order: str = "XYZ"
    _lo: np.ndarray = field(init=False, repr=False, compare=False)
    _hi: np.ndarray = field(init=False, repr=False, compare=False)
    _clamp: tuple[np.ndarray, np.ndarray, np.ndarray] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.order not in EULER_ORDERS:
            raise LimitError(f"unknown Euler order {self.order!r}; valid orders: {', '.join(EULER_ORDERS)}")
        lo = np.asarray(self.lower, dtype=float)
        hi = np.asarray(self.upper, dtype=float)
        lk = np.asarray(self.locked, dtype=bool)
        for name, arr in (("lower", lo), ("upper", hi), ("locked", lk)):
            if arr.shape != (3,):
                raise LimitError(f"EulerLimit {name} must hold 3 values (X, Y, Z), got shape {arr.shape}")
        for n in range(3):
            if np.isnan(lo[n]) or np.isnan(hi[n]) or lo[n] > hi[n]:
                raise LimitError(
                    f"EulerLimit axis {_AXES[n]}: lower {lo[n]} rad must not exceed upper {hi[n]} rad"
                )
        object.__setattr__(self, "lower", tuple(float(v) for v in lo))
        object.__setattr__(self, "upper", tuple(float(v) for v in hi))
        object.__setattr__(self, "locked", tuple(bool(v) for v in lk))
        lo_eff, hi_eff = np.where(lk, 0.0, lo), np.where(lk, 0.0, hi)
        free = ~(hi_eff - lo_eff < TWO_PI)
        lo_eff, hi_eff = np.where(free, -np.inf, lo_eff), np.where(free, np.inf, hi_eff)
        # Finite stand-ins for free axes, as circular_clamp makes them, precomputed for the hot path.
        clamp = (np.where(free, -np.pi, lo_eff), np.where(free, np.pi, hi_eff), free)
        for arr in (lo_eff, hi_eff, *clamp):
            arr.setflags(write=False)
        object.__setattr__(self, "_lo", lo_eff)
        object.__setattr__(self, "_hi", hi_eff)
        object.__setattr__(self, "_clamp", clamp)

    @classmethod
    def from_blender(
        cls,
        use_limit: Sequence[bool] = (False, False, False),
        minimum: Sequence[float] = (-np.pi, -np.pi, -np.pi),
        maximum: Sequence[float] = (np.pi, np.pi, np.pi),
        lock: Sequence[bool] = (False, False, False),
        order: str = "XYZ",
    ) -> EulerLimit:
        """Build from a pose bone's ``use_ik_limit_*``, ``ik_min_*``, ``ik_max_*``, ``lock_ik_*``.

        Args:
            use_limit: (3,) whether X, Y, Z are limited; an unlimited axis gets (-pi, pi).
            minimum: (3,) ``ik_min_x/y/z`` [rad].
            maximum: (3,) ``ik_max_x/y/z`` [rad].
            lock: (3,) ``lock_ik_x/y/z``.
            order: Euler order used to read the joint rotation.

        Returns:
            The limit.
        """
        use = np.asarray(use_limit, dtype=bool)
        lower = np.where(use, np.asarray(minimum, dtype=float), -np.pi)
        upper = np.where(use, np.asarray(maximum, dtype=float), np.pi)
        return cls(tuple(lower), tuple(upper), tuple(bool(v) for v in lock), order)

    def _project(self, R: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
        i, j, k = _AXIS_INDICES[self.order]
        parity = 1.0 if (j - i) % 3 == 1 else -1.0
        lo, hi = self._lo, self._hi
        e0 = _matrix_to_euler(R, self.order)
        c0, d0 = _clamp_ranges(e0, *self._clamp)
        ok = d0.max(axis=-1) <= tol
        # Inside by the first decomposition: the checks below could only add to ``ok``.
        if ok.all():
            return R, ok
        # The other Tait-Bryan decomposition of the same rotation.
        e1 = e0.copy()
        e1[..., i] += np.pi
        e1[..., j] = np.pi - e0[..., j]
        e1[..., k] += np.pi
        c1, d1 = _clamp_ranges(e1, *self._clamp)
        ok |= d1.max(axis=-1) <= tol
        gimbal = np.abs(np.cos(e0[..., j])) < _GIMBAL_COS
        if gimbal.any():  # the coupled check below can only change rows at gimbal lock
            # Gimbal lock: R = Rk(a_k - p s a_i) Rj(a_j), so only that combination must fit.
            s = np.where(np.sin(e0[..., j]) < 0.0, -1.0, 1.0)
            m = -parity * s
            combo = e0[..., k] + m * e0[..., i]
            free_i, free_k = np.isinf(lo[i]), np.isinf(lo[k])
            if free_i or free_k:
                combo_ok = np.ones(combo.shape, dtype=bool)
            else:
                c_lo = lo[k] + np.minimum(m * lo[i], m * hi[i])
                c_hi = hi[k] + np.maximum(m * lo[i], m * hi[i])
                combo_ok = circular_clamp(combo, c_lo, c_hi)[1] <= tol
            ok |= gimbal & (d0[..., j] <= tol) & combo_ok
        if ok.all():
            return R, ok
        bad = ~ok
        full = R if R.shape == ok.shape + (3, 3) else np.broadcast_to(R, ok.shape + (3, 3))
        Rb = full[bad]
        # Both clamped decompositions in one conversion.
        R01 = _euler_to_matrix(np.concatenate([c0[bad], c1[bad]]), self.order)
        R0, R1 = R01[: len(Rb)], R01[len(Rb) :]
        # The larger trace of R^T R_i is the smaller rotation angle between them.
        closer1 = np.einsum("nij,nij->n", Rb, R1) > np.einsum("nij,nij->n", Rb, R0)
        out = np.array(full)
        out[bad] = np.where(closer1[:, None, None], R1, R0)
        return out, ok


def _perpendicular_basis(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Images of X and Z under the shortest rotation taking Y onto unit ``t``."""
    y = np.array([0.0, 1.0, 0.0])
    c = float(t @ y)
    if c < -1.0 + 1e-12:
        return np.array([-1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
    v = np.cross(y, t)
    K = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    Q = np.eye(3) + K + K @ K / (1.0 + c)
    return Q[:, 0], Q[:, 2]


@dataclass(frozen=True)
class ConeTwistLimit(_BallLimit):
    """Elliptical swing cone plus twist range of a ball joint.

    A rotation is split as ``R = swing @ twist`` (twist about ``twist_axis`` first; the
    swing axis is perpendicular to it). The swing rotation vector, written in the basis
    (u, w) of axes perpendicular to the twist axis (X and Z for the default Y axis, which is
    along a Blender bone), must lie in the ellipse ``(s_u / swing_x)^2 + (s_w / swing_z)^2
    <= 1``; the twist angle must lie in [twist_min, twist_max]. Projection clamps the twist
    and moves the swing vector to the closest point of the ellipse in swing-vector space,
    an approximation of the geodesically nearest swing that is exact for circular cones.

    Attributes:
        swing_x: Largest swing about the u (X) axis [rad], in [0, pi].
        swing_z: Largest swing about the w (Z) axis [rad], in [0, pi].
        twist_min: Lowest twist [rad], >= -pi.
        twist_max: Highest twist [rad], <= pi.
        twist_axis: (3,) twist axis in the joint frame; u and w are the images of X and Z
            under the shortest rotation taking Y onto it.

    Raises:
        LimitError: Angles out of range, twist_min > twist_max, or a zero twist axis.
    """

    swing_x: float
    swing_z: float
    twist_min: float
    twist_max: float
    twist_axis: Sequence[float] = (0.0, 1.0, 0.0)
    _basis: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("swing_x", "swing_z"):
            v = float(getattr(self, name))
            if not 0.0 <= v <= np.pi:
                raise LimitError(f"ConeTwistLimit {name} must be in [0, pi] rad, got {v}")
            object.__setattr__(self, name, v)
        lo, hi = float(self.twist_min), float(self.twist_max)
        if not (-np.pi - 1e-12 <= lo <= hi <= np.pi + 1e-12):
            raise LimitError(
                f"ConeTwistLimit twist range [{lo}, {hi}] rad must satisfy "
                "-pi <= twist_min <= twist_max <= pi"
            )
        object.__setattr__(self, "twist_min", lo)
        object.__setattr__(self, "twist_max", hi)
        t = np.asarray(self.twist_axis, dtype=float)
        n = float(np.linalg.norm(t)) if t.shape == (3,) else 0.0
        if not (np.isfinite(n) and n > 1e-12):
            raise LimitError(
                f"ConeTwistLimit twist_axis must be a finite non-zero 3-vector, got {self.twist_axis!r}"
            )
        t = t / n
        object.__setattr__(self, "twist_axis", tuple(float(v) for v in t))
        u, w = _perpendicular_basis(t)
        # Rows (w, u, t) form a right-handed frame, so rotations keep their sense in it.
        basis = np.stack([w, u, t])
        basis.setflags(write=False)
        object.__setattr__(self, "_basis", basis)

    def swing_twist_angles(self, R: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Swing components and twist angle of joint rotations.

        Same split as :func:`ik_core.rotations.swing_twist` (``R = swing @ twist``), read
        straight from the matrix in the limit's (u, w, twist) basis, which costs a fraction of
        the quaternion route in FABRIK's inner loop.

        Args:
            R: (..., 3, 3) rotation matrices.

        Returns:
            s_u, s_w: (...,) swing rotation-vector components [rad] along u and w.
            twist: (...,) twist angle [rad] in [-pi, pi].
        """
        B = self._basis
        Rb = B @ np.asarray(R, dtype=float) @ B.T
        dx, dy, dz = Rb[..., 0, 2], Rb[..., 1, 2], Rb[..., 2, 2]
        sin_sw = np.hypot(dx, dy)
        angle = np.arctan2(sin_sw, dz)
        ratio = angle / np.where(sin_sw > 0.0, sin_sw, 1.0)
        # Exactly reversed: every perpendicular swing axis is as good; u is the deterministic pick.
        flip = (sin_sw == 0.0) & (dz < 0.0)
        sw = np.where(flip, 0.0, -dy * ratio)
        su = np.where(flip, np.pi, dx * ratio)
        # R = S Rz(phi) with S a swing about a horizontal axis gives, up to the factor
        # 2 cos^2(swing/2) >= 0, (R10 - R01, R00 + R11) = (sin phi, cos phi).
        twist = np.arctan2(Rb[..., 1, 0] - Rb[..., 0, 1], Rb[..., 0, 0] + Rb[..., 1, 1])
        return su, sw, twist

    def compose(self, su: np.ndarray, sw: np.ndarray, twist: np.ndarray) -> np.ndarray:
        """Joint rotations from swing components and twist, the inverse of :meth:`swing_twist_angles`.

        Args:
            su: (...,) swing rotation-vector component [rad] along u.
            sw: (...,) swing rotation-vector component [rad] along w.
            twist: (...,) twist angle [rad] about the twist axis.

        Returns:
            (..., 3, 3) rotations ``swing @ twist``.
        """
        su, sw, twist = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (su, sw, twist)))
        B = self._basis
        # Closed forms (Rodrigues about a horizontal axis, then Rz): this runs in FABRIK's inner loop.
        angle = np.hypot(sw, su)
        safe = np.where(angle > 0.0, angle, 1.0)
        kx, ky = sw / safe, su / safe
        s, c = np.sin(angle), np.cos(angle)
        S = np.empty(angle.shape + (3, 3))
        S[..., 0, 0] = c + kx * kx * (1.0 - c)
        S[..., 0, 1] = kx * ky * (1.0 - c)
        S[..., 0, 2] = ky * s
        S[..., 1, 0] = S[..., 0, 1]
        S[..., 1, 1] = c + ky * ky * (1.0 - c)
        S[..., 1, 2] = -kx * s
        S[..., 2, 0] = -ky * s
        S[..., 2, 1] = kx * s
        S[..., 2, 2] = c
        ct, st = np.cos(twist), np.sin(twist)
        T = np.zeros(angle.shape + (3, 3))
        T[..., 0, 0], T[..., 0, 1], T[..., 1, 0], T[..., 1, 1], T[..., 2, 2] = ct, -st, st, ct, 1.0
        return B.T @ S @ T @ B

    def _project(self, R: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
        su, sw, tw = self.swing_twist_angles(R)
        tw_c, tw_d = circular_clamp(tw, self.twist_min, self.twist_max)
        pu, pw = ellipse_project(su, sw, self.swing_x, self.swing_z)
        ok = (tw_d <= tol) & (np.hypot(su - pu, sw - pw) <= tol)
        if ok.all():
            return R, ok
        bad = ~ok
        out = np.array(np.broadcast_to(R, ok.shape + (3, 3)))
        out[bad] = self.compose(pu[bad], pw[bad], tw_c[bad])
        return out, ok

    def project_direction(self, direction: np.ndarray) -> np.ndarray:
        """Nearest allowed direction of the twist axis (the bone) inside the swing cone.

        Args:
            direction: (..., 3) desired directions in the joint's parent frame (any length > 0).

        Returns:
            (..., 3) unit directions reachable by a swing inside the ellipse.
        """
        w, u, t = self._basis
        d = np.asarray(direction, dtype=float)
        n = np.linalg.norm(d, axis=-1, keepdims=True)
        d = np.where(n > 0, d / np.where(n > 0, n, 1.0), t)
        axis = np.cross(t, d)
        s_norm = np.linalg.norm(axis, axis=-1, keepdims=True)
        angle = np.arctan2(s_norm, d @ t[:, None])
        # Straight backwards: any perpendicular axis is as short; u is the deterministic pick.
        unit = np.where(s_norm > 1e-15, axis / np.where(s_norm > 1e-15, s_norm, 1.0), u)
        s = unit * angle
        pu, pw = ellipse_project(s @ u, s @ w, self.swing_x, self.swing_z)
        return rotvec_to_matrix(pu[..., None] * u + pw[..., None] * w) @ t


def project_configuration(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """Nearest feasible configuration: box ranges clamped, ball-joint limits projected.

    Args:
        skeleton: The skeleton whose limits apply.
        q: (..., dof) configurations [rad or m].

    Returns:
        (..., dof) configurations inside every limit.
    """
    q = np.clip(np.asarray(q, dtype=float), skeleton.lower, skeleton.upper)
    for i, joint in enumerate(skeleton.joints):
        if joint.kind is JointKind.BALL and joint.limit is not None and joint.dof:
            s = skeleton.q_index[i]
            q[..., s : s + 3] = joint.limit.project(q[..., s : s + 3])
    return q


def limit_violation(skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
    """(...,) largest amount [rad or m] by which any variable of ``q`` leaves its limits."""
    q = np.asarray(q, dtype=float)
    projected = project_configuration(skeleton, q)
    return np.max(np.abs(q - projected), axis=-1, initial=0.0)
