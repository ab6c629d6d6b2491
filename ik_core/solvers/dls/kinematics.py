# SPDX-License-Identifier: GPL-3.0-or-later
"""Effector poses and Jacobians for the DLS solver: a precompiled fast path for chains of 1-DoF joints."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...model.kinematics import ball_left_jacobian
from ...model.rotation_kernels import rotvec_to_matrix_unchecked
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

    The joints' local transforms are built together per kind (one batched product each), the
    world frames by one product per joint, and each effector's Jacobian column block per kind
    with a few batched products: what :func:`~ik_core.model.kinematics.jacobian` computes joint
    by joint, at a fraction of the calls.

    The descent's trials call this for a few to a few hundred configurations per iteration, so
    per-call overhead counts: everything that does not depend on q is prepared here, the local
    transforms are stored by kind in contiguous blocks (basic slices, not fancy-index
    assignments), and frames are joint-major so each joint's frames are one contiguous block.
    The floating-point operations on q are exactly the ones of the plain formulation (the same
    batched matrix products, the same elementwise sums), so answers stay bit for bit the same.
    """

    def __init__(self, skeleton: Skeleton, effector_ids: Sequence[int]) -> None:
        used = sorted({i for e in effector_ids for i in skeleton.ancestors(skeleton.effectors[e].joint)})
        self.joints = np.array(used, dtype=int)
        position = {j: k for k, j in enumerate(used)}
        joints = [skeleton.joints[i] for i in used]
        # Parents as positions in ``used`` (roots: -1).
        self.parents = [position[j.parent] if j.parent >= 0 else -1 for j in joints]
        self.origins = np.array([j.origin for j in joints]).reshape(-1, 4, 4)
        kinds = [j.kind for j in joints]
        self.rot = np.array([k for k, kind in enumerate(kinds) if kind in _ROTATING], dtype=int)
        self.pri = np.array([k for k, kind in enumerate(kinds) if kind is JointKind.PRISMATIC], dtype=int)
        self.ball = np.array([k for k, kind in enumerate(kinds) if kind is JointKind.BALL], dtype=int)
        self.axes = np.array([j.axis for j in joints]).reshape(-1, 3)
        dof = skeleton.dof
        # Value of a 1-DoF joint: q[col] * mult + offset (mimics follow their source's column).
        col, mult, offset = [], [], []
        for i, j in zip(used, joints):
            src = skeleton.mimic_source[i] if j.mimic is not None else i
            col.append(max(int(skeleton.q_index[src]), 0))
            mult.append(j.mimic.multiplier if j.mimic is not None else 1.0)
            offset.append(j.mimic.offset if j.mimic is not None else 0.0)
        self.col, self.mult, self.offset = np.array(col), np.array(mult), np.array(offset)
        self.ball_cols = (np.array(col)[self.ball][:, None] + np.arange(3)).reshape(-1, 3)
        # Identity stand-in frame for a root's parent, at position len(used).
        self.ball_parents = np.array(
            [self.parents[k] if self.parents[k] >= 0 else len(used) for k in self.ball], dtype=int
        )
        # Local transforms are stored kind by kind (balls, rotating, prismatic, the rest):
        # ``slot[k]`` is joint k's place in that order.
        others = [k for k in range(len(used)) if k not in set(self.ball) | set(self.rot) | set(self.pri)]
        order = [*self.ball, *self.rot, *self.pri, *others]
        slot = np.empty(len(used), dtype=int)
        slot[order] = np.arange(len(used))
        self._slotted_origins = self.origins[order]
        nb, nr, npri = len(self.ball), len(self.rot), len(self.pri)
        self._ball_slots, self._rot_slots = slice(0, nb), slice(nb, nb + nr)
        self._pri_slots = slice(nb + nr, nb + nr + npri)
        self._steps = [(k, parent, int(slot[k])) for k, parent in enumerate(self.parents)]
        self._ball_origin_R = self.origins[self.ball, :3, :3]
        # Rotating joints: R = I + sin(v) K + (1 - cos(v)) K K, flattened to 9 entries per joint.
        K = np.array([_skew_of(a) for a in self.axes[self.rot]]).reshape(-1, 3, 3)
        self._rot_K = K.reshape(-1, 1, 9)
        self._rot_KK = (K @ K).reshape(-1, 1, 9)
        self._eye9 = np.eye(3).reshape(9)
        self._rot_cols, self._pri_cols = self.col[self.rot], self.col[self.pri]
        self._rot_plain = bool(np.all(self.mult[self.rot] == 1.0) and np.all(self.offset[self.rot] == 0.0))
        self._pri_plain = bool(np.all(self.mult[self.pri] == 1.0) and np.all(self.offset[self.pri] == 0.0))
        # I @ R is R bit for bit (R's zeros are +0), so identity origins skip the product.
        self._rot_origin_R = None
        if not all(np.array_equal(self.origins[k, :3, :3], np.eye(3)) for k in self.rot):
            self._rot_origin_R = self.origins[self.rot, :3, :3][:, None]
        self._pri_along = np.einsum("kij,kj->ki", self.origins[self.pri, :3, :3], self.axes[self.pri])[:, None]
        self._pri_origin_t = self.origins[self.pri, :3, 3][:, None]
        # A rotating joint whose axis is a coordinate axis turns about that column of its frame:
        # read it instead of multiplying by the axis (the products add only zeros).
        unit = [np.flatnonzero(a) for a in self.axes[self.rot]]
        self._rot_axis_column = None
        if all(len(u) == 1 and self.axes[k, u[0]] == 1.0 for k, u in zip(self.rot, unit)):
            self._rot_axis_column = np.array([int(u[0]) for u in unit], dtype=int)
        # Per effector: its joint's position, offset, and per kind the ancestor positions and
        # their scatter onto q columns (mimic multipliers included); ``columns`` when each of
        # them is its own q column with multiplier 1 (the scatter is then a plain copy).
        self.effectors = []
        for e in effector_ids:
            eff = skeleton.effectors[e]
            anc = {position[i] for i in skeleton.ancestors(eff.joint)}
            parts = []
            for group in (self.rot, self.pri):
                keep = np.array([k for k in group if k in anc], dtype=int)
                S = np.zeros((len(keep), dof))
                for r, k in enumerate(keep):
                    S[r, self.col[k]] += self.mult[k]
                columns = np.array([self.col[k] for k in keep], dtype=int)
                plain = len(set(columns.tolist())) == len(keep) and np.all(S[np.arange(len(keep)), columns] == 1.0)
                place = np.searchsorted(group, keep)  # their places among the group's joints
                parts.append((keep, S, columns if plain else None, place))
            balls = np.array([b for b, k in enumerate(self.ball) if k in anc], dtype=int)
            self.effectors.append((position[eff.joint], eff.offset, parts, balls))
        self.dof = dof

    def frames(self, q: np.ndarray) -> np.ndarray:
        """(n + 1, P, 4, 4) world frames of the used joints (after their motion), then an identity.

        Joint-major: ``F[k]`` holds joint k's frames for the P configurations q (P, dof).
        """
        P, n = q.shape[0], len(self.parents)
        local = np.empty((n, P, 4, 4))
        local[:] = self._slotted_origins[:, None]
        if len(self.rot):
            v = q[:, self._rot_cols].T
            if not self._rot_plain:
                v = v * self.mult[self.rot, None] + self.offset[self.rot, None]
            R = self._eye9 + np.sin(v)[..., None] * self._rot_K + (1.0 - np.cos(v))[..., None] * self._rot_KK
            R = R.reshape(len(self.rot), P, 3, 3)
            if self._rot_origin_R is not None:
                R = self._rot_origin_R @ R
            local[self._rot_slots, :, :3, :3] = R
        if len(self.pri):
            v = q[:, self._pri_cols].T
            if not self._pri_plain:
                v = v * self.mult[self.pri, None] + self.offset[self.pri, None]
            local[self._pri_slots, :, :3, 3] = self._pri_origin_t + v[..., None] * self._pri_along
        if len(self.ball):
            R = rotvec_to_matrix_unchecked(q[:, self.ball_cols].swapaxes(0, 1))  # (B, P, 3, 3)
            # Each joint's origin times all its P rotations side by side: one matrix product per
            # joint instead of one per configuration (the same sums, so the same bits).
            # Sizes named, not inferred (-1): an empty batch (P = 0) has none to infer them from.
            balls = len(self.ball)
            wide = R.transpose(0, 2, 1, 3).reshape(balls, 3, 3 * P)
            turned = (self._ball_origin_R @ wide).reshape(balls, 3, P, 3)
            local[self._ball_slots, :, :3, :3] = turned.transpose(0, 2, 1, 3)
        F = np.empty((n + 1, P, 4, 4))
        F[n] = _EYE4
        for k, parent, slot in self._steps:
            if parent < 0:
                F[k] = local[slot]
            else:
                np.matmul(F[parent], local[slot], out=F[k])
        return F

    def pose(self, F: np.ndarray, which: int) -> np.ndarray:
        """(P, 3, 4) pose of effector ``which`` (its place in the model) from :meth:`frames` output."""
        joint, offset, _, _ = self.effectors[which]
        # The P frames stacked as one (4 P, 4) matrix: one product with the shared offset.
        P = F.shape[1]
        return (F[joint].reshape(4 * P, 4) @ offset).reshape(P, 4, 4)[:, :3, :]

    def pose_and_jacobian(self, F: np.ndarray, q: np.ndarray, which: int) -> tuple[np.ndarray, np.ndarray]:
        """(P, 3, 4) pose and (P, 6, dof) Jacobian of effector ``which`` (its place in the model)."""
        _, _, ((rot, S_rot, rot_cols, rot_place), (pri, S_pri, pri_cols, _)), balls = self.effectors[which]
        pose = self.pose(F, which)
        p = pose[:, :, 3]
        J = np.zeros((q.shape[0], 6, self.dof))
        if len(rot):
            if self._rot_axis_column is not None:
                z = F[rot, :, :3, self._rot_axis_column[rot_place]]
            else:
                z = np.einsum("kpij,kj->kpi", F[rot, :, :3, :3], self.axes[rot])
            lin = _cross(z, p - F[rot, :, :3, 3])
            if rot_cols is not None:
                # The scatter is a copy; adding 0.0 makes its zeros positive, as its sum onto zeros did.
                J[:, :3, rot_cols] = lin.transpose(1, 2, 0) + 0.0
                J[:, 3:, rot_cols] = z.transpose(1, 2, 0) + 0.0
            else:
                # The original (P, k, 3) layout, so the sums run in the same order.
                J[:, :3] += np.einsum("pki,kd->pid", np.ascontiguousarray(lin.swapaxes(0, 1)), S_rot)
                J[:, 3:] += np.einsum("pki,kd->pid", np.ascontiguousarray(z.swapaxes(0, 1)), S_rot)
        if len(pri):
            z = np.einsum("kpij,kj->kpi", F[pri, :, :3, :3], self.axes[pri])
            if pri_cols is not None:
                J[:, :3, pri_cols] = z.transpose(1, 2, 0) + 0.0
            else:
                J[:, :3] += np.einsum("pki,kd->pid", np.ascontiguousarray(z.swapaxes(0, 1)), S_pri)
        if len(balls):
            k = self.ball[balls]
            # Angular velocity of exp(v) in the pre-motion frame is J_l(v) v_dot.
            P = q.shape[0]
            # Each parent's P frames stacked (3 P, 3) times the joint's origin: one product per joint.
            B = len(balls)
            R_pre = (F[self.ball_parents[balls], :, :3, :3].reshape(B, 3 * P, 3) @ self.origins[k, :3, :3])
            R_pre = R_pre.reshape(B, P, 3, 3)
            W = R_pre @ ball_left_jacobian(q[:, self.ball_cols[balls]].swapaxes(0, 1))  # (B, P, 3, 3)
            lever = p - F[k, :, :3, 3]
            lin = _cross(W.swapaxes(-1, -2), lever[:, :, None, :]).swapaxes(-1, -2)
            cols = self.ball_cols[balls].reshape(-1)
            J[:, :3, cols] = lin.transpose(1, 2, 0, 3).reshape(P, 3, 3 * B)
            J[:, 3:, cols] = W.transpose(1, 2, 0, 3).reshape(P, 3, 3 * B)
        return pose, J


def _skew_of(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


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
            F = self._tree.frames(q)
            n = len(self.effector_ids)
            poses = self._tree.pose(F, 0)[:, None] if n == 1 else np.stack(
                [self._tree.pose(F, k) for k in range(n)], axis=1
            )
            return poses, (F, q)
        out = [ch.frames(q) for ch in self.chains]
        poses = out[0][1][:, None] if len(out) == 1 else np.stack([p for _, p in out], axis=1)
        return poses, tuple(out)

    def jacobians_at(self, frames: tuple, rows: np.ndarray) -> np.ndarray:
        """(R, E, 6, dof) Jacobians of the configurations ``rows`` (R,) of a :meth:`poses_and_frames` call."""
        if self.chains is None:
            F, q = frames
            Fr, qr = F[:, rows], q[rows]
            if len(self.effector_ids) == 1:
                return self._tree.pose_and_jacobian(Fr, qr, 0)[1][:, None]
            return np.stack(
                [self._tree.pose_and_jacobian(Fr, qr, k)[1] for k in range(len(self.effector_ids))], axis=1
            )
        return np.stack([ch.jacobian(T[:, rows], p[rows]) for ch, (T, p) in zip(self.chains, frames)], axis=1)

    def poses_and_jacobians(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(P, E, 3, 4) effector poses and (P, E, 6, dof) Jacobians for q (P, dof)."""
        if self.chains is None:
            F = self._tree.frames(q)
            out = [self._tree.pose_and_jacobian(F, q, k) for k in range(len(self.effector_ids))]
            if len(out) == 1:
                return out[0][0][:, None], out[0][1][:, None]
            return np.stack([p for p, _ in out], axis=1), np.stack([J for _, J in out], axis=1)
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
