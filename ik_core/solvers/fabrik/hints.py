# SPDX-License-Identifier: GPL-3.0-or-later
"""Start-up nudges for FABRIK: turning a chain's bend plane towards a pole, unsticking lined-up chains."""

from __future__ import annotations

import numpy as np

from ...errors import InvalidInputError, require_finite
from .primitives import perpendicular, rotation_about, unit
from .tree import Tree

# A chain whose joints stray less than this fraction of its length from the root-target
# line counts as straight: a pole hint then bends it instead of turning it.
STRAIGHT = 1e-6
# Bend [fraction of the chain length] given to a straight chain so it folds towards a pole.
POLE_BEND = 0.25
# Sideways nudge [fraction of a bone] given to a chain stuck away from its target.
KICK = 0.2


def apply_pole(
    tree: Tree, pole: object, batch: tuple[int, ...], tp: np.ndarray, p: np.ndarray, W: np.ndarray
) -> None:
    """Turn each effector's own chain segment about its root-target line towards its pole (in place).

    The segment (the bodies on the effector's path that no other effector shares) is turned
    rigidly so the sum of its joints' offsets from the line points at the pole; a straight
    segment, which has no bend plane, is bent towards the pole instead. Only the starting
    positions of the first backward pass change: FABRIK keeps the bend plane it starts with.

    Args:
        tree: The solver's body tree.
        pole: (..., 3) world points [m] for one effector, or (..., E, 3); broadcast to ``batch``.
        batch: Batch shape of the targets.
        tp: (n, E, 3) target positions [m], n the flattened batch.
        p: (B, n, 3) joint positions [m], updated in place.
        W: (B, n, 3, 3) joint world rotations, updated in place.

    Raises:
        InvalidInputError: Non-finite entries or a shape that does not broadcast.
    """
    E = tp.shape[1]
    pole = np.asarray(pole, dtype=float)
    require_finite("pole", pole)
    try:
        pole = np.broadcast_to(pole[..., None, :] if E == 1 and pole.ndim >= 1 else pole, (*batch, E, 3))
    except ValueError:
        want = "(..., 3)" if E == 1 else f"(..., {E}, 3)"
        raise InvalidInputError(
            f"pole must have shape {want} broadcasting to batch {batch}, got {pole.shape}"
        ) from None
    pole = pole.reshape(-1, E, 3)
    for e, seg in enumerate(tree.segments):
        if not seg:
            continue
        pivot = p[seg[0]]
        axis, ok = unit(tp[:, e] - pivot, np.zeros(3))
        pol = pole[:, e] - pivot
        pu, pok = unit(pol - np.sum(pol * axis, axis=-1, keepdims=True) * axis, np.zeros(3))
        hops = [float(np.linalg.norm(tree.bodies[b].pos)) for b in seg[1:]]
        hops.append(float(np.linalg.norm(tree.eff_pos[e])))
        total = sum(hops)
        rel = p[list(seg[1:])] - pivot
        h = (rel - np.sum(rel * axis, axis=-1, keepdims=True) * axis).sum(axis=0)
        use = ok & pok
        bent = use & (np.linalg.norm(h, axis=-1) > STRAIGHT * total)
        phi = np.arctan2(np.sum(np.cross(h, pu) * axis, axis=-1), np.sum(h * pu, axis=-1))
        turn = rotation_about(axis, np.where(bent, phi, 0.0))
        along = np.cumsum(hops[:-1]) / total
        for i, b in enumerate(seg):
            W[b] = turn @ W[b]
            if i:
                bump = (use & ~bent)[:, None] * pu * (POLE_BEND * total * np.sin(np.pi * along[i - 1]))
                p[b] = pivot + (turn @ (p[b] - pivot)[..., None])[..., 0] + bump


def kick(tree: Tree, p: np.ndarray, tp: np.ndarray, which: np.ndarray, kicks: np.ndarray) -> None:
    """Shift the non-root joints of the ``which`` (n,) elements sideways of their root-target line.

    A chain lined up with its target (or folded flat in a plane) is a fixed point of FABRIK;
    after the shift the next backward pass can bend out of that line. Odd-numbered kicks go
    at right angles to even ones.

    Args:
        tree: The solver's body tree.
        p: (B, n, 3) joint positions [m], updated in place.
        tp: (n, E, 3) target positions [m].
        which: (n,) elements to kick.
        kicks: (n,) kicks each element had so far.
    """
    axis, _ = unit(tp[which, 0] - tree.base[0], np.array([0.0, 1.0, 0.0]))
    side = perpendicular(axis)
    side = np.where((kicks[which] % 2 == 1)[:, None], np.cross(axis, side), side)
    for k, body in enumerate(tree.bodies):
        if body.parent >= 0:
            p[k, which] += KICK * np.linalg.norm(body.pos) * side
