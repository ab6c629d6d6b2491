# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared pieces of joint limits: circular and elliptical projections, the ball-limit front end."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError
from ..model.rotation_kernels import matrix_to_rotvec_unchecked, rotvec_to_matrix_unchecked

TWO_PI = 2.0 * np.pi
# Values this far [rad] outside a limit count as inside, so projecting twice changes nothing.
FEASIBLE_TOL = 1e-9
# Below this cos(middle angle) an Euler triple is at gimbal lock: only one combination of the
# first and last angles is defined, and feasibility is decided on that combination.
GIMBAL_COS = 1e-6
EULER_AXES = "XYZ"
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
    return clamp_ranges(angle, np.where(free, -np.pi, lower), np.where(free, np.pi, upper), free)


def clamp_ranges(
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
    if out.any():
        px[out], py[out] = _ellipse_boundary_point(x[out], y[out], a, b, iterations)
    return px, py


def quadrant_semi_axes(x: np.ndarray, y: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Semi-axes (a, b) of the quarter ellipse holding each point (x, y) (see :func:`quadrant_ellipse_project`).

    Args:
        x: First coordinates (broadcast against ``axes[..., 0]``).
        y: Second coordinates.
        axes: (..., 4) semi-axes (x+, x-, y+, y-).
    """
    return np.where(x >= 0.0, axes[..., 0], axes[..., 1]), np.where(y >= 0.0, axes[..., 2], axes[..., 3])


def quadrant_ellipse_project(
    x: np.ndarray, y: np.ndarray, axes: np.ndarray, iterations: int = 100
) -> tuple[np.ndarray, np.ndarray]:
    """Closest points of convex sets bounded by one quarter ellipse per quadrant, each point its own set.

    The set of point n is ``(x / a)^2 + (y / b)^2 <= 1`` with ``a = axes[n, 0]`` where x >= 0 and
    ``axes[n, 1]`` where x < 0, ``b = axes[n, 2]`` where y >= 0 and ``axes[n, 3]`` where y < 0:
    Blender's per-side swing ranges. The quarters meet with a common tangent on the axes, so
    the set is convex and the closest point of an outside point lies in its own quadrant.

    Args:
        x: (...,) first coordinates.
        y: (...,) second coordinates, the shape of ``x``.
        axes: (..., 4) semi-axes (x+, x-, y+, y-), broadcast against ``x`` (e.g. (N, 4), (1, 4), or
            (K, 4) for x of shape (P, K)), each >= 0 (below 1e-12 counts as 0).
        iterations: Newton iteration cap.

    Returns:
        (px, py), each the shape of ``x``, the closest points (points inside unchanged).
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    a, b = quadrant_semi_axes(x, y, axes)
    if (np.asarray(axes) >= _THIN).all():
        # No quarter is a segment (the usual case): the general branch's values with fewer calls.
        px, py = x.copy(), y.copy()
        out = (x / a) ** 2 + (y / b) ** 2 > 1.0
    else:
        a, b = np.where(a < _THIN, 0.0, a), np.where(b < _THIN, 0.0, b)
        thin = (a == 0.0) | (b == 0.0)
        px, py = np.where(thin, np.clip(x, -a, a), x), np.where(thin, np.clip(y, -b, b), y)
        sa, sb = np.where(thin, 1.0, a), np.where(thin, 1.0, b)
        out = ~thin & ((x / sa) ** 2 + (y / sb) ** 2 > 1.0)
    if out.any():
        px[out], py[out] = _ellipse_boundary_point(x[out], y[out], a[out], b[out], iterations)
    return px, py


def _ellipse_boundary_point(
    x: np.ndarray, y: np.ndarray, a: np.ndarray | float, b: np.ndarray | float, iterations: int
) -> tuple[np.ndarray, np.ndarray]:
    """Closest boundary points of ellipses with semi-axes a, b (> 0) to points (x, y) outside them."""
    ax, ay = np.abs(x), np.abs(y)
    a2, b2 = a * a, b * b
    # The two coordinates' terms side by side (2, N): one call per operation instead of two
    # (the loop runs a few times per projection, on few points, so calls are the cost).
    squares = np.array(np.broadcast_arrays(a2, b2, ax)[:2])
    lever = np.array([a * ax, b * ay])
    # F(t) = (a x / (t + a^2))^2 + (b y / (t + b^2))^2 - 1 is convex and decreasing; each term
    # alone reaches 1 at these t, so F >= 0 there and Newton climbs monotonically to the root.
    t = np.maximum(lever[0] - a2, lever[1] - b2)
    scale = np.minimum(a2, b2)
    for _ in range(iterations):
        d = t + squares
        r = lever / d
        r2 = r * r
        f = r2[0] + r2[1] - 1.0
        r2 /= d
        df = -2.0 * (r2[0] + r2[1])
        step = f / df
        # Newton climbs: a step that would go back is rounding at the root, so it ends there
        # (a thin ellipse's rounding otherwise keeps a strict test busy to the cap).
        t = t - np.minimum(step, 0.0)
        if (step >= -1e-15 * (np.abs(t) + scale)).all():
            break
    return np.copysign(a2 * ax / (t + a2), x), np.copysign(b2 * ay / (t + b2), y)


@dataclass(frozen=True)
class BoxCoordinates:
    """Coordinates in which a ball limit's feasible rotations are a box (and an ellipse).

    ``kind == "euler"``: ``R = R_a0(x0) @ R_a1(x1) @ R_a2(x2)``, elemental rotations about the
    axes ``axes`` (0, 1, 2 for X, Y, Z), each angle in [lower, upper] (infinite ends: free).

    ``kind == "swing_twist"``: ``R = B^T @ exp([s_w, s_u, 0]^) @ Rz(t) @ B`` with ``B = basis``
    (rows: the swing axes w and u, then the twist axis), the twist t in [lower[2], upper[2]]
    (infinite: free) and the swing (s_w, s_u) inside the quarter ellipses with semi-axes
    ``swing`` = (w+, w-, u+, u-) (see :func:`quadrant_ellipse_project`); ``lower``/``upper``
    [:2] bound the swing box around them.

    Attributes:
        kind: "euler" or "swing_twist".
        lower: (3,) lower ends [rad].
        upper: (3,) upper ends [rad].
        axes: Elemental axes of the Euler chain, in chain order (parent side first).
        basis: (3, 3) swing-twist basis.
        swing: (4,) swing semi-axes [rad].
    """

    kind: str
    lower: np.ndarray
    upper: np.ndarray
    axes: tuple[int, int, int] = (0, 1, 2)
    basis: np.ndarray = field(default_factory=lambda: np.eye(3))
    swing: np.ndarray = field(default_factory=lambda: np.zeros(4))


def _as_rotvec(rotvec: object) -> np.ndarray:
    v = np.asarray(rotvec, dtype=float)
    if v.ndim == 0 or v.shape[-1] != 3:
        raise InvalidInputError(f"rotvec must have shape (..., 3), got {v.shape}")
    if not np.isfinite(v).all():
        raise InvalidInputError("rotvec contains NaN or infinite values")
    return v


class BallLimit:
    """Shared rotation-vector front end; subclasses implement ``_project(R, tol)``."""

    def _project(self, R: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def box_coordinates(self) -> BoxCoordinates | None:
        """The coordinates in which this limit is a box (see :class:`BoxCoordinates`), or None."""
        return None

    def free_axes(self) -> int:
        """Axes of the joint's rotation the limit leaves room about (0: the joint is held still).

        Counted in its box coordinates: an Euler range of one value, a swing of zero semi-axes on
        both sides or a twist range of one value is a locked axis. A limit without box
        coordinates counts all three.
        """
        box = self.box_coordinates()
        return 3 if box is None else int(np.count_nonzero(np.asarray(box.lower) < np.asarray(box.upper)))

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
        R, ok = self._project(rotvec_to_matrix_unchecked(v), FEASIBLE_TOL)
        if ok.all():
            return v.copy()
        # Only the projected rows need the logarithm (the common single feasible pose skips it).
        out = v.copy() if v.shape == R.shape[:-1] else np.array(np.broadcast_to(v, R.shape[:-1]))
        bad = ~ok
        out[bad] = matrix_to_rotvec_unchecked(R[bad])
        return out

    def contains(self, rotvec: np.ndarray, tol: float = FEASIBLE_TOL) -> np.ndarray:
        """(...,) True where rotation vectors (..., 3) [rad] are inside the limit within ``tol`` [rad]."""
        return self._project(rotvec_to_matrix_unchecked(_as_rotvec(rotvec)), float(tol))[1]

    def contains_matrix(self, R: np.ndarray, tol: float = FEASIBLE_TOL) -> np.ndarray:
        """(...,) True where rotation matrices (..., 3, 3) are inside the limit within ``tol`` [rad]."""
        return self._project(np.asarray(R, dtype=float), float(tol))[1]
