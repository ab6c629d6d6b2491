# SPDX-License-Identifier: GPL-3.0-or-later
"""The ground plane: nothing below it, nothing else changed."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.contacts import keep_above_ground, lift_above_ground, pitch_above_ground
from ik_core.errors import InvalidInputError
from ik_core.model.rotations import rotvec_to_matrix

TOE = np.array([0.0, -0.15, -0.06])  # ankle -> toe of a foot facing -y [m]


def test_no_target_below_the_ground() -> None:
    """After the clamp no height is below ground + clearance: zero penetration, every other value untouched."""
    p = np.random.default_rng(2).normal(0.1, 0.1, (500, 2, 3))
    out = keep_above_ground(p, ground=0.05, clearance=0.08)
    assert out[..., 2].min() >= 0.13
    above = p[..., 2] >= 0.13
    assert np.array_equal(out[above], p[above])
    assert np.array_equal(out[..., :2], p[..., :2])
    assert np.all(out[~above, 2] == 0.13)


def test_toes_pitch_out_of_the_ground() -> None:
    """Random foot rotations: afterwards no toe is below its clearance, headings are kept, the rest untouched."""
    rng = np.random.default_rng(5)
    n = 400
    R = rotvec_to_matrix(rng.normal(0.0, 0.6, (n, 3)))
    base = np.column_stack([rng.normal(0, 1, (n, 2)), rng.uniform(0.06, 0.3, n)])
    out = pitch_above_ground(base, R, TOE, ground=0.0, clearance=0.02)
    before = base + np.einsum("nij,j->ni", R, TOE)
    after = base + np.einsum("nij,j->ni", out, TOE)
    low = before[:, 2] < 0.02
    assert low.any() and np.array_equal(out[~low], R[~low])
    assert after[:, 2].min() >= 0.02 - 1e-12
    assert np.allclose(after[low, 2], 0.02)  # the smallest lift: exactly onto the floor
    heading = lambda v: np.arctan2(v[:, 1], v[:, 0])  # noqa: E731
    assert np.allclose(heading(after[low] - base[low]), heading(before[low] - base[low]))
    assert np.allclose(np.linalg.det(out), 1.0) and np.allclose(out @ np.swapaxes(out, -1, -2), np.eye(3))


def test_feet_lift_out_of_the_ground_without_moving_sideways() -> None:
    """Random foot rotations: afterwards no toe is below its clearance, no base or toe moved sideways,
    the rotations are untouched and only low frames change (by the toe's depth, no more)."""
    rng = np.random.default_rng(6)
    n = 400
    R = rotvec_to_matrix(rng.normal(0.0, 0.6, (n, 3)))
    base = np.column_stack([rng.normal(0, 1, (n, 2)), rng.uniform(-0.1, 0.3, n)])
    out = lift_above_ground(base, R, TOE, ground=0.01, clearance=0.02)
    before = base + np.einsum("nij,j->ni", R, TOE)
    after = out + np.einsum("nij,j->ni", R, TOE)
    low = before[:, 2] < 0.03
    assert low.any() and (~low).any()
    assert np.array_equal(out[~low], base[~low])
    assert np.array_equal(out[:, :2], base[:, :2])
    assert np.allclose(after[low, 2], 0.03, atol=1e-12)  # exactly onto the floor, not above it
    assert after[:, 2].min() >= 0.03 - 1e-12


def test_bad_lift_input_is_named() -> None:
    with pytest.raises(InvalidInputError, match=r"rotations must be finite with shape \(2, 3, 3\)"):
        lift_above_ground(np.zeros((2, 3)), np.zeros((3, 3, 3)), TOE)
    with pytest.raises(InvalidInputError, match="clearance must be a finite number >= 0"):
        lift_above_ground(np.zeros((2, 3)), np.tile(np.eye(3), (2, 1, 1)), TOE, clearance=-1.0)


def test_toe_of_a_base_too_low_rises_as_far_as_it_can() -> None:
    base = np.array([[0.0, 0.0, -0.5]])
    out = pitch_above_ground(base, np.eye(3)[None], TOE, clearance=0.02)
    tip = base + out[0] @ TOE
    assert np.isclose(tip[0, 2], -0.5 + np.linalg.norm(TOE))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rotations": np.zeros((3, 3, 3))}, r"rotations must be finite with shape \(2, 3, 3\)"),
        ({"tip": np.zeros(2)}, "tip must be a finite 3-vector"),
        ({"base": np.zeros((2, 2))}, r"base must have shape \(N, 3\)"),
        ({"clearance": -1.0}, "clearance must be a finite number >= 0"),
    ],
)
def test_bad_pitch_input_is_named(kwargs, message) -> None:
    args = {"base": np.zeros((2, 3)), "rotations": np.tile(np.eye(3), (2, 1, 1)), "tip": TOE, **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        pitch_above_ground(**args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((np.zeros((4, 4)),), r"shape \(N, 3\) or \(N, L, 3\)"),
        ((np.full((4, 3), np.inf),), "NaN or infinite"),
        ((np.zeros((4, 3)), 0.0, -0.01), "clearance must be a finite number >= 0"),
        ((np.zeros((4, 3)), float("nan")), "ground must be a finite number"),
    ],
)
def test_bad_input_is_named(args, message) -> None:
    with pytest.raises(InvalidInputError, match=message):
        keep_above_ground(*args)
