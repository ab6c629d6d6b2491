# SPDX-License-Identifier: GPL-3.0-or-later
"""Keys that give the solved pose through the constraints evaluated after them.

A constraint after the keys on a chain bone (a Copy Rotation at partial influence, say) turns
the keyed rotation in playback, so a tip the solver put on its target lands elsewhere. On those
frames the keys are corrected until playback evaluates each bone to the rotation the solver
chose: each round plays the frames, takes every bone's miss (the turn from its evaluated local
rotation to the solved one) and adds it to the key, scaled by how much of the last correction
came through (a constraint at half influence passes half, so the next step is doubled). A
bone whose miss stops shrinking keeps its best key: a constraint that overrides the rotation
outright, or a limit the solved pose lies beyond, cannot be keyed around, and playback says so.
The solver never sees the constraints: playback is the measure, as it is for the report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from ..ik_core.model import rotations as rot
from . import bridge

ROUNDS = 8  # corrections per frame at most
# A bone this close to its solved rotation in playback needs no more, and a round must gain more
# than this to count as better: Blender's pose matrices are float32, so playback reads back a
# rotation to a few 1e-7 rad (a micrometre on a metre-long bone).
DONE_RAD = 2e-6  # [rad]
MAX_STEP = 8.0  # largest multiple of a miss one round adds (a constraint passing 1/8 of a change)
SHRINK = 0.9  # a bone whose miss a round does not cut to this share of the last one stops


@dataclass
class Correction:
    """What the rounds did.

    Attributes:
        keys: (N, B, 3, 3) the local rotations keyed now, corrected on the tried frames.
        tried: (N,) True on the frames corrected.
        rounds: Rounds run.
        miss_before: Largest bone miss on the tried frames before the rounds [rad].
        miss_after: The same after them [rad].
    """

    keys: np.ndarray
    tried: np.ndarray
    rounds: int
    miss_before: float
    miss_after: float


def correct_through_playback(
    scene: bpy.types.Scene,
    frames: Sequence[int],
    arm: bpy.types.Object,
    bones: Sequence[str],
    solved: np.ndarray,
    frames_to_fix: np.ndarray,
    write: Callable[[np.ndarray], None],
    rounds: int = ROUNDS,
) -> Correction:
    """Correct the keys of ``bones`` on some frames until playback evaluates them to ``solved``.

    Args:
        scene: The scene, its frames played to measure.
        frames: (N,) the take's frame numbers.
        arm: The armature.
        bones: The B bones keyed, parents before children.
        solved: (N, B, 3, 3) the local rotations the solver chose (and the keys now).
        frames_to_fix: (N,) True on the frames that may be corrected (those the solver reached);
            only those where playback turns some bone off its solved rotation are.
        write: Keys (N, B, 3, 3) local rotations on every frame of the take.
        rounds: Corrections per frame at most.

    Returns:
        The :class:`Correction`; the keys written are its ``keys``.
    """
    keys = np.array(solved, dtype=float, copy=True)

    def misses(index: np.ndarray) -> np.ndarray:
        """(n, B, 3) turn from each bone's evaluated local rotation to its solved one, as a rotation vector."""
        shown = bridge.sample_local_rotations(scene, [frames[i] for i in index], arm, bones)
        return rot.matrix_to_rotvec(np.swapaxes(shown, -1, -2) @ solved[index])

    index = np.flatnonzero(frames_to_fix)
    miss = misses(index)
    size = np.linalg.norm(miss, axis=-1)  # (n, B)
    moved = (size > DONE_RAD).any(axis=1)  # frames playback turns off the solved pose: the ones to correct
    index, miss, size = index[moved], miss[moved], size[moved]
    best_size, best_keys = size.copy(), keys[index].copy()
    before = float(size.max(initial=0.0))
    step = np.ones_like(size)
    stuck = np.zeros_like(size, dtype=bool)  # bones whose miss stopped shrinking: they keep their best key
    done = 0
    for done in range(1, rounds + 1):
        active = (size > DONE_RAD) & ~stuck
        if not active.any():
            done -= 1
            break
        turn = rot.rotvec_to_matrix(np.where(active[..., None], miss * step[..., None], 0.0))
        fixing = keys[index]
        fixing[active] = fixing[active] @ turn[active]
        fixing[stuck] = best_keys[stuck]
        keys[index] = fixing
        write(keys)
        last, miss = size, misses(index)
        size = np.linalg.norm(miss, axis=-1)
        better = size < best_size - DONE_RAD
        best_size[better] = size[better]
        best_keys[better] = fixing[better]
        stuck |= active & (size > SHRINK * last)
        # What share of the step came through: the next step is the miss over that share.
        passed = np.where(active, (last - size) / np.maximum(step * last, 1e-300), 1.0)
        step = np.clip(1.0 / np.maximum(passed, 1.0 / MAX_STEP), 1.0, MAX_STEP)
    if not np.array_equal(keys[index], best_keys):
        keys[index] = best_keys
        write(keys)
    tried = np.zeros(len(keys), dtype=bool)
    tried[index] = True
    return Correction(keys, tried, done, before, float(best_size.max(initial=0.0)))
