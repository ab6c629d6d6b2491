# SPDX-License-Identifier: GPL-3.0-or-later
"""Effector poses and Jacobians for the DLS solver: precompiled fast paths for chains and trees of joints."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...model.skeleton import JointKind, Skeleton

_ROTATING = (JointKind.REVOLUTE, JointKind.CONTINUOUS)
# Up to these batch sizes numpy's per-call overhead dominates, so frames and Jacobians are built
# with few calls (log-depth prefix products of 4x4 matrices, a Levi-Civita product); above them,
# with few flops per element (measured crossovers on a 7-joint chain).
_SMALL_BATCH = 24
_SMALL_JACOBIAN = 8
# Rz(q) = _RZ0 + sin(q) _RZ1 + cos(q) _RZ2 and Tz(q) = _RZ0 + _RZ2 + q _TZ1 (4x4 homogeneous).
_RZ0 = np.diag([0.0, 0.0, 1.0, 1.0])
_RZ1 = np.zeros((4, 4))
_RZ1[0, 1], _RZ1[1, 0] = -1.0, 1.0
_RZ2 = np.diag([1.0, 1.0, 0.0, 0.0])
_TZ1 = np.zeros((4, 4))
_TZ1[2, 3] = 1.0
QUARTER = np.array([0.0, 0.5 * np.pi])
# Row-major flattened R times this gives (R21 - R12, R02 - R20, R10 - R01, trace).
LOG_PARTS = np.zeros((9, 4))
for _col, (_plus, _minus) in enumerate(((7, 5), (2, 6), (3, 1))):
    LOG_PARTS[_plus, _col], LOG_PARTS[_minus, _col] = 1.0, -1.0
LOG_PARTS[[0, 4, 8], 3] = 1.0
_EYE3 = np.eye(3)
_EYE4 = np.eye(4)
# (a x b)_k = sum_ij eps_kij a_i b_j, arranged to multiply the flattened outer product a_i b_j.
LEVI_CIVITA = np.zeros((9, 3))
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    LEVI_CIVITA[3 * _i + _j, _k] = 1.0
    LEVI_CIVITA[3 * _j + _i, _k] = -1.0


# Pointer jumping composes a tree's frames up to this batch size; above it node by node with the
# configurations along the last axis does fewer flops (measured on 7- and 12-joint chart chains).
_SMALL_TREE = 24
# Above it, up to this batch size every node's rotation is built in one go (fewer calls), above
# it node by node (smaller temporaries).
_WIDE_TOGETHER = 256
# A rotation matrix from the outer product of its unit quaternion (w, x, y, z): entry (a, b) of
# the outer product times _QUAT_BASIS[4 a + b], summed.
_QUAT_BASIS = np.zeros((4, 4, 3, 3))
for (_a, _b), _entries in {
    (0, 0): ((0, 0, 1), (1, 1, 1), (2, 2, 1)),
    (1, 1): ((0, 0, 1), (1, 1, -1), (2, 2, -1)),
    (2, 2): ((0, 0, -1), (1, 1, 1), (2, 2, -1)),
    (3, 3): ((0, 0, -1), (1, 1, -1), (2, 2, 1)),
    (1, 2): ((0, 1, 2), (1, 0, 2)),
    (1, 3): ((0, 2, 2), (2, 0, 2)),
    (2, 3): ((1, 2, 2), (2, 1, 2)),
    (0, 1): ((1, 2, -2), (2, 1, 2)),
    (0, 2): ((0, 2, 2), (2, 0, -2)),
    (0, 3): ((0, 1, -2), (1, 0, 2)),
}.items():
    for _r, _c, _value in _entries:
        _QUAT_BASIS[_a, _b, _r, _c] = _value
_QUAT_BASIS = _QUAT_BASIS.reshape(16, 3, 3)
# The right Jacobian J_r(v) = x0 I + sum_i x_i [e_i]x + sum_ij x_(3 + 3 i + j) e_i e_j^T,
# flattened: the coefficients (13,) times this (13, 9).
_RIGHT_JACOBIAN_BASIS = np.zeros((13, 3, 3))
_RIGHT_JACOBIAN_BASIS[0] = np.eye(3)
for _i in range(3):
    _RIGHT_JACOBIAN_BASIS[1 + _i] = np.cross(np.eye(3)[_i], np.eye(3)).T  # [e_i]x: column k is e_i x e_k
_RIGHT_JACOBIAN_BASIS[4:] = np.eye(9).reshape(9, 3, 3)
_RIGHT_JACOBIAN_BASIS = _RIGHT_JACOBIAN_BASIS.reshape(13, 9)
_QUAT_MATRIX = _QUAT_BASIS.reshape(16, 9)
# The same as sums of four terms: entry e of the rotation is sum_t _QUAT_COEFFICIENTS[t, e]
# times outer-product entry _QUAT_TERMS[t, e] (zero coefficients pad the shorter sums).
_QUAT_TERMS = np.zeros((4, 9), dtype=int)
_QUAT_COEFFICIENTS = np.zeros((4, 9, 1))
for _e in range(9):
    _rows = np.flatnonzero(_QUAT_MATRIX[:, _e])
    _QUAT_TERMS[: len(_rows), _e] = _rows
    _QUAT_COEFFICIENTS[: len(_rows), _e, 0] = _QUAT_MATRIX[_rows, _e]


def _z_to_axis(axis: np.ndarray) -> np.ndarray:
    """(4, 4) rotation taking the local z axis onto unit ``axis`` (exactly I when they agree)."""
    Q = np.eye(4)
    if np.allclose(axis, (0.0, 0.0, 1.0), rtol=0.0, atol=1e-15):
        return Q
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, axis)
    x /= np.linalg.norm(x)
    Q[:3, :3] = np.column_stack([x, np.cross(axis, x), axis])
    return Q


class _Chain:
    """Constants of one root-to-effector path whose joints are fixed or 1-DoF.

    Each moving joint k has a constant ``C_k`` (everything since the previous moving joint,
    re-oriented so that the joint axis is local z), so its world frame is
    ``F_k = F_(k-1) C_k Rz(q_k)`` (or ``Tz(q_k)`` when prismatic). Frames are stored as the top
    three rows (3, 4) of the homogeneous matrix: the product with a constant is one matrix
    product over the whole batch and the joint motion only touches two columns.
    """

    def __init__(self, skeleton: Skeleton, effector: int) -> None:
        eff = skeleton.effectors[effector]
        pending = np.eye(4)
        C, cols, mult, offset, rotating = [], [], [], [], []
        for i in skeleton.ancestors(eff.joint):
            joint = skeleton.joints[i]
            pending = pending @ joint.origin
            if joint.kind is JointKind.FIXED:
                continue
            Q = _z_to_axis(joint.axis)
            C.append(pending @ Q)
            rotating.append(joint.kind in _ROTATING)
            if joint.mimic is None:
                cols.append(skeleton.q_index[i])
                mult.append(1.0)
                offset.append(0.0)
            else:
                cols.append(skeleton.q_index[skeleton.mimic_source[i]])
                mult.append(joint.mimic.multiplier)
                offset.append(joint.mimic.offset)
            pending = Q.T
        self.end = pending @ eff.offset
        self.n = len(cols)
        self.C = np.array(C, dtype=float).reshape(self.n, 4, 4)
        # local_k(q) = A0_k + s_k A1_k + c_k A2_k with (s, c) = (sin q, cos q), or (q, 1) if prismatic.
        rot = np.array(rotating, dtype=bool)[:, None, None]
        self.A0 = self.C @ np.where(rot, _RZ0, _RZ0 + _RZ2)
        self.A1 = self.C @ np.where(rot, _RZ1, _TZ1)
        self.A2 = self.C @ np.where(rot, _RZ2, 0.0)
        self.B0, self.B1, self.B2 = self.A0[:, None], self.A1[:, None], self.A2[:, None]
        # (n, 2, 16): [sin q, cos q] times this plus A0 gives the joint's local transform.
        self.B12 = np.stack([self.A1, self.A2], axis=1).reshape(self.n, 2, 16)
        self.B0flat = self.A0.reshape(self.n, 1, 16)
        self.shifts = [k for k in (1, 2, 4, 8, 16, 32, 64) if k < self.n]
        self.cols = np.array(cols, dtype=int)
        self.mult = np.array(mult)
        self.offset = np.array(offset)
        self.plain = bool(np.all(self.mult == 1.0) and np.all(self.offset == 0.0))
        self.rotating = [bool(r) for r in rotating]
        self.all_rotating = all(self.rotating)
        # Maps chain columns onto q columns (mimics add multiplier times their column).
        self.identity = self.plain and self.n == skeleton.dof and np.array_equal(self.cols, np.arange(skeleton.dof))
        self.scatter = np.zeros((self.n, skeleton.dof))
        np.add.at(self.scatter, (np.arange(self.n), self.cols), self.mult)

    def frames(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World frames of the moving joints and effector poses.

        Args:
            q: (P, dof) configurations.

        Returns:
            (n, P, 3, 4) joint frames (joint-major) and (P, 3, 4) effector poses, both the top
            three rows of homogeneous transforms.
        """
        P = q.shape[0]
        if self.n == 0:
            return np.empty((0, P, 3, 4)), np.broadcast_to(self.end[:3], (P, 3, 4)).copy()
        v = q.T if self.identity else q.T[self.cols]
        if not self.plain:
            v = v * self.mult[:, None] + self.offset[:, None]
        if P <= _SMALL_BATCH and self.n <= 64:
            if self.all_rotating:
                # sin and cos in one call (cos q = sin(q + pi/2)), the local transforms in one product.
                L = (np.sin(v[..., None] + QUARTER) @ self.B12 + self.B0flat).reshape(self.n, P, 4, 4)
            else:
                s = np.where(self.rotating, np.sin(v).T, v.T).T
                L = self.B0 + s[..., None, None] * self.B1 + np.cos(v)[..., None, None] * self.B2
            for k in self.shifts:  # Hillis-Steele scan: L[i] becomes the product of L[0..i]
                L[k:] = L[:-k] @ L[k:]
            # The P last frames stacked (4 P, 4): one product with the shared end offset.
            return L[:, :, :3], (L[-1].reshape(4 * P, 4) @ self.end).reshape(P, 4, 4)[:, :3]
        T = np.empty((self.n, P, 3, 4))
        # Columns 0 and 1 of a frame, read as one complex column, turn by Rz(q) when multiplied
        # by exp(-i q): one in-place complex product instead of six real ones per joint.
        turn = np.empty(v.shape, dtype=complex)
        turn.real = np.cos(v)
        turn.imag = -np.sin(v)
        for k in range(self.n):
            M = T[k]
            if k == 0:
                M[:] = self.C[0, :3]
            else:
                np.matmul(T[k - 1].reshape(3 * P, 4), self.C[k], out=M.reshape(3 * P, 4))
            if self.rotating[k]:
                M.view(complex)[:, :, 0] *= turn[k, :, None]
            else:
                M[:, :, 3] += M[:, :, 2] * v[k, :, None]
        pose = (T[-1].reshape(3 * P, 4) @ self.end).reshape(P, 3, 4)
        return T, pose

    def jacobian(self, T: np.ndarray, pose: np.ndarray) -> np.ndarray:
        """(P, 6, dof) world-frame Jacobian from :meth:`frames` output (rows: linear, angular)."""
        n, P = T.shape[:2]
        z = T[..., 2]
        d = pose[:, :, 3] - T[..., 3]
        if P <= _SMALL_JACOBIAN:
            # z x d as one product with the Levi-Civita tensor: fewer numpy calls than six products.
            lin = (z[..., :, None] * d[..., None, :]).reshape(n, P, 9) @ LEVI_CIVITA
            if not self.all_rotating:
                slide = ~np.array(self.rotating)
                lin[slide] = z[slide]
                z = np.where(slide[:, None, None], 0.0, z)
            J = np.ascontiguousarray(np.concatenate([lin, z], axis=-1).transpose(1, 2, 0))
        else:
            # Large batches: component-wise products touch far less memory than the outer product.
            J = np.empty((P, 6, n))
            zx, zy, zz = z[..., 0], z[..., 1], z[..., 2]
            dx, dy, dz = d[..., 0], d[..., 1], d[..., 2]
            J[:, 0] = (zy * dz - zz * dy).T
            J[:, 1] = (zz * dx - zx * dz).T
            J[:, 2] = (zx * dy - zy * dx).T
            J[:, 3:] = z.transpose(1, 2, 0)
            if not self.all_rotating:
                slide = ~np.array(self.rotating)
                J[:, :3, slide] = z[slide].transpose(1, 2, 0)
                J[:, 3:, slide] = 0.0
        return J if self.identity else J @ self.scatter


class _Tree:
    """Constants of the joints above some effectors when a ball joint is among them.

    Like :class:`_Chain`, every moving joint becomes a node with a constant ``C_k`` (everything
    since its nearest moving ancestor, fixed joints folded in; 1-DoF joints re-oriented so that
    their axis is local z), so its world frame is ``F_k = F_parent(k) C_k M_k(q)``. Every
    rotating node's motion is a rotation vector ``r_k`` linear in q (a ball's three variables,
    or ``(0, 0, value)`` for a revolute joint, mimics included), so all of them come from one
    matrix product with q, and ``C_k M_k`` is linear in the 16 products of the rotation's unit
    quaternion (w, x, y, z) (plus the slide of a prismatic joint): every node's local transform
    is one batched product with precomputed bases.

    The descent's trials call this for one to thousands of configurations per iteration, so
    per-call overhead counts for small batches and flops per configuration for large ones: small
    batches compose the frames by pointer jumping (each node's frame times its ancestor's 2^r
    levels up, in log-depth rounds of one product each: a Hillis-Steele scan on a serial path),
    larger ones node by node with the configurations along the last axis. Each effector's
    Jacobian columns (a 1-DoF joint's axis, a ball joint's three angular-velocity columns) are
    gathered into one array and crossed with their levers at once. Every operation on a
    configuration is elementwise or a product within its own row, so a row's answer does not
    depend on the rows batched with it (within one composition path; the two paths agree to
    rounding), and the Jacobians of some rows of a batch equal the batch's rows bit for bit.
    """

    def __init__(self, skeleton: Skeleton, effector_ids: Sequence[int]) -> None:
        used = sorted({i for e in effector_ids for i in skeleton.ancestors(skeleton.effectors[e].joint)})
        dof = self.dof = skeleton.dof
        C, parents, kinds = [], [], []
        # r = q @ turn + twist (P, 3 n) and the slides q @ slide + shift (P, n).
        turn, twist, slide, shift = [], [], [], []
        # Per joint: its nearest moving ancestor node (itself if moving; -1: none) and the
        # transform from that node's frame to the joint's frame after its motion.
        carried: dict[int, tuple[int, np.ndarray]] = {}
        for i in used:
            joint = skeleton.joints[i]
            node, pending = carried[joint.parent] if joint.parent >= 0 else (-1, _EYE4)
            pending = pending @ joint.origin
            if joint.kind is JointKind.FIXED:
                carried[i] = (node, pending)
                continue
            Q = _EYE4 if joint.kind is JointKind.BALL else _z_to_axis(joint.axis)
            C.append(pending @ Q)
            parents.append(node)
            kinds.append(joint.kind)
            src = skeleton.mimic_source[i] if joint.mimic is not None else i
            col = int(skeleton.q_index[src])
            gain = joint.mimic.multiplier if joint.mimic is not None else 1.0
            bias = joint.mimic.offset if joint.mimic is not None else 0.0
            A, a = np.zeros((dof, 3)), np.zeros(3)
            S, s = np.zeros(dof), 0.0
            if joint.kind is JointKind.BALL:
                A[col : col + 3] = np.eye(3)
            elif joint.kind is JointKind.PRISMATIC:
                S[col], s = gain, bias
            else:
                A[col, 2], a[2] = gain, bias
            turn.append(A)
            twist.append(a)
            slide.append(S)
            shift.append(s)
            carried[i] = (len(C) - 1, Q.T)
        n = self.n = len(C)
        self.parents = np.array(parents, dtype=int)
        self._turn = np.array(turn).reshape(n, dof, 3).transpose(1, 0, 2).reshape(dof, 3 * n)
        self._twist = np.array(twist).reshape(3 * n) if np.any(twist) else None
        is_pri = np.array([k is JointKind.PRISMATIC for k in kinds], dtype=bool)
        self._slide = np.array(slide).reshape(n, dof).T[:, is_pri] if is_pri.any() else None
        self._shift = np.array(shift)[is_pri]
        self.ball = np.flatnonzero([k is JointKind.BALL for k in kinds])
        self.pri = np.flatnonzero(is_pri)
        # Node k's local transform, flattened: X_k @ basis[k] + base[k], with X_k the outer
        # product of its quaternion (16,), then its slide if any node slides.
        C = np.array(C).reshape(n, 4, 4)
        embedded = np.zeros((16, 4, 4))
        embedded[:, :3, :3] = _QUAT_BASIS
        rows = 17 if len(self.pri) else 16
        basis = np.zeros((n, rows, 4, 4))
        basis[:, :16] = C[:, None] @ embedded
        if len(self.pri):
            basis[self.pri, 16] = C[self.pri] @ _TZ1
        self._basis = basis.reshape(n, rows, 16)
        self._base = (C @ np.diag([0.0, 0.0, 0.0, 1.0])).reshape(n, 1, 16)
        # Pointer jumping: in each round, every node with an ancestor 2^r levels up takes that
        # ancestor's frame times its own. A serial path uses slices (a Hillis-Steele scan).
        self.serial = bool(np.array_equal(self.parents, np.arange(n) - 1))
        self._rounds: list[tuple] = []
        up = self.parents.copy()  # ancestor 2^r levels up (-1: none)
        while np.any(up >= 0):
            take = np.flatnonzero(up >= 0)
            if self.serial:
                self._rounds.append((slice(int(take[0]), n), slice(0, n - int(take[0]))))
            else:
                self._rounds.append((take, up[take]))
            up = np.where(up >= 0, up[np.maximum(up, 0)], -1)
        self._C = C
        self._CT = np.ascontiguousarray(C.swapaxes(-1, -2))
        # Per node in order: its place, its parent's, and the place of its slide among the
        # prismatic nodes (-1: it rotates).
        slides = {int(k): i for i, k in enumerate(self.pri)}
        self._steps = [(k, int(self.parents[k]), slides.get(k, -1)) for k in range(n)]
        # Per effector: its node (-1: above every moving joint), its offset from that node's
        # frame, and where its Jacobian columns come from and go.
        self.effectors = []
        for e in effector_ids:
            eff = skeleton.effectors[e]
            node, pending = carried[eff.joint]
            chain, k = [], node
            while k >= 0:
                chain.append(k)
                k = int(self.parents[k])
            self.effectors.append((node, pending @ eff.offset, self._layout(np.array(sorted(chain), dtype=int))))

    def _layout(self, nodes: np.ndarray) -> dict:
        """Where the Jacobian columns of the nodes ``nodes`` (one effector's, sorted) come from and go.

        Its columns follow the nodes, three per ball joint. The dict holds ``m`` (their number),
        ``nodes`` (None for all nodes), ``lever`` (each column's place in ``nodes``), the places
        and columns of the 1-DoF nodes (``axis_at``, ``axis_cols``), of the balls (``ball_at``,
        ``ball_cols``, three each), the prismatic columns (``slide``), and the map onto q: both
        ``columns`` and ``scatter`` None (identity), ``columns`` (m,) q columns (each its own,
        multiplier 1) or ``scatter`` (m, dof) (mimics add multiplier times their column).
        """
        is_ball = np.isin(nodes, self.ball)
        width = np.where(is_ball, 3, 1)
        start = np.concatenate([[0], np.cumsum(width)[:-1]]).astype(int)
        m = int(width.sum())
        axis_at, ball_at = np.flatnonzero(~is_ball), np.flatnonzero(is_ball)
        out = {
            "m": m,
            "nodes": None if np.array_equal(nodes, np.arange(self.n)) else nodes,
            "lever": np.repeat(np.arange(len(nodes)), width),
            "axis_at": axis_at,
            "axis_cols": start[axis_at],
            "ball_at": ball_at,
            "ball_cols": (start[ball_at, None] + np.arange(3)).reshape(-1),
            "slide": start[np.flatnonzero(np.isin(nodes, self.pri))],
            "columns": None,
            "scatter": None,
        }
        # A column's q column and multiplier: the rotation vector's (or slide's) derivative.
        T = self._turn.reshape(self.dof, self.n, 3)
        S = np.zeros((m, self.dof))
        for k, node in enumerate(nodes):
            if k in ball_at:
                S[start[k] : start[k] + 3] = T[:, node].T
            elif node in self.pri:
                S[start[k]] = self._slide[:, np.searchsorted(self.pri, node)]
            else:
                S[start[k]] = T[:, node, 2]
        where = np.argmax(S != 0.0, axis=1)
        if m == self.dof and np.array_equal(S, np.eye(m)):
            return out
        single = np.all((S != 0.0).sum(axis=1) == 1) and np.all(S[np.arange(m), where] == 1.0)
        if single and len(set(where.tolist())) == m:
            out["columns"] = where
        else:
            out["scatter"] = S
        return out

    def frames(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World frames of the nodes and their rotations' terms.

        Up to :data:`_SMALL_TREE` configurations, every node's local transform comes from one
        batched product and the frames from log-depth rounds of products (pointer jumping);
        larger batches go through :meth:`_frames_wide`. The two agree to rounding.

        Args:
            q: (P, dof) configurations.

        Returns:
            (n, P, r, 4) node frames after their motion (joint-major; the top r = 4 or 3 rows of
            homogeneous transforms), and (n, P, 6) per node its rotation vector [rad], angle
            [rad] (floored at 1e-300), and the sine and cosine of half the angle.
        """
        P, n = q.shape[0], self.n
        if P > _SMALL_TREE:
            return self._frames_wide(q)
        aux = np.empty((n, P, 6))
        r = q @ self._turn
        if self._twist is not None:
            r += self._twist
        aux[..., :3] = r.reshape(P, n, 3).swapaxes(0, 1)
        r, angle, half = aux[..., :3], aux[..., 3], aux[..., 4:]
        # The floor keeps 0 / 0 away: sin(x) is x below 1e-8, so the quaternion's vector part
        # sin(t / 2) r / t stays r / 2 as the angle vanishes (or underflows).
        np.maximum(np.sqrt(np.einsum("npi,npi->np", r, r)), 1e-300, out=angle)
        np.sin(0.5 * aux[..., 3:4] + QUARTER, out=half)  # sin(t / 2), cos(t / 2) in one call
        quat = np.concatenate([half[..., 1:], r * (half[..., :1] / aux[..., 3:4])], axis=-1)
        X = (quat[..., :, None] * quat[..., None, :]).reshape(n, P, 16)
        if self._slide is not None:
            d = np.zeros((n, P, 1))
            d[self.pri, :, 0] = (q @ self._slide + self._shift).T
            X = np.concatenate([X, d], axis=-1)
        # One product per configuration and node (a whole-batch product would round each row
        # by where it falls in the batch: BLAS kernels differ at the edges).
        L = ((X[:, :, None] @ self._basis[:, None]) + self._base[:, None]).reshape(n, P, 4, 4)
        for dst, src in self._rounds:
            L[dst] = L[src] @ L[dst]
        return L, aux

    def _frames_wide(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`frames` for larger batches: node by node, configurations along the last axis.

        Pointer jumping would multiply more; here the product with the constant ``C_k`` is one
        matrix product and the rotation a broadcast product and a sum, all long elementwise
        loops, and the temporaries are per node so they stay small. Returns the same arrays as
        :meth:`frames` (as transposed views): (n, P, 3, 4) frames and (n, P, 6) terms.
        """
        P, n = q.shape[0], self.n
        aux = np.empty((n, 6, P))
        r = self._turn.T @ q.T
        if self._twist is not None:
            r += self._twist[:, None]
        r = aux[:, :3] = r.reshape(n, 3, P)
        angle = aux[:, 3]
        np.maximum(np.sqrt(np.einsum("nip,nip->np", r, r)), 1e-300, out=angle)
        h = 0.5 * angle
        np.sin(h, out=aux[:, 4])
        np.cos(h, out=aux[:, 5])
        quat = np.empty((n, 4, P))
        quat[:, 0] = aux[:, 5]
        np.multiply(r, (aux[:, 4] / angle)[:, None], out=quat[:, 1:])
        if self._slide is not None:
            d = self._slide.T @ q.T + self._shift[:, None]
        # Rotations from their quaternions' outer products, as elementwise sums (a matrix product
        # would round a configuration by where it falls in the batch): for all nodes at once
        # while that stays small (fewer calls), else node by node (large temporaries cost page
        # faults).
        together = P <= _WIDE_TOGETHER
        if together:
            rotations = _quat_rotations(quat).reshape(n, 1, 3, 3, P)
        F = np.empty((n, 3, 4, P))
        for k, parent, at in self._steps:
            G = F[k]
            if parent < 0:
                G[:] = self._C[k, :3, :, None]
            else:
                np.matmul(self._CT[k], F[parent], out=G)
            if at >= 0:  # a slide
                G[:, 3] += G[:, 2] * d[at]
                continue
            if together:
                R = rotations[k]
            else:
                R = _quat_rotations(quat[k]).reshape(1, 3, 3, P)
            np.add.reduce(G[:, :3, None] * R, axis=1, out=G[:, :3])  # G[:, :3] R, summed over j
        return F.transpose(0, 3, 1, 2), aux.transpose(0, 2, 1)

    def pose(self, F: np.ndarray, which: int) -> np.ndarray:
        """(P, 3, 4) pose of effector ``which`` (its place in the model) from :meth:`frames`'s node frames."""
        node, end, _ = self.effectors[which]
        _, P, rows, _ = F.shape
        if node < 0:
            return np.broadcast_to(end[:3], (P, 3, 4)).copy()
        # The P frames stacked as one (rows P, 4) matrix: one product with the shared offset.
        return (F[node].reshape(rows * P, 4) @ end).reshape(P, rows, 4)[:, :3]

    def jacobian(self, F: np.ndarray, aux: np.ndarray, pose: np.ndarray, which: int) -> np.ndarray:
        """(P, 6, dof) world-frame Jacobian of effector ``which`` (rows: linear, angular).

        Args:
            F: (n, P, r, 4) node frames from :meth:`frames` (or some rows of them).
            aux: (n, P, 6) the rotation terms from :meth:`frames` (the same rows).
            pose: (P, 3, 4) the effector's pose in those frames.
            which: The effector's place in the model.
        """
        lay = self.effectors[which][2]
        P, m = F.shape[1], lay["m"]
        if m == 0:
            return np.zeros((P, 6, self.dof))
        if lay["nodes"] is not None:
            F, aux = F[lay["nodes"]], aux[lay["nodes"]]
        # Angular columns: a 1-DoF node's axis is its frame's z; a ball's three are W = R J_r(v)
        # with R its frame after the motion (the right Jacobian J_r(v) = J_l(-v) =
        # I - b K + c K^2, K = [v]x, takes R_pre J_l(v)'s place without R_pre).
        Z = np.empty((m, P, 3))
        if len(lay["axis_at"]):
            Z[lay["axis_cols"]] = F[lay["axis_at"], :, :3, 2]
        if len(lay["ball_at"]):
            ball = aux[lay["ball_at"]]
            v, t, s, c = ball[..., :3], ball[..., 3], ball[..., 4], ball[..., 5]
            t2 = t * t
            # (t - sin t) / t^3 loses its digits as t -> 0: its series below 1e-4 rad.
            small = t < 1e-4
            ts = np.where(small, 1.0, t)
            cubic = np.where(small, 1.0 / 6.0 - t2 / 120.0, (ts - 2.0 * s * c) / (ts * ts * ts))
            g = s / t  # b = (1 - cos t) / t^2 = 2 g^2, exact at any angle
            Y = np.empty((*t.shape, 13))
            Y[..., 0] = 1.0 - cubic * t2
            np.multiply(v, (-2.0 * g * g)[..., None], out=Y[..., 1:4])
            Y[..., 4:] = ((cubic[..., None] * v)[..., :, None] * v[..., None, :]).reshape(*t.shape, 9)
            W = F[lay["ball_at"], :, :3, :3] @ (Y @ _RIGHT_JACOBIAN_BASIS).reshape(-1, P, 3, 3)
            Z[lay["ball_cols"]] = W.transpose(0, 3, 1, 2).reshape(-1, P, 3)
        D = (pose[:, :, 3] - F[..., :3, 3])[lay["lever"]]
        J = np.empty((P, 6, m))
        if P <= _SMALL_JACOBIAN:
            # z x d as one product with the Levi-Civita tensor (few calls); its sums hold one
            # product each way and exact zeros, so it rounds as the component-wise form below.
            lin = (Z[..., :, None] * D[..., None, :]).reshape(m, P, 9) @ LEVI_CIVITA
            J[:, :3] = lin.transpose(1, 2, 0)
        else:
            zx, zy, zz = Z[..., 0], Z[..., 1], Z[..., 2]
            dx, dy, dz = D[..., 0], D[..., 1], D[..., 2]
            J[:, 0] = (zy * dz - zz * dy).T
            J[:, 1] = (zz * dx - zx * dz).T
            J[:, 2] = (zx * dy - zy * dx).T
        J[:, 3:] = Z.transpose(1, 2, 0)
        if len(lay["slide"]):
            J[:, :3, lay["slide"]] = J[:, 3:, lay["slide"]]
            J[:, 3:, lay["slide"]] = 0.0
        if lay["scatter"] is not None:
            return J @ lay["scatter"]
        if lay["columns"] is not None:
            out = np.zeros((P, 6, self.dof))
            out[:, :, lay["columns"]] = J
            return out
        return J


def _quat_rotations(quat: np.ndarray) -> np.ndarray:
    """(..., 9, P) flattened rotation matrices of unit quaternions (..., 4, P) (w, x, y, z).

    Each entry sums at most four products of two components, in a fixed order, so every
    configuration (last axis) rounds the same whatever the batch.
    """
    outer = (quat[..., :, None, :] * quat[..., None, :, :]).reshape(*quat.shape[:-2], 16, quat.shape[-1])
    return np.add.reduce(outer[..., _QUAT_TERMS, :] * _QUAT_COEFFICIENTS, axis=-3)


class EffectorModel:
    """Poses and Jacobians of several effectors, batched over configurations.

    Uses precompiled chains when every joint between the root and each effector is fixed or
    1-DoF (revolute, continuous, prismatic, mimics included), the generic
    :mod:`ik_core.model.kinematics` otherwise (ball joints).

    Args:
        skeleton: The skeleton.
        effector_ids: Effector indices.
    """

    def __init__(self, skeleton: Skeleton, effector_ids: Sequence[int]) -> None:
        self.skeleton = skeleton
        self.effector_ids = tuple(effector_ids)
        fast = all(
            skeleton.joints[i].kind is not JointKind.BALL
            for e in self.effector_ids
            for i in skeleton.ancestors(skeleton.effectors[e].joint)
        )
        self.chains = [_Chain(skeleton, e) for e in self.effector_ids] if fast else None
        self._tree = None if fast else _Tree(skeleton, self.effector_ids)

    def poses(self, q: np.ndarray) -> np.ndarray:
        """(P, E, 3, 4) effector poses (top rows of the transforms) for configurations q (P, dof)."""
        return self.poses_and_frames(q)[0]

    def poses_and_frames(self, q: np.ndarray) -> tuple[np.ndarray, tuple]:
        """(P, E, 3, 4) effector poses for q (P, dof), and the joint frames they came from.

        The frames let :meth:`jacobians_at` give the Jacobians of a few of the configurations
        later without computing their frames again: a search that tries many steps and keeps
        few needs the Jacobians of the kept ones only.
        """
        if self.chains is None:
            frames = self._tree.frames(q)
            n = len(self.effector_ids)
            poses = self._tree.pose(frames[0], 0)[:, None] if n == 1 else np.stack(
                [self._tree.pose(frames[0], k) for k in range(n)], axis=1
            )
            # The poses ride along: the Jacobians' levers then come from the very same numbers.
            return poses, (*frames, poses)
        out = [ch.frames(q) for ch in self.chains]
        poses = out[0][1][:, None] if len(out) == 1 else np.stack([p for _, p in out], axis=1)
        return poses, tuple(out)

    def jacobians_at(self, frames: tuple, rows: np.ndarray) -> np.ndarray:
        """(R, E, 6, dof) Jacobians of the configurations ``rows`` (R,) of a :meth:`poses_and_frames` call."""
        if self.chains is None:
            F, aux, poses = frames
            F, aux, poses = F[:, rows], aux[:, rows], poses[rows]
            if len(self.effector_ids) == 1:
                return self._tree.jacobian(F, aux, poses[:, 0], 0)[:, None]
            return np.stack([self._tree.jacobian(F, aux, poses[:, k], k) for k in range(poses.shape[1])], axis=1)
        return np.stack([ch.jacobian(T[:, rows], p[rows]) for ch, (T, p) in zip(self.chains, frames)], axis=1)

    def poses_and_jacobians(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(P, E, 3, 4) effector poses and (P, E, 6, dof) Jacobians for q (P, dof)."""
        if self.chains is None:
            F, aux = self._tree.frames(q)
            poses = [self._tree.pose(F, k) for k in range(len(self.effector_ids))]
            J = [self._tree.jacobian(F, aux, p, k) for k, p in enumerate(poses)]
            if len(poses) == 1:
                return poses[0][:, None], J[0][:, None]
            return np.stack(poses, axis=1), np.stack(J, axis=1)
        if len(self.chains) == 1:
            T, pose = self.chains[0].frames(q)
            return pose[:, None], self.chains[0].jacobian(T, pose)[:, None]
        out = [ch.frames(q) for ch in self.chains]
        poses = np.stack([p for _, p in out], axis=1)
        J = np.stack([ch.jacobian(T, p) for ch, (T, p) in zip(self.chains, out)], axis=1)
        return poses, J


def rotation_log(R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rotation vectors (P, 3) [rad] and angles (P,) in [0, pi] of rotations R (..., 3, 3).

    Leading axes of ``R`` are flattened into P. The angle comes from atan2 of the skew and
    trace parts, exact to ~1e-16 rad at both ends; near pi the axis is read from the
    symmetric part, where the skew part vanishes.
    """
    R = R.reshape(-1, 3, 3)
    parts = R.reshape(-1, 9) @ LOG_PARTS
    v = parts[:, :3]  # 2 sin(theta) axis
    c2 = parts[:, 3] - 1.0  # 2 cos(theta)
    sn = np.hypot.reduce(v, -1)
    angle = np.arctan2(sn, c2)
    # theta / (2 sin theta) stays exact as theta -> 0; where sn is 0, v is 0 too.
    w = v * (angle / np.maximum(sn, 1e-300))[:, None]
    near_pi = c2 < -1.98
    if near_pi.any():
        idx = np.nonzero(near_pi)[0]
        Rn = R[idx]
        cos = 0.5 * c2[idx]
        # Symmetric part = cos I + (1 - cos) a a^T: its largest diagonal picks a well-conditioned column.
        B = 0.5 * (Rn + np.swapaxes(Rn, -1, -2)) - cos[:, None, None] * _EYE3
        # Plain ufuncs and indexing rather than einsum / linalg.norm: this runs in the
        # iterations of small batches, where per-call overhead is the cost.
        k = np.argmax(B.reshape(-1, 9)[:, ::4], axis=-1)
        a = B[np.arange(len(idx)), :, k]
        a = a / np.sqrt(np.add.reduce(a * a, -1))[:, None]
        sign = np.where(np.add.reduce(a * v[idx], -1) < 0.0, -1.0, 1.0)
        w[idx] = a * (sign * angle[idx])[:, None]
    return w, angle


# Component orders of the cross product a x b = a[_C1] b[_C2] - a[_C2] b[_C1].
_C1, _C2 = np.array([1, 2, 0]), np.array([2, 0, 1])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross products over the last axis; far cheaper than ``np.cross`` on small arrays."""
    return a[..., _C1] * b[..., _C2] - a[..., _C2] * b[..., _C1]


def aim_residual(
    poses: np.ndarray, dp: np.ndarray, b: np.ndarray, J: np.ndarray | None, aim_axis: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Error rows, Jacobians and worst angle of the DLS solver's "aim" mode.

    Args:
        poses: (P, E, 3, 4) effector poses.
        dp: (P, E, 3) position errors [m].
        b: (P, E, 3) unit target aim directions.
        J: Optional (P, E, 6, dof) Jacobians.
        aim_axis: (3,) unit aim axis in the effector frame.

    Returns:
        Errors (P, E, 6) [m, rad], Jacobians (P, E, 6, dof) or None, worst angle (P,) [rad].
    """
    a = poses[..., :3] @ aim_axis
    cross = _cross(a, b)
    sn = np.hypot.reduce(cross, -1)
    angle = np.arctan2(sn, np.add.reduce(a * b, -1))
    flip = sn < 1e-12
    if flip.any():
        # Opposite axes: any perpendicular rotation axis works; take one through a helper.
        helper = np.where(np.abs(a[..., :1]) < 0.9, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
        alt = _cross(a, helper)
        cross = np.where(flip[..., None], alt, cross)
        sn = np.where(flip, np.linalg.norm(alt, axis=-1), sn)
    w = cross * (angle / np.maximum(sn, 1e-300))[..., None]
    Jr = None
    if J is not None:
        # Spinning about the effector's own aim axis leaves the error unchanged: drop it.
        Jang = J[:, :, 3:]
        Jang = Jang - a[..., :, None] * (a[..., None, :] @ Jang)
        Jr = np.concatenate([J[:, :, :3], Jang], axis=2)
    return np.concatenate([dp, w], axis=-1), Jr, angle.max(axis=1)
