# SPDX-License-Identifier: GPL-3.0-or-later
"""Per-axis Euler-angle limits of ball joints, with Blender's pose-bone IK semantics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import LimitError
from ..model.euler import AXIS_INDICES, euler_to_matrix_unchecked, matrix_to_euler_unchecked
from ..model.rotation_kernels import matrix_to_rotvec_unchecked, rotvec_to_matrix_unchecked
from ..model.rotations import EULER_ORDERS
from .ball import (
    EULER_AXES,
    FEASIBLE_TOL,
    GIMBAL_COS,
    TWO_PI,
    BallLimit,
    BoxCoordinates,
    circular_clamp,
    clamp_ranges,
)


@dataclass(frozen=True)
class EulerLimit(BallLimit):
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
                    f"EulerLimit axis {EULER_AXES[n]}: lower {lo[n]} rad must not exceed upper {hi[n]} rad"
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

    def box_coordinates(self) -> BoxCoordinates:
        """The three Euler angles, outermost first (``R = Rk @ Rj @ Ri``), each in its range."""
        chain = AXIS_INDICES[self.order][::-1]
        return BoxCoordinates("euler", self._lo[list(chain)], self._hi[list(chain)], axes=chain)

    def _project(self, R: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
        return _project_euler(R, self.order, self._lo, self._hi, self._clamp, tol)


def _project_euler(
    R: np.ndarray, order: str, lo: np.ndarray, hi: np.ndarray, clamp: tuple[np.ndarray, np.ndarray, np.ndarray],
    tol: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Rotations projected onto Euler ranges of one order; ranges (3,) for one joint or (J, 3) for J joints.

    Args:
        R: (..., 3, 3) rotations, or (..., J, 3, 3) with per-joint ranges.
        order: The Euler order of every range.
        lo: (3,) or (J, 3) effective lower ends [rad] (-inf on free axes).
        hi: (3,) or (J, 3) effective upper ends [rad] (inf on free axes).
        clamp: Finite stand-ins of the ranges and the free mask, as :func:`clamp_ranges` takes them.
        tol: Feasibility tolerance [rad].

    Returns:
        (..., 3, 3) rotations inside the ranges and (...,) True where R was inside already.
    """
    i, j, k = AXIS_INDICES[order]
    parity = 1.0 if (j - i) % 3 == 1 else -1.0
    e0 = matrix_to_euler_unchecked(R, order)
    c0, d0 = clamp_ranges(e0, *clamp)
    ok = d0.max(axis=-1) <= tol
    # Inside by the first decomposition: the checks below could only add to ``ok``.
    if ok.all():
        return R, ok
    # The other Tait-Bryan decomposition of the same rotation.
    e1 = e0.copy()
    e1[..., i] += np.pi
    e1[..., j] = np.pi - e0[..., j]
    e1[..., k] += np.pi
    c1, d1 = clamp_ranges(e1, *clamp)
    ok |= d1.max(axis=-1) <= tol
    gimbal = np.abs(np.cos(e0[..., j])) < GIMBAL_COS
    if gimbal.any():  # the coupled check below can only change rows at gimbal lock
        # Gimbal lock: R = Rk(a_k - p s a_i) Rj(a_j), so only that combination must fit.
        s = np.where(np.sin(e0[..., j]) < 0.0, -1.0, 1.0)
        m = -parity * s
        combo = e0[..., k] + m * e0[..., i]
        free = np.isinf(lo[..., i]) | np.isinf(lo[..., k])
        # Finite stand-ins where an axis is free (no constraint on the combination there).
        lo_f, hi_f = clamp[0], clamp[1]
        c_lo = lo_f[..., k] + np.minimum(m * lo_f[..., i], m * hi_f[..., i])
        c_hi = hi_f[..., k] + np.maximum(m * lo_f[..., i], m * hi_f[..., i])
        combo_ok = free | (circular_clamp(combo, c_lo, c_hi)[1] <= tol)
        ok |= gimbal & (d0[..., j] <= tol) & combo_ok
    if ok.all():
        return R, ok
    bad = ~ok
    full = R if R.shape == ok.shape + (3, 3) else np.broadcast_to(R, ok.shape + (3, 3))
    Rb = full[bad]
    # Both clamped decompositions in one conversion.
    R01 = euler_to_matrix_unchecked(np.concatenate([c0[bad], c1[bad]]), order)
    R0, R1 = R01[: len(Rb)], R01[len(Rb) :]
    # The larger trace of R^T R_i is the smaller rotation angle between them.
    closer1 = np.einsum("nij,nij->n", Rb, R1) > np.einsum("nij,nij->n", Rb, R0)
    out = np.array(full)
    out[bad] = np.where(closer1[:, None, None], R1, R0)
    return out, ok


def project_euler_joints(limits: Sequence[EulerLimit], rotvec: np.ndarray) -> np.ndarray:
    """Several ball joints' rotation vectors projected onto their Euler limits (one order) in one pass.

    The same answers as each limit's :meth:`~.ball.BallLimit.project` (feasible values come back
    bit for bit), computed for all the joints together: one set of array operations per
    projection instead of one per joint.

    Args:
        limits: J Euler limits, all of the same order.
        rotvec: (..., J, 3) finite rotation vectors [rad], joint j's in column j.

    Returns:
        (..., J, 3) rotation vectors inside their limits.

    Raises:
        LimitError: The limits' orders differ.
    """
    order = limits[0].order
    if any(limit.order != order for limit in limits):
        orders = sorted({limit.order for limit in limits})
        raise LimitError(f"project_euler_joints needs limits of one Euler order, got {orders}")
    v = np.asarray(rotvec, dtype=float)
    lo = np.array([limit._lo for limit in limits])
    hi = np.array([limit._hi for limit in limits])
    clamp = tuple(np.array([limit._clamp[n] for limit in limits]) for n in range(3))
    R, ok = _project_euler(rotvec_to_matrix_unchecked(v), order, lo, hi, clamp, FEASIBLE_TOL)
    out = v.copy()
    if not ok.all():
        bad = ~ok
        out[bad] = matrix_to_rotvec_unchecked(R[bad])
    return out
