# SPDX-License-Identifier: GPL-3.0-or-later
"""The trunk's swing about the head that brings planted ankles within reach (ik_core.humanoid.hips)."""

from __future__ import annotations

import numpy as np
import pytest

from ik_core.humanoid.geometry import exp_so3, mv
from ik_core.humanoid.hips import trunk_swing_for_reach

FT = 1 / 120
N = 360
REACH = np.array([0.95, 0.95])
HEAD = np.array([0.0, 0.0, 1.6])
BASE = np.array([0.0, 0.0, 1.1])
HIP_OFFSETS = np.array([[0.1, 0.0, -0.15], [-0.1, 0.0, -0.15]])  # from the spine's base


def lunge(back: float = 0.45, side: float = 0.0):
    """A standing trunk over a left ankle under its hip and a right ankle that steps ``back`` m behind
    (and ``side`` m outward) and stands there: (head, base, hips, ankles), all constant but the right ankle."""
    t = np.clip((np.arange(N) - 60) / 120, 0.0, 1.0)
    ease = t**3 * (10.0 - 15.0 * t + 6.0 * t * t)
    head = np.repeat(HEAD[None], N, axis=0)
    base = np.repeat(BASE[None], N, axis=0)
    hips = base[:, None] + HIP_OFFSETS[None]
    ankles = np.repeat(np.array([[0.1, 0.0, 0.08], [-0.1, 0.0, 0.08]])[None], N, axis=0)
    ankles[:, 1, 1] += back * ease
    ankles[:, 1, 0] -= side * ease
    return head, base, hips, ankles


def swung_hips(head, base, hips, swing):
    """The hips once the trunk turns by ``swing`` about the head (the pelvis's rotation kept)."""
    new_base = head - mv(exp_so3(swing), head - base)
    return new_base[:, None] + (hips - base[:, None])


def excess(hips, ankles) -> np.ndarray:
    return np.linalg.norm(ankles - hips, axis=-1) - REACH


@pytest.mark.parametrize("back, side", [(0.45, 0.0), (0.4, 0.15), (0.1, 0.42)])
def test_planted_ankles_come_within_reach_smoothly(back: float, side: float) -> None:
    """A rear foot out of reach: the swing brings both hips within reach on every frame (eased in ahead of
    the need, never below it), nothing moves far from the need, and the swing has no corners."""
    head, base, hips, ankles = lunge(back, side)
    planted = np.ones((N, 2), dtype=bool)
    assert excess(hips, ankles).max() > 0.015  # the case needs the hips to move
    raw = trunk_swing_for_reach(head, base, hips, ankles, REACH, planted, FT, 0.0, np.pi)
    smooth = trunk_swing_for_reach(head, base, hips, ankles, REACH, planted, FT, 0.25, np.radians(60.0))
    need = excess(hips, ankles).max(axis=1) > 0.0
    for swing in (raw, smooth):
        assert np.all(excess(swung_hips(head, base, hips, swing), ankles) <= 1e-9)
    # exactly zero where no frame within the ease needs a swing; the raw swing only where needed
    assert np.all(raw[~need] == 0.0)
    first = int(np.argmax(need))
    assert np.all(smooth[: first - int(0.25 / FT) * 2] == 0.0)
    # no corners: the eased swing's second differences are a fraction of the raw one's
    bend = [np.abs(np.diff(s, n=2, axis=0)).max() for s in (raw, smooth)]
    assert bend[1] < 0.2 * bend[0]


def test_the_swing_is_bounded_and_only_reachable_planted_legs_count() -> None:
    """A need beyond the bound: the swing eases toward the bound without passing it and brings the ankle
    nearer. A foot no swing can bring within reach (the rigid trunk turning about the head cannot get its
    hip near enough), or an unplanted one, however far, moves nothing."""
    head, base, hips, ankles = lunge(back=0.45)
    planted = np.ones((N, 2), dtype=bool)
    bound = np.radians(10.0)
    raw = trunk_swing_for_reach(head, base, hips, ankles, REACH, planted, FT, 0.0, np.pi)
    assert np.linalg.norm(raw, axis=-1).max() > 0.9 * bound
    swing = trunk_swing_for_reach(head, base, hips, ankles, REACH, planted, FT, 0.25, bound)
    size = np.linalg.norm(swing, axis=-1)
    assert size.max() <= bound and size.max() > 0.8 * bound
    out = excess(hips, ankles)[:, 1] > 0.0
    after = excess(swung_hips(head, base, hips, swing), ankles)[:, 1]
    assert np.all(after[out] < excess(hips, ankles)[out, 1])
    assert np.all(excess(swung_hips(head, base, hips, swing), ankles)[:, 0] <= 1e-9)
    head, base, hips, ankles = lunge(back=1.2)  # stands 1.2 m back from frame 180 on
    far = trunk_swing_for_reach(head, base, hips, ankles, REACH, planted, FT, 0.25, bound)
    assert np.all(far[180 + 2 * int(0.25 / FT) :] == 0.0)
    head, base, hips, ankles = lunge(back=0.45)
    planted[:, 1] = False
    assert np.all(trunk_swing_for_reach(head, base, hips, ankles, REACH, planted, FT, 0.25, bound) == 0.0)
