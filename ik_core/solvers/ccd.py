# SPDX-License-Identifier: GPL-3.0-or-later
"""Cyclic coordinate descent: each joint in turn, tip to root, takes its closed-form best step."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InvalidInputError
from ..limits import project_configuration
from ..model.kinematics import effector_poses, forward_kinematics
from ..model.rotations import matrix_to_rotvec, rotation_error
from ..model.skeleton import Joint, JointKind, Skeleton
from .base import Solver, Targets
from .reach import stretch_toward

# Joint updates smaller than this [rad or m] mean the sweep changed nothing: the target is stuck.
_STALL = 1e-12
# Singular-value ratio below which the point pairs of a ball joint pin only one direction.
_RANK_EPS = 1e-10
# Sweeps a target beyond its effector's reach gets at most, the first (up to half of them)
# stretching its chain toward it (see reach.stretch_toward): no sweep brings it within tolerance.
REACH_SWEEPS = 20


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product over the last axis; np.cross's axis shuffling costs more than the maths."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


LEVI_CIVITA = np.zeros((3, 3, 3))
LEVI_CIVITA[0, 1, 2] = LEVI_CIVITA[1, 2, 0] = LEVI_CIVITA[2, 0, 1] = 1.0
LEVI_CIVITA[0, 2, 1] = LEVI_CIVITA[2, 1, 0] = LEVI_CIVITA[1, 0, 2] = -1.0


def _rotation_about(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotations about unit world axes (n, 3) by angles (n,) [rad] (Rodrigues)."""
    K = -np.einsum("ijk,nk->nij", LEVI_CIVITA, axis)  # cross-product matrices
    s = np.sin(angle)[..., None, None]
    c = np.cos(angle)[..., None, None]
    return c * np.eye(3) + s * K + (1.0 - c) * (axis[..., :, None] * axis[..., None, :])


def _quat(v: np.ndarray) -> np.ndarray:
    """(n, 4) unit quaternions (w, x, y, z) of rotation vectors (n, 3) (unchecked, inner loop)."""
    angle = np.sqrt(np.sum(v * v, axis=-1, keepdims=True))
    scale = np.sin(0.5 * angle) / np.where(angle > 0, angle, 1.0)  # v = 0 makes the scale moot
    return np.concatenate([np.cos(0.5 * angle), scale * v], axis=-1)


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton products a * b of (n, 4) quaternions."""
    aw, av = a[:, :1], a[:, 1:]
    bw, bv = b[:, :1], b[:, 1:]
    w = aw * bw - np.sum(av * bv, axis=-1, keepdims=True)
    return np.concatenate([w, aw * bv + bw * av + _cross(av, bv)], axis=-1)


def _rotvec(q: np.ndarray) -> np.ndarray:
    """(n, 3) rotation vectors with norm in [0, pi] of (n, 4) unit quaternions."""
    q = np.where(q[:, :1] < 0, -q, q)
    s = np.sqrt(np.sum(q[:, 1:] ** 2, axis=-1, keepdims=True))
    # atan2 of the half-angle sine and cosine stays exact at 0 and at pi.
    angle = 2.0 * np.arctan2(s, q[:, :1])
    return q[:, 1:] * np.where(s > 0, angle / np.where(s > 0, s, 1.0), 2.0)


def _qmatrix(q: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotation matrices of (n, 4) unit quaternions."""
    w, v = q[:, :1, None], q[:, 1:]
    K = -np.einsum("ijk,nk->nij", LEVI_CIVITA, v)
    return (2.0 * w * w - 1.0) * np.eye(3) + 2.0 * w * K + 2.0 * (v[:, :, None] * v[:, None, :])


def _any_perpendicular(a: np.ndarray) -> np.ndarray:
    """(n, 3) unit vectors perpendicular to (n, 3) unit vectors ``a`` (deterministic choice)."""
    # Crossing with the basis axis least aligned with ``a`` never gives a short vector.
    basis = np.eye(3)[np.argmin(np.abs(a), axis=-1)]
    p = np.cross(a, basis)
    return p / np.linalg.norm(p, axis=-1, keepdims=True)


def minimal_rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation vectors of the smallest rotations taking the directions of ``a`` onto ``b``.

    Args:
        a: (..., 3) vectors (any non-zero length).
        b: (..., 3) vectors, broadcast against ``a``.

    Returns:
        (..., 3) rotation vectors [rad]; zero where either vector is zero, a rotation by pi
        about an arbitrary perpendicular axis where they are opposite.
    """
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    na = np.sqrt(np.sum(a * a, axis=-1, keepdims=True))
    nb = np.sqrt(np.sum(b * b, axis=-1, keepdims=True))
    ok = (na > 0) & (nb > 0)
    ua = np.where(ok, a / np.where(ok, na, 1.0), 0.0)
    ub = np.where(ok, b / np.where(ok, nb, 1.0), 0.0)
    axis = _cross(ua, ub)
    s = np.sqrt(np.sum(axis * axis, axis=-1, keepdims=True))
    c = np.sum(ua * ub, axis=-1, keepdims=True)
    angle = np.arctan2(s, c)
    unit = axis / np.where(s > 0, s, 1.0)
    # Opposite directions: every perpendicular axis is equally short; pick one deterministically.
    opposite = (s <= 1e-15) & (c < 0)
    if np.any(opposite):
        flat_a = ua.reshape(-1, 3)
        perp = _any_perpendicular(np.where(np.all(flat_a == 0, axis=-1, keepdims=True), 1.0, flat_a))
        unit = np.where(opposite, perp.reshape(ua.shape), unit)
    return np.where(ok, unit * angle, 0.0)


def _best_ball_rotation(A: np.ndarray, B: np.ndarray, w: np.ndarray) -> np.ndarray:
    """World rotation vectors (n, 3) maximising sum_k w_k B_k . (R A_k) (Wahba's problem).

    Args:
        A: (n, P, 3) current vectors from the joint (effector offsets, effector axes).
        B: (n, P, 3) wanted vectors.
        w: (P,) weights.

    Returns:
        (n, 3) rotation vectors [rad]; the minimal rotation when the pairs pin only one
        direction (a single point pair), so no twist is invented.
    """
    if A.shape[1] == 1:
        return minimal_rotation(A[:, 0], B[:, 0])
    M = np.einsum("p,npi,npj->nij", w, B, A)
    U, S, Vt = np.linalg.svd(M)
    d = np.sign(np.linalg.det(U) * np.linalg.det(Vt))
    d = np.where(d == 0, 1.0, d)
    R = (U * np.stack([np.ones_like(d), np.ones_like(d), d], axis=-1)[:, None, :]) @ Vt
    rv = matrix_to_rotvec(R)
    rank1 = S[:, 1] <= _RANK_EPS * S[:, 0]
    if np.any(rank1):
        # With one pinned direction Wahba's optimum is a whole circle; take the minimal rotation.
        rv = np.where(rank1[:, None], minimal_rotation(Vt[:, 0, :], U[:, :, 0]), rv)
    return np.where(S[:, :1] > 0, rv, 0.0)  # nothing to align: stay


class CCDSolver(Solver):
    """Cyclic coordinate descent, vectorised over every target of a batch.

    Each sweep visits the joints above the effectors from the tip to the root and moves each
    to its closed-form best value with every other joint held: revolute and continuous joints
    rotate by the atan2 of the projected effector and target vectors, prismatic joints slide
    to the nearest point, ball joints rotate the effector-to-joint vectors onto the
    target-to-joint vectors (the minimal rotation for one point, Wahba's solution for several).
    In "aim" and "full" modes the effector's aim axis (or its three axes) join the fit as extra
    vector pairs weighted by ``orientation_weight`` times the squared reach of the chain, the
    weighted CCD of Wang and Chen. Every step is scaled by ``1 - stiffness``, capped at
    ``max_step`` and followed by a projection onto the joint limits. Targets that converge or
    stop moving are frozen; the others continue until ``max_iterations`` sweeps. A target
    beyond its effector's reach gets ``REACH_SWEEPS`` sweeps at most (no sweep brings it
    within tolerance); with one effector the first ones, as many as turning a joint by pi
    takes at ``max_step``, run root to tip, each link turned to point at the target, which
    straightens the chain toward it far sooner than tip-to-root sweeps do.

    Args:
        skeleton: The skeleton to pose.
        effectors: Effector name(s) or indices driven by the targets.
        max_step: Largest rotation [rad] a joint may make in one sweep (> 0).
        max_slide: Largest slide [m] a prismatic joint may make in one sweep; ``None``: no cap.
        orientation_weight: Weight of the orientation terms in "aim" and "full" modes (> 0),
            in units of the chain's squared reach: with the default 0.05 a 1 rad error of one
            axis weighs like a position error of about 0.22 reach. Larger favours orientation.
        max_iterations: Sweep budget per target.
        **kwargs: ``mode``, ``tolerance``, ``rotation_tolerance``, ``aim_axis``, see
            :class:`~ik_core.solvers.base.Solver`.

    Raises:
        InvalidInputError: A non-positive or non-finite step cap or weight, or a base option
            out of range.
    """

    name = "ccd"

    def __init__(
        self,
        skeleton: Skeleton,
        effectors: str | int | Sequence[str | int] = 0,
        *,
        max_step: float = 0.5,
        max_slide: float | None = None,
        orientation_weight: float = 0.05,
        max_iterations: int = 200,
        **kwargs: object,
    ) -> None:
        super().__init__(skeleton, effectors, max_iterations=max_iterations, **kwargs)  # type: ignore[arg-type]
        if not (np.isfinite(max_step) and max_step > 0):
            raise InvalidInputError(f"max_step must be a finite angle > 0 rad, got {max_step!r}")
        if max_slide is not None and not max_slide > 0:
            raise InvalidInputError(f"max_slide must be > 0 m or None, got {max_slide!r}")
        if not (np.isfinite(orientation_weight) and orientation_weight > 0):
            raise InvalidInputError(f"orientation_weight must be a finite number > 0, got {orientation_weight!r}")
        self.max_step = float(max_step)
        self.max_slide = np.inf if max_slide is None else float(max_slide)
        self.orientation_weight = float(orientation_weight)
        self._has_mimic = any(j.mimic is not None for j in skeleton.joints)
        # Only a joint's own variables change in a step, so only its own limits can be violated.
        self._limited = [
            j.limit is not None or bool(np.isfinite(j.lower) or np.isfinite(j.upper)) for j in skeleton.joints
        ]
        self._plan()

    # --- precomputation --------------------------------------------------------------------
    def _plan(self) -> None:
        """Joint visiting order, effectors moved by each joint, and orientation weights."""
        skel = self.skeleton
        effs = [skel.effectors[e] for e in self.effector_ids]
        paths = [skel.ancestors(e.joint) for e in effs]
        movable = sorted({i for p in paths for i in p if skel.joints[i].dof})
        self._order = movable[::-1]
        self._downstream = {i: np.array([k for k, p in enumerate(paths) if i in p]) for i in movable}
        reaches = self.reach_bound.lengths
        scale = np.where(np.isfinite(reaches) & (reaches > 0), reaches, 1.0)
        self._rot_weights = self.orientation_weight * scale**2

    # --- the iterations --------------------------------------------------------------------
    def _solve(self, targets: Targets, q0: np.ndarray, **options: object) -> tuple[np.ndarray, np.ndarray]:
        if options:
            raise InvalidInputError(
                f"unknown option(s) {', '.join(sorted(options))} for the ccd solver; it takes none "
                "(set max_step, max_slide and orientation_weight on the solver)"
            )
        batch = targets.batch_shape
        dof = self.skeleton.dof
        n = int(np.prod(batch, dtype=int))
        q = q0.reshape(n, dof).copy()
        effectors = len(self.effector_ids)  # not -1: an empty batch has no size to infer it from
        tp = targets.positions.reshape(n, effectors, 3)
        tr = None if targets.rotations is None else targets.rotations.reshape(n, effectors, 3, 3)
        iterations = np.zeros(n, dtype=int)
        active = np.arange(n)
        stalled = np.zeros(n, dtype=bool)
        # Bounded work for targets beyond reach: sweeps stretching the chain toward the target
        # (root to tip: see stretch_toward), a few to settle, then their best effort stands.
        far = self._beyond(targets).reshape(n) > self.tolerance
        stretched = far if len(self.effector_ids) == 1 else np.zeros(n, dtype=bool)
        passes = min(int(np.ceil(np.pi / self.max_step)), REACH_SWEEPS // 2, self.max_iterations)
        if stretched.any():
            for _ in range(passes):
                q[stretched] = stretch_toward(
                    self.skeleton, q[stretched], self.effector_ids[0], tp[stretched, 0], self.max_step,
                    use_stiffness=True,
                )
        budget = np.where(far, min(REACH_SWEEPS, self.max_iterations), self.max_iterations) - passes * stretched
        sweep = 0
        while active.size:
            frames, pe, re = self._poses(q[active])
            done = self._converged(pe, re, tp[active], None if tr is None else tr[active])
            done |= stalled[active] | (budget[active] <= sweep)
            iterations[active] = sweep
            active, frames, pe, re = active[~done], frames[~done], pe[~done], re[~done]
            if not active.size or sweep >= self.max_iterations:
                break
            q_before = q[active]
            q[active] = self._sweep(q_before.copy(), frames, pe, re, tp[active], None if tr is None else tr[active])
            stalled[active] = np.max(np.abs(q[active] - q_before), axis=-1, initial=0.0) < _STALL
            sweep += 1
        return q.reshape(*batch, dof), (iterations + passes * stretched).reshape(batch)

    def _poses(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Joint frames (n, J, 4, 4), effector positions (n, E, 3) and rotations (n, E, 3, 3)."""
        frames = forward_kinematics(self.skeleton, q)
        poses = effector_poses(self.skeleton, q, list(self.effector_ids), frames=frames)
        return frames, poses[..., :3, 3].copy(), poses[..., :3, :3].copy()

    def _converged(self, pe: np.ndarray, re: np.ndarray, tp: np.ndarray, tr: np.ndarray | None) -> np.ndarray:
        """(n,) True where every effector meets the position and rotation tolerances."""
        ok = np.linalg.norm(pe - tp, axis=-1).max(axis=-1) <= self.tolerance
        if self.mode == "full" and tr is not None:
            ok &= rotation_error(re, tr).max(axis=-1) <= self.rotation_tolerance
        elif self.mode == "aim" and tr is not None:
            a, b = re @ self.aim_axis, tr @ self.aim_axis
            ang = np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, axis=-1))
            ok &= ang.max(axis=-1) <= self.rotation_tolerance
        return ok

    def _pairs(
        self, ds: np.ndarray, origin: np.ndarray, pe: np.ndarray, re: np.ndarray, tp: np.ndarray, tr: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Current and wanted vectors (n, P, 3), weights (P,), and how many are position pairs."""
        A, B, w = pe[:, ds] - origin[:, None], tp[:, ds] - origin[:, None], np.ones(ds.size)
        if tr is None or self.mode == "position":
            return A, B, w, ds.size
        if self.mode == "aim":
            A = [A, re[:, ds] @ self.aim_axis]
            B = [B, tr[:, ds] @ self.aim_axis]
            w = [w, self._rot_weights[ds]]
        else:  # the three axes of the effector frame (columns of its rotation) as unit vectors
            A = [A, np.swapaxes(re[:, ds], -1, -2).reshape(len(pe), -1, 3)]
            B = [B, np.swapaxes(tr[:, ds], -1, -2).reshape(len(pe), -1, 3)]
            w = [w, np.repeat(self._rot_weights[ds], 3)]
        return np.concatenate(A, axis=1), np.concatenate(B, axis=1), np.concatenate(w), ds.size

    def _sweep(
        self, q: np.ndarray, frames: np.ndarray, pe: np.ndarray, re: np.ndarray, tp: np.ndarray, tr: np.ndarray | None
    ) -> np.ndarray:
        """One tip-to-root pass over the active targets; returns the new (n, dof)."""
        skel = self.skeleton
        for i in self._order:
            joint = skel.joints[i]
            s = skel.q_index[i]
            ds = self._downstream[i]
            Ri = frames[:, i, :3, :3]
            origin = frames[:, i, :3, 3]
            A, B, w, n_pos = self._pairs(ds, origin, pe, re, tp, tr)
            keep = 1.0 - joint.stiffness
            q_new = q.copy()
            if joint.kind is JointKind.BALL:
                delta = keep * _best_ball_rotation(A, B, w)
                norm = np.sqrt(np.sum(delta * delta, axis=-1, keepdims=True))
                delta *= np.minimum(1.0, self.max_step / np.where(norm > 0, norm, 1.0))
                local = np.einsum("nji,nj->ni", Ri, delta)  # R_i^T delta: the step in the joint frame
                q_new[:, s : s + 3] = _rotvec(_qmul(_quat(q[:, s : s + 3]), _quat(local)))
            else:
                z = Ri @ joint.axis
                if joint.kind is JointKind.PRISMATIC:
                    step = np.einsum("p,npi,ni->n", w[:n_pos], B[:, :n_pos] - A[:, :n_pos], z) / w[:n_pos].sum()
                    step = np.clip(keep * step, -self.max_slide, self.max_slide)
                else:
                    # Only the components across the axis turn: z.(a x b) and a_perp.b_perp.
                    az, bz = np.einsum("npi,ni->np", A, z), np.einsum("npi,ni->np", B, z)
                    num = np.einsum("p,npi,ni->n", w, _cross(A, B), z)
                    den = np.einsum("p,npi,npi->n", w, A, B) - np.einsum("p,np,np->n", w, az, bz)
                    step = np.clip(keep * np.arctan2(num, den), -self.max_step, self.max_step)
                q_new[:, s] += step
            if self._limited[i]:
                q_new = project_configuration(skel, q_new)
            if self._has_mimic:
                # A mimic joint elsewhere may have moved: no incremental update is exact.
                frames, pe_new, re_new = self._poses(q_new)
                pe[...], re[...] = pe_new, re_new
                q = q_new
                continue
            self._move_effectors(joint, s, ds, q, q_new, Ri, origin, pe, re)
            q = q_new
        return q

    def _move_effectors(
        self, joint: Joint, s: int, ds: np.ndarray, q_old: np.ndarray, q_new: np.ndarray,
        Ri: np.ndarray, origin: np.ndarray, pe: np.ndarray, re: np.ndarray,
    ) -> None:
        """Apply the joint's actual (post-limit) world motion to the effectors below it, in place."""
        rel = pe[:, ds] - origin[:, None]
        if joint.kind is JointKind.BALL:
            # World motion R_pre exp(v_new) (R_pre exp(v_old))^T, where R_pre exp(v_old) = R_i.
            conj = _quat(q_old[:, s : s + 3]) * np.array([1.0, -1.0, -1.0, -1.0])
            D = Ri @ _qmatrix(_qmul(conj, _quat(q_new[:, s : s + 3]))) @ np.swapaxes(Ri, -1, -2)
            pe[:, ds] = origin[:, None] + np.einsum("nij,nej->nei", D, rel)
            if self.mode != "position":
                re[:, ds] = D[:, None] @ re[:, ds]
            return
        z = Ri @ joint.axis
        if joint.kind is JointKind.PRISMATIC:
            pe[:, ds] += (q_new[:, s] - q_old[:, s])[:, None, None] * z[:, None, :]
            return
        angle = q_new[:, s] - q_old[:, s]
        c, sn = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
        zz = z[:, None, :]
        # Rodrigues on the vectors directly: cheaper than building matrices in position mode.
        pe[:, ds] = origin[:, None] + (
            rel * c + _cross(zz, rel) * sn + zz * np.sum(zz * rel, axis=-1, keepdims=True) * (1.0 - c)
        )
        if self.mode != "position":
            re[:, ds] = _rotation_about(z, angle)[:, None] @ re[:, ds]

    # --- reporting -------------------------------------------------------------------------
    def reach(self) -> np.ndarray:
        """(E,) upper bound [m] on how far each effector gets from its chain's first moving joint."""
        return self.reach_bound.lengths.copy()
