# SPDX-License-Identifier: GPL-3.0-or-later
"""Forward kinematics, Jacobians, errors and damped steps of the serial DLS kernel, in few numpy calls."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .kinematics import LEVI_CIVITA, LOG_PARTS, QUARTER, rotation_log
from .small import limit_passes, small_direction

if TYPE_CHECKING:
    from .solver import DLSSolver


class SerialModel:
    """Constants of a solver's serial chain folded once, and the per-iteration maths on them.

    The chain's every variable is a revolute, continuous or prismatic joint of the path to the
    one effector (no ball joint, mimic or stiffness); the effector is driven in "full" or
    "position" mode. Everything here works on P particles of one target at a time: for a few
    particles numpy's per-call overhead, not arithmetic, is the cost, so the kinematics take
    one sin, one product for all local transforms, a log-depth scan and one product for the
    errors, and per-particle scalars come back as Python lists.

    Args:
        solver: The solver (limits, weights, null-space pull, mode).
    """

    def __init__(self, solver: DLSSolver) -> None:
        self.solver = solver
        chain = solver.model.chains[0]
        self.n = chain.n
        # Local transforms of all joints as one product: [sin q_0, cos q_0, sin q_1, ...] (P, 2n)
        # times a block-diagonal (2n, 16n) matrix, plus the constant parts (16n,).
        self.B12_block = np.zeros((2 * chain.n, 16 * chain.n))
        for j in range(chain.n):
            self.B12_block[2 * j : 2 * j + 2, 16 * j : 16 * j + 16] = chain.B12[j]
        self.B0_row = chain.B0flat.reshape(-1)
        self.end = chain.end
        self.shifts = chain.shifts
        slide = ~np.array(chain.rotating, dtype=bool)
        self.slide = np.flatnonzero(slide) if slide.any() else None
        self.full = solver.mode == "full"
        self.m = 6 if self.full else 3
        self.sqrt_w = solver._sqrt_w if solver._weighted else None
        self.lo, self.hi = solver._lo, solver._hi
        self.lo_list, self.hi_list = self.lo.tolist(), self.hi.tolist()
        self.null = solver._null
        self.null_w, self.pref = solver._null_w, solver._pref
        # Entries of a flattened homogeneous pose holding its rotation R[j, k] (row-major).
        self._rot_entries = np.array([4 * j + k for j in range(3) for k in range(3)])
        self._G0 = np.zeros((16, 7 if self.full else 3))
        self._G0[[3, 7, 11], [0, 1, 2]] = -1.0
        self._G_of_R = np.zeros((16 * 7, 9))  # the rotation part of G, linear in the target rotation
        if self.full:
            self._G0[15, 6] = -1.0
            # (tR R^T)_il = tR_ik R_lk and LOG_PARTS maps its flattened entries (3 i + l) to the
            # parts: G[(l, k), c] = sum_i LOG_PARTS[(i, l), c] tR_ik.
            log_lci = LOG_PARTS.reshape(3, 3, 4).transpose(1, 2, 0)  # (l, c, i)
            for m in range(9):
                G = np.zeros((16, 7))
                G[self._rot_entries, 3:] = (log_lci @ np.eye(9)[m].reshape(3, 3)).transpose(0, 2, 1).reshape(9, 4)
                self._G_of_R[:, m] = G.reshape(-1)

    # --- kinematics and residual -------------------------------------------------------------
    def target_terms(self, tp: np.ndarray, tR: np.ndarray | None) -> np.ndarray:
        """(16, c) matrix G with ``pose.reshape(16) @ G`` = the error parts of a (4, 4) effector pose.

        The parts are the position error ``tp - p`` (3) and, in "full" mode, the skew part
        ``2 sin(theta) axis`` (3) and ``2 cos(theta)`` of ``tR R^T``: all affine in the effector
        pose for a fixed target, and the pose's last row (0, 0, 0, 1) carries the constants.
        """
        G = self._G0.copy() if not self.full else (self._G_of_R @ tR.reshape(9)).reshape(16, 7) + self._G0
        G[15, :3] = tp
        return G

    def evaluate(
        self, q: np.ndarray, G: np.ndarray, tR: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[float], list[float], list[float]]:
        """Weighted errors and Jacobians of configurations q (P, n) for one target.

        Args:
            q: (P, n) configurations.
            G: (16, c) error parts of the target, from :meth:`target_terms`.
            tR: (3, 3) target rotation, or None in position mode.

        Returns:
            Effector poses (P, 4, 4), JT (P, n, m) transposed weighted Jacobians, ew (P, m)
            weighted errors, and as lists 0.5 |ew|^2, position errors [m] and rotation errors [rad].
        """
        P, n = q.shape
        sc = np.sin(q[:, :, None] + QUARTER)  # (sin q, cos q) in one call
        if self.slide is not None:
            sc[:, self.slide, 0] = q[:, self.slide]
            sc[:, self.slide, 1] = 1.0
        L = (sc.reshape(P, 2 * n) @ self.B12_block + self.B0_row).reshape(P, n, 4, 4)
        for k in self.shifts:  # Hillis-Steele scan: L[:, i] becomes the world frame of joint i
            L[:, k:] = L[:, :-k] @ L[:, k:]
        pose = L[:, -1] @ self.end
        z = L[:, :, :3, 2]
        d = pose[:, None, :3, 3] - L[:, :, :3, 3]
        lin = (z[..., :, None] * d[..., None, :]).reshape(P, n, 9) @ LEVI_CIVITA
        if self.slide is not None:
            lin[:, self.slide] = z[:, self.slide]
            z = z.copy()
            z[:, self.slide] = 0.0
        X = pose.reshape(P, 16) @ G  # the pose's last row is (0, 0, 0, 1): G's last row adds g
        if self.full:
            JT = np.concatenate([lin, z], axis=-1)
            # Per-particle scalars in Python: cheaper than numpy calls on arrays of a few entries.
            norms = np.hypot.reduce(X[:, :6].reshape(P, 2, 3), -1).tolist()  # (|dp|, 2 sin theta)
            pe = [a for a, _ in norms]
            re = [math.atan2(sn, c2) for (_, sn), c2 in zip(norms, X[:, 6].tolist())]
            ew = X[:, :6]
            # theta / (2 sin theta) stays exact as theta -> 0; where sn is 0, the skew part is 0 too.
            ew[:, 3:] *= np.array([a / max(sn, 1e-300) for a, (_, sn) in zip(re, norms)]).reshape(P, 1)
            if max(re) > 3.0:  # near pi the skew part vanishes: the careful log
                w, angle = rotation_log(tR @ pose[:, :3, :3].transpose(0, 2, 1))
                ew[:, 3:] = w
                re = angle.tolist()
        else:
            JT, ew, re = lin, X, [0.0] * P
            pe = np.hypot.reduce(X, -1).tolist()
        if self.sqrt_w is not None:
            ew = ew * self.sqrt_w
            JT = JT * self.sqrt_w
            E = (0.5 * np.add.reduce(ew * ew, -1)).tolist()
        else:
            E = [0.5 * (a * a + b * b) for a, b in zip(pe, re)]
        return pose, JT, ew, E, pe, re

    # --- the step ----------------------------------------------------------------------------
    def step(self, q: np.ndarray, JT: np.ndarray, ew: np.ndarray, E: list[float], lam: list[float]) -> np.ndarray:
        """One damped step from q (P, n), stopped on the limits and solved again without the stopped joints.

        The general path's small-batch maths (:mod:`.dls_small`) on the transposed Jacobians.
        """
        z = None
        if self.null:
            # The pull toward the preferred pose fades with the error (1 / DLSSolver's _NULL_FADE).
            z = (self.pref - q) * np.multiply.outer([min(math.sqrt(2.0 * e) * 10.0, 1.0) for e in E], self.null_w)
        J, lam = JT.transpose(0, 2, 1), np.asarray(lam)
        q_new = q + small_direction(ew, J, lam, z)
        lo, hi = self.lo, self.hi
        out = (q_new < lo) | (q_new > hi)
        if not np.count_nonzero(out):
            return q_new
        q_new = limit_passes(q, q_new, ew, J, lam, z, out, lo, hi, None, self.solver.limit_passes)
        return np.minimum(np.maximum(q_new, lo), hi)
