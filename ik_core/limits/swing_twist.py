# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's IK limit semantics for a bone: twist about its Y axis, swing about X and Z per side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import LimitError
from ..model.rotation_kernels import matrix_to_rotvec_unchecked, rotvec_to_matrix_unchecked
from .ball import FEASIBLE_TOL, BallLimit, BoxCoordinates, circular_clamp, quadrant_ellipse_project
from .cone_twist import ConeTwistLimit

_AXES = "XYZ"


@dataclass(frozen=True)
class SwingTwistLimit(BallLimit):
    """Per-axis ranges of a bone read as Blender's IK solver reads them.

    A rotation is split as ``R = swing @ twist`` with the twist about the bone's Y axis. The
    twist angle must lie in the Y range. The swing rotation vector (s_x, s_z) must lie, in each
    quadrant, inside the ellipse whose semi-axes are that side's X and Z bounds (``upper`` on
    the positive side, ``-lower`` on the negative one), so one-sided ranges such as an elbow's
    [0, 150] degrees are exact. Unlike Euler ranges, a Y range stays a twist range whatever X
    and Z do: with X and Z free, Euler angles (180, 19, 180) degrees are a 161 degree twist.

    Attributes:
        lower: (3,) lower bounds [rad] about X, Y, Z (each in [-pi, 0]).
        upper: (3,) upper bounds [rad] about X, Y, Z (each in [0, pi]).
        locked: (3,) axes that may not rotate at all.

    Raises:
        LimitError: A bound outside its range, lower > upper, or a bad shape.
    """

    lower: Sequence[float] = (-np.pi, -np.pi, -np.pi)
    upper: Sequence[float] = (np.pi, np.pi, np.pi)
    locked: Sequence[bool] = (False, False, False)
    _lo: np.ndarray = field(init=False, repr=False, compare=False)
    _hi: np.ndarray = field(init=False, repr=False, compare=False)
    _split: ConeTwistLimit = field(init=False, repr=False, compare=False)
    _quadrant_axes: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        lo = np.asarray(self.lower, dtype=float)
        hi = np.asarray(self.upper, dtype=float)
        lk = np.asarray(self.locked, dtype=bool)
        for name, arr in (("lower", lo), ("upper", hi), ("locked", lk)):
            if arr.shape != (3,):
                raise LimitError(f"SwingTwistLimit {name} must hold 3 values (X, Y, Z), got shape {arr.shape}")
        for n in range(3):
            if not (-np.pi - 1e-9 <= lo[n] <= 1e-9 and -1e-9 <= hi[n] <= np.pi + 1e-9):
                raise LimitError(
                    f"SwingTwistLimit axis {_AXES[n]}: range [{lo[n]}, {hi[n]}] rad must satisfy "
                    "-pi <= lower <= 0 <= upper <= pi (Blender's IK limits bracket the rest pose)"
                )
        object.__setattr__(self, "lower", tuple(float(v) for v in lo))
        object.__setattr__(self, "upper", tuple(float(v) for v in hi))
        object.__setattr__(self, "locked", tuple(bool(v) for v in lk))
        lo_eff = np.where(lk, 0.0, np.clip(lo, -np.pi, 0.0))
        hi_eff = np.where(lk, 0.0, np.clip(hi, 0.0, np.pi))
        for arr in (lo_eff, hi_eff):
            arr.setflags(write=False)
        object.__setattr__(self, "_lo", lo_eff)
        object.__setattr__(self, "_hi", hi_eff)
        # Swing semi-axes (x+, x-, z+, z-) of the quadrant ellipses.
        axes = np.array([[hi_eff[0], -lo_eff[0], hi_eff[2], -lo_eff[2]]])
        axes.setflags(write=False)
        object.__setattr__(self, "_quadrant_axes", axes)
        # The cone-twist limit's exact split and composition about Y, with no bounds of its own.
        object.__setattr__(self, "_split", ConeTwistLimit(np.pi, np.pi, -np.pi, np.pi))

    def box_coordinates(self) -> BoxCoordinates:
        """Swing (s_z, s_x) in the per-side ellipses, twist about Y in the Y range."""
        lo, hi = self._lo, self._hi
        return self._split.swing_twist_coordinates((hi[2], -lo[2], hi[0], -lo[0]), lo[1], hi[1])

    def _project(self, R: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
        su, sw, tw = self._split.swing_twist_angles(R)
        lo, hi = self._lo, self._hi
        tw_c, tw_d = circular_clamp(tw, lo[1], hi[1])
        # Early out: a rotation inside its quadrant's ellipse and twist range is returned as is
        # (the common case of a feasible warm start), without the per-quadrant projections.
        inside = _inside_quadrant_ellipses(su, sw, lo, hi)
        if np.all(inside & (tw_d <= tol)):
            return R, np.ones(np.shape(tw), dtype=bool)
        # One ellipse per quadrant of (s_x, s_z): each side of each axis has its own bound.
        flat_u, flat_w = np.reshape(su, -1), np.reshape(sw, -1)
        pu, pw = quadrant_ellipse_project(flat_u, flat_w, self._quadrant_axes)
        pu, pw = pu.reshape(np.shape(su)), pw.reshape(np.shape(sw))
        ok = (tw_d <= tol) & (np.hypot(su - pu, sw - pw) <= tol)
        if ok.all():
            return R, ok
        bad = ~ok
        out = np.array(np.broadcast_to(R, ok.shape + (3, 3)))
        out[bad] = self._split.compose(pu[bad], pw[bad], tw_c[bad])
        return out, ok


def _inside_quadrant_ellipses(su: np.ndarray, sw: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(...,) True where swings (s_x, s_z) lie inside their quadrant's ellipse (lo, hi: (3,) or (J, 3) [rad]).

    A zero semi-axis admits only a zero swing component.
    """
    a = np.where(su >= 0, hi[..., 0], -lo[..., 0])
    b = np.where(sw >= 0, hi[..., 2], -lo[..., 2])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a > 0, (su / np.where(a > 0, a, 1.0)) ** 2, np.where(su == 0, 0.0, np.inf)) + np.where(
            b > 0, (sw / np.where(b > 0, b, 1.0)) ** 2, np.where(sw == 0, 0.0, np.inf)
        ) <= 1.0


def project_swing_twist_joints(limits: Sequence[SwingTwistLimit], rotvec: np.ndarray) -> np.ndarray:
    """Several ball joints' rotation vectors projected onto their swing-twist limits in one pass.

    The same answers as each limit's :meth:`~.ball.BallLimit.project` (feasible values come back
    bit for bit), computed for all the joints together: a spine or a tail of many limited bones
    costs one set of array operations per projection instead of one per bone.

    Args:
        limits: J swing-twist limits.
        rotvec: (..., J, 3) finite rotation vectors [rad], joint j's in column j.

    Returns:
        (..., J, 3) rotation vectors inside their limits.
    """
    v = np.asarray(rotvec, dtype=float)
    lo = np.array([limit._lo for limit in limits])
    hi = np.array([limit._hi for limit in limits])
    split = limits[0]._split  # the same parameter-free swing-twist split for every limit
    R = rotvec_to_matrix_unchecked(v)
    su, sw, tw = split.swing_twist_angles(R)
    tw_c, tw_d = circular_clamp(tw, lo[:, 1], hi[:, 1])
    inside = _inside_quadrant_ellipses(su, sw, lo, hi)
    if np.all(inside & (tw_d <= FEASIBLE_TOL)):
        return v.copy()
    axes = np.broadcast_to(np.stack([hi[:, 0], -lo[:, 0], hi[:, 2], -lo[:, 2]], axis=1), su.shape + (4,))
    pu, pw = quadrant_ellipse_project(np.reshape(su, -1), np.reshape(sw, -1), axes.reshape(-1, 4))
    pu, pw = pu.reshape(su.shape), pw.reshape(sw.shape)
    ok = (tw_d <= FEASIBLE_TOL) & (np.hypot(su - pu, sw - pw) <= FEASIBLE_TOL)
    out = v.copy()
    bad = ~ok
    if bad.any():
        out[bad] = matrix_to_rotvec_unchecked(split.compose(pu[bad], pw[bad], tw_c[bad]))
    return out


__all__ = ["FEASIBLE_TOL", "SwingTwistLimit", "project_swing_twist_joints"]
