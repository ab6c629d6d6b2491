# SPDX-License-Identifier: GPL-3.0-or-later
"""Planting: held position and rotation, smooth blends, untouched frames outside contacts, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from contact_walks import FT, REST, walk
from hypothesis import given, settings
from hypothesis import strategies as st

from ik_core.contacts import aim_tip, contact_intervals, detect_contacts, plant_targets, plant_weights
from ik_core.errors import InvalidInputError
from ik_core.model.rotations import matrix_to_rotvec, rotvec_to_matrix


def sliding_walk(noise: float = 0.002):
    """A walk whose stance foot slides 6 cm/s forward (a retarget's skate), its contacts detected."""
    positions, stance = walk(noise=noise, seed=7)
    positions[stance, 0] += 0.06 * FT * np.cumsum(stance)[stance]
    contact = detect_contacts(positions, FT, rest_height=REST)
    return positions, contact


def test_frames_outside_contacts_are_bit_identical() -> None:
    positions, contact = sliding_walk()
    R = rotvec_to_matrix(np.random.default_rng(0).normal(0, 0.3, (len(positions), 3)))
    out = plant_targets(positions, contact, FT, rotations=R, flat_up=np.array([0.0, 0.0, 1.0]))
    assert np.array_equal(out.positions[~contact], positions[~contact])
    assert np.array_equal(out.rotations[~contact], R[~contact])
    assert np.all(out.weight[~contact] == 0.0) and np.all(np.isnan(out.anchor[~contact]))


def test_held_position_within_tolerance() -> None:
    """From the landing frame until the release the target is exactly the landing position; the release is slow."""
    positions, contact = sliding_walk()
    out = plant_targets(positions, contact, FT, release_speed=0.1)
    ramp = int(round(0.1 / FT))
    for start, stop in contact_intervals(contact):
        assert np.allclose(out.anchor[start:stop], positions[start])
        moving = np.flatnonzero(np.any(out.positions[start:stop] != positions[start], axis=1))
        release = stop - start - (moving[0] if moving.size else stop - start)
        assert moving.size == 0 or np.array_equal(moving, np.arange(moving[0], stop - start))  # held, then released
        assert release >= min(ramp, (stop - start) // 2) and release < stop - start
        assert np.array_equal(out.positions[stop - 1], positions[stop - 1])  # released onto the original
        # a long drift is released over enough frames to average at most release_speed
        drift = np.linalg.norm(positions[stop - 1] - positions[start])
        assert release >= min(np.ceil(1.5 * drift / (0.1 * FT)), stop - start - 1)


def test_jitter_does_not_leak_into_the_release() -> None:
    """A still foot with 2 mm tracker jitter: planted, no frame of a contact moves faster than 20 cm/s."""
    n = 600
    still = np.tile([0.2, 0.0, REST], (n, 1)) + np.random.default_rng(9).normal(0.0, 0.002, (n, 3))
    still[300:360] += np.linspace(0, 0.5, 60)[:, None] * [1, 0, 0.3]  # one step in the middle
    still[360:] += [0.5, 0.0, 0.15]
    still[360:, 2] -= 0.15
    contact = detect_contacts(still, FT, rest_height=REST)
    out = plant_targets(still, contact, FT)
    inside = contact[1:] & contact[:-1]
    speed = np.linalg.norm(np.diff(out.positions[:, :2], axis=0), axis=-1) / FT
    raw = np.linalg.norm(np.diff(still[:, :2], axis=0), axis=-1) / FT
    assert inside.sum() > 400 and np.mean(raw[inside] > 0.2) > 0.3
    assert speed[inside].max() < 0.2


@pytest.mark.parametrize("blend_time", [0.05, 0.1, 0.2])
def test_blends_have_no_steps(blend_time: float) -> None:
    """The planted target's step per frame never exceeds the original's largest step plus the blend's share.

    Planting a foot that slid d metres releases d over the blend-out ramp: a smoothstep moves at
    most 1.5 d / ramp frames per frame.
    """
    positions, contact = walk(noise=0.0)
    positions[contact, 0] += 0.06 * FT * np.cumsum(contact)[contact]  # slides 6 cm/s in every stance
    out = plant_targets(positions, contact, FT, blend_time=blend_time)
    ramp = int(round(blend_time / FT))
    slid = max(np.ptp(positions[a:b, 0]) for a, b in contact_intervals(contact))
    original = np.linalg.norm(np.diff(positions, axis=0), axis=-1).max()
    planted = np.linalg.norm(np.diff(out.positions, axis=0), axis=-1).max()
    assert planted <= original + 1.5 * slid / (ramp + 1) + 1e-9
    # and the weight itself changes by at most 1.5 / (ramp + 1) per frame
    assert np.abs(np.diff(out.weight)).max() <= 1.5 / (ramp + 1) + 1e-12


def test_weights_stay_inside_contacts() -> None:
    contact = np.zeros(40, dtype=bool)
    contact[10:30] = True
    w = plant_weights(contact, FT, blend_time=5 * FT)
    assert np.all(w[~contact] == 0) and np.all(w[contact] > 0)
    assert np.all(w[15:25] == 1.0)
    assert np.all(np.diff(w[10:16]) > 0) and np.all(np.diff(w[24:30]) < 0)
    short = np.zeros(40, dtype=bool)
    short[10:14] = True
    assert plant_weights(short, FT, blend_time=5 * FT).max() < 1.0
    assert np.array_equal(plant_weights(contact, FT, blend_time=0.0), contact.astype(float))


def test_rotation_is_held_flat_with_its_heading() -> None:
    """With flat_up the held rotation stands the effector's up axis on world +z and keeps its heading."""
    n = 60
    tilt = rotvec_to_matrix(np.array([0.3, 0.0, 0.0]))
    yaw = rotvec_to_matrix(np.array([0.0, 0.0, 0.7]))
    R = np.repeat((yaw @ tilt)[None], n, axis=0)
    R[30:] = rotvec_to_matrix(np.array([0.0, 0.0, 1.2]))  # turns after the contact starts
    contact = np.zeros(n, dtype=bool)
    contact[10:50] = True
    out = plant_targets(np.zeros((n, 3)), contact, FT, rotations=R, blend_time=2 * FT, flat_up=np.array([0, 0, 1.0]))
    held = out.rotations[out.weight == 1.0]
    assert np.allclose(held @ np.array([0, 0, 1.0]), [0, 0, 1.0], atol=1e-12)
    assert np.allclose(held, yaw, atol=1e-12)  # tilt removed about the horizontal axis, heading kept
    kept = plant_targets(np.zeros((n, 3)), contact, FT, rotations=R, blend_time=2 * FT)
    assert np.allclose(kept.rotations[kept.weight == 1.0], yaw @ tilt, atol=1e-12)
    steps = np.linalg.norm(matrix_to_rotvec(np.swapaxes(out.rotations[:-1], -1, -2) @ out.rotations[1:]), axis=-1)
    assert steps.max() < 0.5 + 1e-9  # the original's turn at frame 30 is 0.5 rad; planting adds no larger step


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"positions": np.zeros((10, 2))}, r"positions must have shape \(N, 3\)"),
        ({"contact": np.zeros(9, dtype=bool)}, r"contact must have shape \(10,\)"),
        ({"contact": np.full(10, 2)}, "contact must hold booleans"),
        ({"frame_time": -1.0}, "frame_time must be a finite number > 0"),
        ({"blend_time": -0.1}, "blend_time must be a finite number >= 0"),
        ({"rotations": np.zeros((9, 3, 3))}, r"rotations must have shape \(10, 3, 3\)"),
        ({"flat_up": np.array([0, 0, 1.0])}, "flat_up needs rotations"),
        ({"rotations": np.full((10, 3, 3), np.nan)}, "rotations contain NaN"),
        ({"rotations": np.tile(np.eye(3), (10, 1, 1)), "flat_up": np.zeros(3)}, "flat_up must be a finite non-zero"),
    ],
)
def test_bad_input_is_named(kwargs, message) -> None:
    args = {"positions": np.zeros((10, 3)), "contact": np.ones(10, dtype=bool), "frame_time": FT, **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        plant_targets(**args)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), blend=st.floats(0.0, 0.3), release=st.floats(0.02, 1.0))
def test_planting_any_mask_keeps_outside_frames_and_holds_landings(seed: int, blend: float, release: float) -> None:
    """Any trajectory and contact mask: frames outside contacts bit for bit, each contact starts at its landing
    position exactly, ends on the original's last contact frame, and nothing is NaN."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    positions = np.cumsum(rng.normal(0.0, 0.01, (n, 3)), axis=0)
    contact = rng.random(n) < rng.uniform(0.2, 0.9)
    R = rotvec_to_matrix(rng.normal(0.0, 0.5, (n, 3)))
    out = plant_targets(positions, contact, FT, rotations=R, blend_time=blend, release_speed=release)
    assert np.all(np.isfinite(out.positions)) and np.all(np.isfinite(out.rotations))
    assert np.array_equal(out.positions[~contact], positions[~contact])
    assert np.array_equal(out.rotations[~contact], R[~contact])
    for start, stop in contact_intervals(contact):
        assert np.array_equal(out.positions[start], positions[start])
        if stop < n:
            assert np.array_equal(out.positions[stop - 1], positions[stop - 1])
    assert np.all((out.weight >= 0) & (out.weight <= 1)) and np.all(out.weight[~contact] == 0)


def test_aim_tip_pivots_a_foot_about_its_ankle() -> None:
    """A heel rising about a planted ball: the toe lands on its target when one foot length away, the rest untouched."""
    rng = np.random.default_rng(11)
    n = 200
    tip = np.array([0.0, -0.15, -0.05])
    R = rotvec_to_matrix(rng.normal(0.0, 0.4, (n, 3)))
    base = rng.normal(0.0, 0.3, (n, 3))
    direction = rng.normal(size=(n, 3))
    targets = base + direction / np.linalg.norm(direction, axis=1, keepdims=True) * np.linalg.norm(tip)
    keep = rng.random(n) < 0.3
    targets[keep] = base[keep] + np.einsum("nij,j->ni", R[keep], tip)  # already on target
    out = aim_tip(base, R, tip, targets)
    assert np.allclose(base + np.einsum("nij,j->ni", out, tip), targets, atol=1e-12)
    assert np.allclose(np.linalg.det(out), 1.0) and np.allclose(out @ np.swapaxes(out, -1, -2), np.eye(3))
    assert np.allclose(out[keep], R[keep], atol=1e-12)
    far = aim_tip(base[:1], R[:1], tip, base[:1] + [[0.0, 0.0, -1.0]])  # out of reach: on the line toward it
    assert np.allclose(far[0] @ tip / np.linalg.norm(tip), [0.0, 0.0, -1.0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tip": np.zeros(3)}, "tip must be a finite non-zero 3-vector"),
        ({"targets": np.zeros((3, 3))}, "targets must have 2 frames"),
        ({"rotations": np.zeros((2, 3))}, r"rotations must be finite with shape \(2, 3, 3\)"),
        ({"base": np.full((2, 3), np.nan)}, "base has NaN"),
    ],
)
def test_bad_aim_input_is_named(kwargs, message) -> None:
    args = {"base": np.zeros((2, 3)), "rotations": np.tile(np.eye(3), (2, 1, 1)), "tip": np.ones(3),
            "targets": np.ones((2, 3)), **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        aim_tip(**args)
