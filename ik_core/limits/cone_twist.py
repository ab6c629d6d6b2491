# SPDX-License-Identifier: GPL-3.0-or-later
"""Elliptical swing cone plus twist range limits of ball joints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import LimitError
from ..model.rotation_kernels import matrix_to_rotvec_unchecked, rotvec_to_matrix_unchecked
from ..model.rotations import rotvec_to_matrix
from .ball import (
    FEASIBLE_TOL,
    TWO_PI,
    BallLimit,
    BoxCoordinates,
    circular_clamp,
    ellipse_project,
    quadrant_ellipse_project,
)


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


def swing_twist_in_basis(Rb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Swing components (about the basis' x and y) and twist (about its z) of rotations ``Rb``.

    Args:
        Rb: (..., 3, 3) rotations already expressed in a (u, w, twist axis) basis.

    Returns:
        s_u, s_w: (...,) swing rotation-vector components [rad]; twist: (...,) [rad] in [-pi, pi].
    """
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


def _compose(B: np.ndarray, su: np.ndarray, sw: np.ndarray, twist: np.ndarray) -> np.ndarray:
    """Rotations ``swing @ twist`` in bases B ((3, 3), or (..., 3, 3) each); see :meth:`ConeTwistLimit.compose`."""
    su, sw, twist = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (su, sw, twist)))
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
    return B.swapaxes(-1, -2) @ S @ T @ B


@dataclass(frozen=True)
class ConeTwistLimit(BallLimit):
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

        Same split as :func:`ik_core.model.rotations.swing_twist` (``R = swing @ twist``), read
        straight from the matrix in the limit's (u, w, twist) basis, which costs a fraction of
        the quaternion route in FABRIK's inner loop.

        Args:
            R: (..., 3, 3) rotation matrices.

        Returns:
            s_u, s_w: (...,) swing rotation-vector components [rad] along u and w.
            twist: (...,) twist angle [rad] in [-pi, pi].
        """
        B = self._basis
        return swing_twist_in_basis(B @ np.asarray(R, dtype=float) @ B.T)

    def compose(self, su: np.ndarray, sw: np.ndarray, twist: np.ndarray) -> np.ndarray:
        """Joint rotations from swing components and twist, the inverse of :meth:`swing_twist_angles`.

        Args:
            su: (...,) swing rotation-vector component [rad] along u.
            sw: (...,) swing rotation-vector component [rad] along w.
            twist: (...,) twist angle [rad] about the twist axis.

        Returns:
            (..., 3, 3) rotations ``swing @ twist``.
        """
        return _compose(self._basis, su, sw, twist)

    def box_coordinates(self) -> BoxCoordinates:
        """Swing (s_w, s_u) in the ellipse, twist in its range (see :meth:`compose`)."""
        return self.swing_twist_coordinates(
            (self.swing_z, self.swing_z, self.swing_x, self.swing_x), self.twist_min, self.twist_max
        )

    def swing_twist_coordinates(self, swing: Sequence[float], twist_min: float, twist_max: float) -> BoxCoordinates:
        """Box coordinates in this limit's basis with the given swing semi-axes (w+, w-, u+, u-) and twist range."""
        free = not twist_max - twist_min < TWO_PI - 1e-12
        lo = np.array([-max(swing[1], 0.0), -max(swing[3], 0.0), -np.inf if free else twist_min])
        hi = np.array([max(swing[0], 0.0), max(swing[2], 0.0), np.inf if free else twist_max])
        return BoxCoordinates("swing_twist", lo, hi, basis=self._basis.copy(), swing=np.array(swing, dtype=float))

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


def project_cone_twist_joints(limits: Sequence[ConeTwistLimit], rotvec: np.ndarray) -> np.ndarray:
    """Several ball joints' rotation vectors projected onto their cone-twist limits in one pass.

    Each limit's :meth:`~.ball.BallLimit.project` computed for all the joints together (feasible
    values come back bit for bit; projected ones agree to rounding: a circular cone's closest
    point comes from the ellipse iteration here, from radial scaling there).

    Args:
        limits: J cone-twist limits.
        rotvec: (..., J, 3) finite rotation vectors [rad], joint j's in column j.

    Returns:
        (..., J, 3) rotation vectors inside their limits.
    """
    v = np.asarray(rotvec, dtype=float)
    B = np.array([limit._basis for limit in limits])
    R = rotvec_to_matrix_unchecked(v)
    su, sw, tw = swing_twist_in_basis(B @ R @ B.swapaxes(-1, -2))
    tw_c, tw_d = circular_clamp(
        tw, np.array([limit.twist_min for limit in limits]), np.array([limit.twist_max for limit in limits])
    )
    axes = np.array([(limit.swing_x, limit.swing_x, limit.swing_z, limit.swing_z) for limit in limits])
    axes = np.broadcast_to(axes, su.shape + (4,)).reshape(-1, 4)
    pu, pw = quadrant_ellipse_project(su.reshape(-1), sw.reshape(-1), axes)
    pu, pw = pu.reshape(su.shape), pw.reshape(sw.shape)
    ok = (tw_d <= FEASIBLE_TOL) & (np.hypot(su - pu, sw - pw) <= FEASIBLE_TOL)
    out = v.copy()
    if not ok.all():
        bad = ~ok
        Bb = np.broadcast_to(B, su.shape + (3, 3))[bad]
        out[bad] = matrix_to_rotvec_unchecked(_compose(Bb, pu[bad], pw[bad], tw_c[bad]))
    return out
