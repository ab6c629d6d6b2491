# SPDX-License-Identifier: GPL-3.0-or-later
"""Planting: during each contact an effector's target is held where it landed, blended in and out."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import InvalidInputError
from ..model.rotations import matrix_to_rotvec, rotvec_to_matrix
from .detection import contact_intervals
from .inputs import as_mask, as_segment, as_trajectory, check_non_negative, check_positive

__all__ = ["PlantedTargets", "aim_tip", "plant_targets", "plant_weights"]


class PlantedTargets(NamedTuple):
    """Targets of one effector with its contacts planted.

    Attributes:
        positions: (N, 3) planted world positions [m].
        rotations: (N, 3, 3) planted world rotations, or None when none were given.
        weight: (N,) share of the held rotation in each frame's target, in [0, 1]; 0 outside
            contacts (:func:`plant_weights`, its release slowed with the position's).
        anchor: (N, 3) held position of each frame's contact (the landing position), NaN
            outside contacts.
    """

    positions: np.ndarray
    rotations: np.ndarray | None
    weight: np.ndarray
    anchor: np.ndarray


def _smoothstep(s: np.ndarray) -> np.ndarray:
    s = np.clip(s, 0.0, 1.0)
    return s * s * (3.0 - 2.0 * s)


def _ramp_frames(length: int, ramp: int) -> int:
    """Frames of each ease of a contact of ``length`` frames: ``ramp``, or less so both fit."""
    return min(ramp, length // 2)


def plant_weights(contact: np.ndarray, frame_time: float, blend_time: float = 0.1) -> np.ndarray:
    """(N,) weights of the held pose: 0 outside contacts, easing to 1 inside each one.

    Each contact eases in over its first ``blend_time`` and out over its last (a smoothstep, so
    the target's velocity changes gradually), and both ramps lie inside the contact: frames
    outside contacts keep weight 0 exactly. A contact shorter than two ramps gets shorter ones.

    Args:
        contact: (N,) booleans, True on contact frames.
        frame_time: Seconds per frame (> 0).
        blend_time: Duration of each ramp [s] (0: the held pose takes over at once).

    Returns:
        (N,) weights in [0, 1].

    Raises:
        InvalidInputError: On a wrong shape or a negative or non-finite time.
    """
    check_positive("frame_time", frame_time)
    check_non_negative("blend_time", blend_time)
    c = np.asarray(contact)
    if c.ndim != 1:
        raise InvalidInputError(f"contact must have shape (N,), one flag per frame, got {c.shape}")
    c = as_mask("contact", c, c.shape[0])
    ramp = int(round(blend_time / frame_time))
    w = np.zeros(c.shape[0])
    for start, stop in contact_intervals(c):
        m = _ramp_frames(stop - start, ramp)
        t = np.arange(start, stop)
        # +1 so the first and last contact frames already hold a little: weight 0 is reached
        # only outside the contact, where the target is the original one anyway.
        ease_in = _smoothstep((t - start + 1) / (m + 1))
        ease_out = _smoothstep((stop - t) / (m + 1))
        w[start:stop] = np.minimum(ease_in, ease_out)
    return w


def _hermite(a: np.ndarray, b: np.ndarray, va: np.ndarray, vb: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Cubic Hermite curve from ``a`` to ``b`` (3,) with tangents ``va``, ``vb`` (per unit u) at (K,) ``u``."""
    u = u[:, None]
    u2, u3 = u * u, u * u * u
    return a + (b - a) * (3.0 * u2 - 2.0 * u3) + va * (u3 - 2.0 * u2 + u) + vb * (u3 - u2)


def _flat(R: np.ndarray, up_axis: np.ndarray) -> np.ndarray:
    """``R`` (3, 3) turned by the shortest rotation that takes its ``up_axis`` to world +z."""
    a = R @ up_axis
    a = a / np.linalg.norm(a)
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(a, z)
    angle = np.arctan2(np.linalg.norm(axis), float(np.dot(a, z)))
    if np.linalg.norm(axis) < 1e-12:
        # Already up, or upside down: any horizontal axis turns it over.
        return R if angle < 1.0 else rotvec_to_matrix(np.array([np.pi, 0.0, 0.0])) @ R
    return rotvec_to_matrix(axis / np.linalg.norm(axis) * angle) @ R


def plant_targets(
    positions: np.ndarray,
    contact: np.ndarray,
    frame_time: float,
    rotations: np.ndarray | None = None,
    blend_time: float = 0.1,
    flat_up: np.ndarray | None = None,
    release_speed: float = 0.1,
) -> PlantedTargets:
    """Hold an effector's target where it landed during each contact.

    Inside a contact interval the target is the landing pose (position, and rotation when
    given); frames outside contacts are returned bit for bit. The position is held from the
    landing frame itself (no step) and released over the last ``blend_time`` of the contact
    along a cubic curve that leaves the held point at rest and ends on the original's last
    contact frame with the original's velocity (no step, no jump in speed, and no jitter of
    the original's ramp frames leaking in; the velocity is matched as far as the curve does not
    double back, so a foot that did not drift stays still; a contact that lasts to the end of
    the take is held to the end; see ``release_speed`` for long drifts). Rotations turn toward
    the held one by :func:`plant_weights` along the shortest arc.

    Args:
        positions: (N, 3) original world target positions of the effector [m].
        contact: (N,) booleans, True on contact frames (e.g. from
            :func:`ik_core.contacts.detect_contacts`).
        frame_time: Seconds per frame (> 0).
        rotations: (N, 3, 3) original world target rotations, or None to plant positions only.
        blend_time: Duration of the release (and of the rotation's ease in) inside each
            contact [s].
        flat_up: (3,) axis of the effector's own frame that points up when it stands flat; when
            given (with ``rotations``), the held rotation is the landing one tilted flat (its
            heading kept). None holds the landing rotation as it is.
        release_speed: Fastest average speed of the release [m/s]: an original that drifted far
            during the contact (a retarget's stride mismatch) is released over more frames than
            ``blend_time``, up to the whole contact but its landing frame, so the catch-up does
            not become a fast slide.

    Returns:
        The planted targets.

    Raises:
        InvalidInputError: On wrong shapes, NaN or infinite values, mismatched frame counts,
            ``flat_up`` without ``rotations`` or of zero length, or a negative time.
    """
    p = as_trajectory("positions", positions, single=True)
    n = p.shape[0]
    c = np.asarray(contact)
    if c.shape != (n,):
        raise InvalidInputError(f"contact must have shape ({n},), one flag per frame of positions, got {c.shape}")
    check_positive("release_speed", release_speed)
    w = plant_weights(c, frame_time, blend_time)
    c = w > 0.0
    R = None
    if rotations is not None:
        R = np.asarray(rotations, dtype=float)
        if R.shape != (n, 3, 3):
            raise InvalidInputError(f"rotations must have shape ({n}, 3, 3), one per frame, got {R.shape}")
        if not np.all(np.isfinite(R)):
            raise InvalidInputError("rotations contain NaN or infinite values; every entry must be finite")
    up = None
    if flat_up is not None:
        if R is None:
            raise InvalidInputError("flat_up needs rotations: pass the effector's (N, 3, 3) world rotations")
        up = np.asarray(flat_up, dtype=float)
        if up.shape != (3,) or not np.all(np.isfinite(up)) or np.linalg.norm(up) < 1e-9:
            raise InvalidInputError(f"flat_up must be a finite non-zero 3-vector, got {flat_up!r}")
    out_p = p.copy()
    out_R = None if R is None else R.copy()
    anchor = np.full((n, 3), np.nan)
    ramp = int(round(blend_time / frame_time))
    zero = np.zeros(3)
    for start, stop in contact_intervals(c):
        seg = slice(start, stop)
        held = p[start]
        anchor[seg] = held
        out_p[seg] = held
        # The hold starts at the landing frame's own position, so it starts without a step; it
        # is released along a cubic curve from rest at the held point to the original's last
        # contact frame, there joining the original's velocity. Only two original frames enter
        # the curve: a tracker's frame-to-frame jitter on the ramp does not leak into the foot.
        m = _ramp_frames(stop - start, ramp)
        last = p[stop - 1]
        drift = float(np.linalg.norm(last - held))
        if drift > 0.0 and stop < n:
            # a smoothstep-like curve peaks at 1.5 times its average speed
            slow = int(np.ceil(1.5 * drift / (release_speed * frame_time)))
            m = max(m, min(slow, stop - start - 1))
            tangent = (p[stop] - last) * m
            # A tangent longer than three times the chord makes the curve double back (a foot
            # that did not drift would rock): shorten it, trading a little of the speed match.
            room = 3.0 * float(np.linalg.norm(last - held))
            length = float(np.linalg.norm(tangent))
            if length > room:
                tangent = tangent * (room / length)
            u = (np.arange(stop - m, stop) - (stop - 1 - m)) / m
            out_p[stop - m : stop] = _hermite(held, last, zero, tangent, u)
            out_p[stop - 1] = last  # the curve's end, without its rounding
            if m > _ramp_frames(stop - start, ramp):
                # the rotation is released over the same slower frames as the position
                t = np.arange(start, stop)
                w[seg] = np.minimum(w[seg], _smoothstep((stop - t) / (m + 1)))
        if R is not None:
            held_R = R[start] if up is None else _flat(R[start], up)
            rel = matrix_to_rotvec(np.swapaxes(R[seg], -1, -2) @ held_R)
            out_R[seg] = R[seg] @ rotvec_to_matrix(w[seg, None] * rel)
    return PlantedTargets(out_p, out_R, w, anchor)


def aim_tip(base: np.ndarray, rotations: np.ndarray, tip: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Rotations turned about their base, by the shortest arc, so a segment's tip points at its targets.

    The pivot of a foot whose ball is planted while its heel rises: the ankle (``base``) follows
    its own target and the foot turns about it so the toe stays on the toe's planted target
    (exactly where the target is one segment length from the base; on the line toward it
    otherwise). Frames whose tip already points at its target are returned bit for bit.

    Args:
        base: (N, 3) world positions of the segment's base joint [m].
        rotations: (N, 3, 3) world rotations of the segment (or deltas from its reference pose).
        tip: (3,) tip offset from the base in the frame ``rotations`` act on [m].
        targets: (N, 3) world targets of the tip [m].

    Returns:
        (N, 3, 3) rotations, a new array.

    Raises:
        InvalidInputError: On wrong shapes or NaN or infinite values.
    """
    B, R, t = as_segment("base", base, rotations, "tip", tip)
    T = as_trajectory("targets", targets, single=True, frames=B.shape[0])
    now = np.einsum("nij,j->ni", R, t)
    want = T - B
    now_u = now / np.linalg.norm(now, axis=-1, keepdims=True)
    want_u = want / np.maximum(np.linalg.norm(want, axis=-1, keepdims=True), 1e-12)
    axis = np.cross(now_u, want_u)
    sin = np.linalg.norm(axis, axis=-1)
    angle = np.arctan2(sin, np.sum(now_u * want_u, axis=-1))
    turn = (sin > 1e-12) & (np.linalg.norm(want, axis=-1) > 1e-12)
    out = R.copy()
    if turn.any():
        out[turn] = rotvec_to_matrix(axis[turn] / sin[turn, None] * angle[turn, None]) @ R[turn]
    return out
