# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of forward kinematics and the geometric Jacobian on random chains and trees."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core.errors import InvalidInputError
from ik_core.model.kinematics import (
    effector_poses,
    forward_kinematics,
    jacobian,
    joint_values,
    rest_transforms,
)
from ik_core.model.skeleton import Effector, Joint, JointKind, Mimic, Skeleton

SETTINGS = settings(max_examples=60, deadline=None)
KINDS = ("revolute", "continuous", "prismatic", "ball", "fixed")


def rodrigues(v: np.ndarray) -> np.ndarray:
    """(3, 3) rotation of one rotation vector, written independently of ik_core."""
    angle = float(np.linalg.norm(v))
    if angle < 1e-300:
        return np.eye(3)
    k = np.asarray(v, dtype=float) / angle
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def small_rotvec(R: np.ndarray) -> np.ndarray:
    """Rotation vector of a rotation well below pi/2 (enough for finite differences)."""
    w = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    s = np.linalg.norm(w)
    return w if s < 1e-300 else w * (np.arcsin(min(s, 1.0)) / s)


def random_transform(rng: np.random.Generator, scale: float = 0.5) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = rodrigues(rng.normal(size=3))
    T[:3, 3] = rng.normal(scale=scale, size=3)
    return T


@st.composite
def skeletons(draw: st.DrawFn, serial: bool = False, kinds: tuple[str, ...] = KINDS) -> Skeleton:
    """Random chains (or trees): random origins, unit axes, kinds, limits and mimic joints."""
    n = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    joints: list[Joint] = []
    for i in range(n):
        kind = JointKind(draw(st.sampled_from(kinds)))
        parent = i - 1 if serial or i == 0 else draw(st.integers(-1, i - 1))
        sources = [j.name for j in joints if j.kind.dof == 1 and j.mimic is None]
        mimic = None
        if kind.dof == 1 and sources and draw(st.booleans()):
            mimic = Mimic(
                draw(st.sampled_from(sources)), float(rng.uniform(-2, 2)), float(rng.uniform(-1, 1))
            )
        lo = float(rng.uniform(-3, 0))
        joints.append(
            Joint(
                f"j{i}",
                kind,
                parent,
                random_transform(rng),
                rng.normal(size=3) + 1e-3,
                lo,
                lo + float(rng.uniform(0, 3)),
                mimic=mimic,
            )
        )
    tips = sorted(set(draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))))
    return Skeleton(joints, [Effector(f"e{t}", t, random_transform(rng)) for t in tips])


def naive_fk(skel: Skeleton, q: np.ndarray) -> np.ndarray:
    """(J, 4, 4) joint frames for one q, one joint at a time, with no shared code."""
    frames = []
    for i, j in enumerate(skel.joints):
        motion = np.eye(4)
        if j.mimic is not None:
            value = j.mimic.multiplier * q[skel.q_index[skel.joint_index(j.mimic.joint)]] + j.mimic.offset
        elif j.dof:
            value = q[skel.q_index[i] : skel.q_index[i] + j.dof]
        if j.kind in (JointKind.REVOLUTE, JointKind.CONTINUOUS):
            motion[:3, :3] = rodrigues(np.asarray(j.axis) * float(np.squeeze(value)))
        elif j.kind is JointKind.PRISMATIC:
            motion[:3, 3] = np.asarray(j.axis) * float(np.squeeze(value))
        elif j.kind is JointKind.BALL:
            motion[:3, :3] = rodrigues(value)
        local = j.origin @ motion
        frames.append(local if j.parent < 0 else frames[j.parent] @ local)
    return np.stack(frames)


def random_q(skel: Skeleton, rng: np.random.Generator, shape: tuple[int, ...] = ()) -> np.ndarray:
    lo = np.where(np.isfinite(skel.lower), skel.lower, -np.pi)
    hi = np.where(np.isfinite(skel.upper), skel.upper, np.pi)
    return rng.uniform(lo, hi, (*shape, skel.dof))


@SETTINGS
@given(skeletons(), st.integers(0, 2**32 - 1))
def test_fk_matches_naive_product(skel: Skeleton, seed: int) -> None:
    """Batched FK equals a one-joint-at-a-time product of origin and joint motion (1e-12)."""
    q = random_q(skel, np.random.default_rng(seed), (3,))
    frames = forward_kinematics(skel, q)
    for b in range(3):
        np.testing.assert_allclose(frames[b], naive_fk(skel, q[b]), atol=1e-12)
    poses = effector_poses(skel, q)
    for k, eff in enumerate(skel.effectors):
        np.testing.assert_allclose(poses[:, k], frames[:, eff.joint] @ eff.offset, atol=1e-12)


@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_batch_shapes(shape: tuple[int, ...]) -> None:
    """FK, effector poses and Jacobians keep any leading batch shape and match unbatched calls."""
    skel = _fixed_tree()
    q = random_q(skel, np.random.default_rng(0), shape)
    J, E = len(skel.joints), len(skel.effectors)
    frames = forward_kinematics(skel, q)
    assert frames.shape == (*shape, J, 4, 4)
    assert effector_poses(skel, q).shape == (*shape, E, 4, 4)
    assert effector_poses(skel, q, "hand").shape == (*shape, 4, 4)
    assert effector_poses(skel, q, ["hand"]).shape == (*shape, 1, 4, 4)
    assert jacobian(skel, q, "hand").shape == (*shape, 6, skel.dof)
    flat_q = q.reshape(-1, skel.dof)
    flat_J = jacobian(skel, q, "foot", frames=frames).reshape(-1, 6, skel.dof)
    for b in range(flat_q.shape[0]):
        np.testing.assert_allclose(flat_J[b], jacobian(skel, flat_q[b], "foot"), atol=1e-14)
        np.testing.assert_allclose(
            effector_poses(skel, q, 1).reshape(-1, 4, 4)[b],
            effector_poses(skel, flat_q[b], "foot"),
            atol=1e-14,
        )


def _fixed_tree() -> Skeleton:
    """A small branched skeleton with every joint kind (deterministic, for shape tests)."""
    rng = np.random.default_rng(42)
    joints = [
        Joint("hip", "ball", -1, random_transform(rng)),
        Joint("knee", "revolute", 0, random_transform(rng), [1, 0, 0], -2, 0.5),
        Joint("ankle", "prismatic", 1, random_transform(rng), [0, 1, 1], -0.1, 0.1),
        Joint("spine", "continuous", 0, random_transform(rng), [0, 0, 1]),
        Joint("neck", "revolute", 3, random_transform(rng), [0, 1, 0], -1, 1, mimic=Mimic("knee", 0.5, 0.2)),
        Joint("head", "fixed", 4, random_transform(rng)),
    ]
    return Skeleton(joints, [Effector("hand", 5, random_transform(rng)), Effector("foot", 2)])


def test_bad_q_shapes_raise() -> None:
    """A q whose last axis is not dof raises InvalidInputError naming the expected shape."""
    skel = _fixed_tree()
    for bad in (np.zeros(skel.dof + 1), np.zeros((2, 3)), np.float64(0.0)):
        with pytest.raises(InvalidInputError, match=rf"\(\.\.\., {skel.dof}\)"):
            forward_kinematics(skel, bad)
        with pytest.raises(InvalidInputError):
            jacobian(skel, bad, "hand")


def test_rest_transforms_and_joint_values() -> None:
    """Rest frames are FK at q = 0; joint values resolve mimics and ball rotation vectors."""
    skel = _fixed_tree()
    np.testing.assert_array_equal(rest_transforms(skel), forward_kinematics(skel, np.zeros(skel.dof)))
    q = random_q(skel, np.random.default_rng(1), (4,))
    np.testing.assert_array_equal(joint_values(skel, q, 0), q[:, 0:3])
    np.testing.assert_allclose(joint_values(skel, q, 4)[:, 0], 0.5 * q[:, 3] + 0.2)
    assert joint_values(skel, q, 5).shape == (4, 0)


def finite_difference_jacobian(skel: Skeleton, q: np.ndarray, effector: str, h: float = 1e-6) -> np.ndarray:
    """(6, dof) central differences: position rows, then the rotation vector of dR R^T."""
    out = np.zeros((6, skel.dof))
    for k in range(skel.dof):
        dq = np.zeros(skel.dof)
        dq[k] = h
        plus, minus = effector_poses(skel, q + dq, effector), effector_poses(skel, q - dq, effector)
        out[:3, k] = (plus[:3, 3] - minus[:3, 3]) / (2 * h)
        out[3:, k] = small_rotvec(plus[:3, :3] @ minus[:3, :3].T) / (2 * h)
    return out


BALL_NORMS = (0.0, 1e-9, 1e-5, 0.5, 2.0, np.pi - 1e-6, np.pi, np.pi + 1e-3)


@SETTINGS
@given(skeletons(), st.integers(0, 2**32 - 1), st.lists(st.sampled_from(BALL_NORMS), min_size=6, max_size=6))
def test_jacobian_matches_finite_differences(skel: Skeleton, seed: int, ball_norms: list[float]) -> None:
    """Every Jacobian column equals central differences of the effector pose (1e-6).

    Ball joints are set to rotation vectors of lengths 0, tiny, moderate, near and at pi, where
    the rotation-vector parametrisation is hardest to differentiate.
    """
    rng = np.random.default_rng(seed)
    q = random_q(skel, rng)
    for i, j in enumerate(skel.joints):
        if j.kind is JointKind.BALL:
            direction = rng.normal(size=3)
            s = skel.q_index[i]
            q[s : s + 3] = ball_norms[i] * direction / np.linalg.norm(direction)
    for eff in skel.effector_names:
        np.testing.assert_allclose(
            jacobian(skel, q, eff), finite_difference_jacobian(skel, q, eff), atol=1e-6
        )


@SETTINGS
@given(skeletons(serial=True, kinds=("revolute", "continuous", "prismatic")), st.integers(0, 2**32 - 1))
def test_serial_jacobian_columns_are_screw_axes(skel: Skeleton, seed: int) -> None:
    """For 1-DoF serial chains a revolute column is (z x (p - o), z), a prismatic one (z, 0)."""
    q = random_q(skel, np.random.default_rng(seed))
    frames = forward_kinematics(skel, q)
    eff = skel.effectors[-1]
    p = (frames[eff.joint] @ eff.offset)[:3, 3]
    expected = np.zeros((6, skel.dof))
    for i in skel.ancestors(eff.joint):
        j = skel.joints[i]
        col = skel.q_index[i] if j.mimic is None else skel.q_index[skel.joint_index(j.mimic.joint)]
        scale = 1.0 if j.mimic is None else j.mimic.multiplier
        z = frames[i, :3, :3] @ j.axis
        if j.kind is JointKind.PRISMATIC:
            expected[:3, col] += scale * z
        else:
            expected[:3, col] += scale * np.cross(z, p - frames[i, :3, 3])
            expected[3:, col] += scale * z
    np.testing.assert_allclose(jacobian(skel, q, eff.name), expected, atol=1e-12)


def test_joints_off_the_effector_path_have_zero_columns() -> None:
    """Variables of side branches do not move an effector: their columns are exactly zero."""
    skel = _fixed_tree()
    q = random_q(skel, np.random.default_rng(2))
    J = jacobian(skel, q, "foot")
    assert np.all(J[:, skel.q_index[skel.joint_index("spine")]] == 0.0)
    J = jacobian(skel, q, "hand")  # knee is driven through the mimic neck joint
    assert np.any(J[:, skel.q_index[skel.joint_index("knee")]] != 0.0)
    assert np.all(J[:, skel.q_index[skel.joint_index("ankle")]] == 0.0)
