# SPDX-License-Identifier: GPL-3.0-or-later
"""Trunk of the body solve: body heading from the head, spine and neck bend, pelvis placement."""

from __future__ import annotations

import numpy as np

from .calibration import Body
from .geometry import exp_so3, gaussian_smooth, log_so3, mv, normalize, rot_z

__all__ = ["heading_of", "solve_trunk", "swing_trunk"]

_UP = np.array([0.0, 0.0, 1.0])


def heading_of(forward: np.ndarray) -> np.ndarray:
    """(...) heading angles [rad] of horizontal directions (..., 3); heading 0 faces +y."""
    return np.arctan2(-forward[..., 0], forward[..., 1])


def head_heading(body: Body, head_rotation: np.ndarray, sigma_frames: float) -> np.ndarray:
    """(N,) smoothed, unwrapped body heading [rad] read from the head's world rotations (N, 3, 3).

    Looking down or up tips the face's forward axis toward the floor or the sky; the crown's
    horizontal direction is then mixed in (the top of the head points forward when looking
    down, the back of it when looking up), so the heading survives any pitch, and a head roll
    alone does not move it. Frames where the heading is undefined keep the previous one.
    """
    R_ref = body.ref[body.index("head"), :3, :3]
    face = mv(head_rotation, R_ref.T @ body.forward)
    crown = mv(head_rotation, R_ref.T @ _UP)
    v = face - face[:, 2:3] * crown
    v[:, 2] = 0.0
    ok = np.linalg.norm(v, axis=-1) > 1e-6
    raw = heading_of(normalize(v, fallback=body.forward))
    if not ok.all():
        last = np.maximum.accumulate(np.where(ok, np.arange(len(ok)), -1))
        raw = np.where(last >= 0, raw[np.maximum(last, 0)], float(heading_of(body.forward)))
    return gaussian_smooth(np.unwrap(raw), sigma_frames)


def solve_trunk(
    body: Body,
    head_target: np.ndarray,
    heading: np.ndarray,
    bend: tuple[float, float],
    twist: float,
    crouch_lean: float,
    neck_share: float,
    stiffness: tuple[float, ...],
    D: np.ndarray,
    P: np.ndarray,
    pelvis_target: np.ndarray | None = None,
    hip_sigma: float = 0.0,
    breaks: tuple[int, ...] = (),
) -> None:
    """Pose the pelvis, spine, neck and head in place in ``D`` and ``P``.

    The head's rotation relative to the body heading is shared out: ``bend`` = (pelvis,
    spine) fractions of its pitch and roll, ``twist`` the spine's fraction of its turn; the
    neck bones take ``neck_share`` of what remains and the head bone the rest. A head lower
    than standing leans the trunk forward by ``crouch_lean`` radians per metre of drop.
    Without a pelvis tracker the pelvis is then placed so that the chain ends exactly at the
    head target; with one, the chain above the first spine joint swings toward the head.
    ``hip_sigma`` > 0 (no pelvis tracker) low-passes the pelvis's path, the spine swinging to
    keep the head exact.

    Args:
        body: Calibrated body.
        head_target: (N, 4, 4) world pose of the head bone.
        heading: (N,) body heading [rad].
        bend: (pelvis, spine) shares of the head's pitch and roll.
        twist: Spine share of the head's turn relative to the heading.
        crouch_lean: Forward lean per metre the head is below its standing height [rad/m].
        neck_share: Share of the chest-to-head rotation taken by the neck bones together.
        stiffness: Per spine joint (pelvis upward) stiffness in [0, 1); missing entries are 0.
        D: (N, J, 3, 3) world rotation deltas, written for the trunk roles.
        P: (N, J, 3) world joint positions [m], written for the trunk roles.
        pelvis_target: Optional (N, 4, 4) world pose of the pelvis bone from a tracker.
        hip_sigma: Gaussian sigma of the pelvis's path without a pelvis tracker [frames] (0: the
            pelvis hangs rigidly from the head).
        breaks: Frames where the head tracker jumped; the pelvis's path is smoothed between them.
    """
    path = body.trunk_path()
    head = path[-1]
    spine = [j for j in path if body.names[j].startswith("spine_")]
    necks = [j for j in path[1:-1] if j not in spine]
    ref_yaw = float(heading_of(body.forward))
    Q = rot_z(heading - ref_yaw)
    D_head = head_target[:, :3, :3] @ body.ref[head, :3, :3].T
    g = log_so3(np.swapaxes(Q, -1, -2) @ D_head)
    g_twist = g[:, 2:3] * _UP
    g_bend = g - g_twist
    drop = np.clip(body.head_height - (head_target[:, 2, 3] - body.floor), 0.0, None)
    lean_axis = np.cross(_UP, body.forward)
    lean = (crouch_lean * drop)[:, None] * lean_axis
    pelvis_share, spine_share = bend
    if pelvis_target is None:
        D[:, 0] = Q @ exp_so3(pelvis_share * g_bend + 0.4 * lean)
    else:
        D[:, 0] = pelvis_target[:, :3, :3] @ body.ref[0, :3, :3].T
    # Stiffer joints take less of the spine's share (Blender's ik_stiffness convention).
    stiff = np.zeros(len(spine))
    given = np.clip(np.asarray(stiffness, dtype=float)[: len(spine)], 0.0, 0.99)
    stiff[: given.size] = given
    weights = (1.0 - stiff) / np.sum(1.0 - stiff)
    total = spine_share * g_bend + twist * g_twist + 0.6 * lean
    chest = D[:, 0]
    for w, j in zip(weights, spine):
        chest = chest @ exp_so3(w * total)
        D[:, j] = chest
    D[:, head] = D_head
    for _ in range(2 if pelvis_target is not None else 1):
        if necks:
            rest = log_so3(np.swapaxes(D[:, spine[-1]], -1, -2) @ D_head)
            M_neck = exp_so3(rest * (neck_share / len(necks)))
            for j in necks:
                D[:, j] = D[:, body.parents[j]] @ M_neck
        reach = _reach(body, path, D)
        if pelvis_target is None:
            P[:, 0] = head_target[:, :3, 3] - reach
            if hip_sigma <= 0 or not spine:
                break
            # Hanging rigidly from the head, the pelvis carries every tremor of the head tracker
            # into the legs (a stretched leg passes it on to its foot: pops under tracker noise).
            # The spine swings to take up the tremor across it; the part along the spine, which
            # rigid bones cannot take up, stays in the pelvis so the head remains exact.
            hips = gaussian_smooth(P[:, 0], hip_sigma, breaks)
            base = hips + mv(D[:, 0], body.offsets[spine[0]])
            _swing_spine(body, path, D, _swing(hips + reach - base, head_target[:, :3, 3] - base))
            P[:, 0] = head_target[:, :3, 3] - _reach(body, path, D)
            break
        P[:, 0] = pelvis_target[:, :3, 3]
        base = P[:, 0] + mv(D[:, 0], body.offsets[spine[0]])
        tip = P[:, 0] + reach
        _swing_spine(body, path, D, _swing(tip - base, head_target[:, :3, 3] - base))
    _place_path(body, path, P, D)


def swing_trunk(body: Body, D: np.ndarray, P: np.ndarray, swing: np.ndarray) -> np.ndarray:
    """Swing a solved trunk about its head, in place in ``D`` and ``P``: the hips move, the head stays.

    The spine and neck bones turn by ``swing`` (world rotation vectors) and the pelvis (its
    rotation kept) is placed so the chain ends where the head was; frames with a zero swing are
    left bit for bit. Limbs hanging from the trunk are not touched (solve them afterwards).

    Args:
        body: Calibrated body.
        D: (N, J, 3, 3) world rotation deltas; the trunk roles are updated.
        P: (N, J, 3) world joint positions [m]; the trunk roles are updated.
        swing: (N, 3) rotation vectors of the swing [rad].

    Returns:
        (N,) True on the frames that moved.
    """
    moved = np.any(swing != 0.0, axis=-1)
    if not moved.any():
        return moved
    path = body.trunk_path()
    Dm, Pm = D[moved], P[moved]
    head = Pm[:, path[-1]].copy()
    _swing_spine(body, path, Dm, exp_so3(swing[moved]))
    Pm[:, 0] = head - _reach(body, path, Dm)
    _place_path(body, path, Pm, Dm)
    D[moved], P[moved] = Dm, Pm
    return moved


def _swing_spine(body: Body, path: list[int], D: np.ndarray, S: np.ndarray) -> None:
    """Turn the bones between the pelvis and the head bone of ``path`` by world rotations ``S`` (N, 3, 3)."""
    for j in path[1:-1]:
        D[:, j] = S @ D[:, j]


def _place_path(body: Body, path: list[int], P: np.ndarray, D: np.ndarray) -> None:
    """Joint positions along ``path`` (pelvis first) from the pelvis's, in place in ``P``."""
    for j in path[1:]:
        P[:, j] = P[:, body.parents[j]] + mv(D[:, body.parents[j]], body.offsets[j])


def _reach(body: Body, path: list[int], D: np.ndarray) -> np.ndarray:
    """(N, 3) offset from the pelvis to the end of ``path`` (pelvis first) under the rotations ``D`` [m]."""
    reach = np.zeros((D.shape[0], 3))
    for j in path[1:]:
        reach += mv(D[:, body.parents[j]], body.offsets[j])
    return reach


def _swing(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(N, 3, 3) shortest rotations taking directions ``a`` to ``b`` (N, 3)."""
    a, b = normalize(a), normalize(b)
    axis = np.cross(a, b)
    s = np.linalg.norm(axis, axis=-1)
    angle = np.arctan2(s, np.sum(a * b, axis=-1))
    return exp_so3(normalize(axis) * angle[:, None])
