# SPDX-License-Identifier: GPL-3.0-or-later
"""The one place that knows where F-curves live on Blender 4.2-4.3, 4.4-4.5 and 5.0+.

- 4.2/4.3: legacy actions, ``action.fcurves.new(data_path, index=i, action_group=name)``.
- 4.4/4.5: layered actions with slots and channelbags; ``channelbag.fcurves.new`` takes no
  group, so the group is created in the channelbag and assigned afterwards.
- 5.0+: channelbags only (``Action.fcurves`` is gone); ``fcurves.new(..., group_name=name)``.

Keys are written in bulk (``keyframe_points.add`` + ``foreach_set`` + ``FCurve.update``), never
one by one: about 50 ms for 280,000 keys instead of minutes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import bpy
import numpy as np

LAYERED_ACTIONS = bpy.app.version >= (4, 4, 0)
GROUP_NAME_IN_NEW = bpy.app.version >= (5, 0, 0)

INTERPOLATION = {"CONSTANT": 0, "LINEAR": 1, "BEZIER": 2}

# Per-key attributes preserved when keys outside a replaced range are rewritten.
_KEY_ATTRIBUTES = (
    ("co", 2, np.float32),
    ("handle_left", 2, np.float32),
    ("handle_right", 2, np.float32),
    ("interpolation", 1, np.int32),
    ("handle_left_type", 1, np.int32),
    ("handle_right_type", 1, np.int32),
    ("type", 1, np.int32),
    ("easing", 1, np.int32),
    ("back", 1, np.float32),
    ("amplitude", 1, np.float32),
    ("period", 1, np.float32),
    ("select_control_point", 1, bool),
    ("select_left_handle", 1, bool),
    ("select_right_handle", 1, bool),
)


# Open transactions (operators/transaction.py) hear of an action here before this module changes
# it: a failed run then puts back exactly the actions it wrote, copied on their first change,
# without copying or comparing every action of the file. Every change to keys goes through here.
_watchers: list[Callable[[bpy.types.Action], None]] = []


@contextlib.contextmanager
def watching(callback: Callable[[bpy.types.Action], None]) -> Iterator[None]:
    """Within the block, ``callback(action)`` runs before this module changes an action's curves."""
    _watchers.append(callback)
    try:
        yield
    finally:
        _watchers.remove(callback)


def will_change(owner) -> None:
    """Announce a change to an action, or to an F-curve of one (a driver's curve belongs to no action)."""
    action = owner if isinstance(owner, bpy.types.Action) else getattr(owner, "id_data", None)
    if isinstance(action, bpy.types.Action):
        for callback in list(_watchers):
            callback(action)


class Channel(NamedTuple):
    """One animated value: an RNA data path, an array index and the group it belongs to."""

    data_path: str
    index: int
    group: str


def bone_data_path(bone_name: str, prop: str) -> str:
    """RNA path of a pose-bone property, e.g. ``pose.bones["Arm.L"].rotation_quaternion``."""
    return f'pose.bones["{bpy.utils.escape_identifier(bone_name)}"].{prop}'


def bone_channels(bone_name: str, prop: str, size: int) -> list[Channel]:
    """The ``size`` channels of one pose-bone property, grouped under the bone's name."""
    path = bone_data_path(bone_name, prop)
    return [Channel(path, i, bone_name) for i in range(size)]


def ensure_action(id_data: bpy.types.ID, name: str | None = None) -> bpy.types.Action:
    """The action animating ``id_data``, created and assigned (with a slot) when missing."""
    adt = id_data.animation_data or id_data.animation_data_create()
    if adt.action is None:
        adt.action = bpy.data.actions.new(name or f"{id_data.name}Action")
    if LAYERED_ACTIONS and adt.action_slot is None:
        action = adt.action
        suitable = [s for s in action.slots if s.target_id_type == id_data.id_type]
        adt.action_slot = suitable[0] if suitable else action.slots.new(id_data.id_type, id_data.name)
    return adt.action


def _channel_container(id_data: bpy.types.ID, create: bool):
    """The object holding ``fcurves`` and ``groups`` for ``id_data`` (action or channelbag)."""
    adt = id_data.animation_data
    if create:
        ensure_action(id_data)
        adt = id_data.animation_data
        will_change(adt.action)  # a layer, strip or channelbag may be added to it
    if adt is None or adt.action is None:
        return None
    if not LAYERED_ACTIONS:
        return adt.action
    if adt.action_slot is None:
        return None
    # Same steps as bpy_extras.anim_utils.action_ensure_channelbag_for_slot, which 4.4/4.5 lack.
    action = adt.action
    if not action.layers:
        if not create:
            return None
        action.layers.new("Layer")
    layer = action.layers[0]
    if not layer.strips:
        if not create:
            return None
        layer.strips.new(type="KEYFRAME")
    return layer.strips[0].channelbag(adt.action_slot, ensure=create)


def iter_fcurves(id_data: bpy.types.ID) -> list[bpy.types.FCurve]:
    """Every F-curve of the action slot animating ``id_data`` (empty when not animated)."""
    container = _channel_container(id_data, create=False)
    return list(container.fcurves) if container is not None else []


def action_fcurves(action: bpy.types.Action) -> list[bpy.types.FCurve]:
    """Every F-curve of ``action``, of all its slots (layered actions) or its legacy list."""
    if not LAYERED_ACTIONS:
        return list(action.fcurves)
    return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
            for fc in bag.fcurves]


def find_fcurve(id_data: bpy.types.ID, data_path: str, index: int) -> bpy.types.FCurve | None:
    """The F-curve for one channel of ``id_data``, or None."""
    container = _channel_container(id_data, create=False)
    return container.fcurves.find(data_path, index=index) if container is not None else None


def remove_fcurve(id_data: bpy.types.ID, fcurve: bpy.types.FCurve) -> None:
    """Remove one F-curve of ``id_data``'s action (slot)."""
    container = _channel_container(id_data, create=False)
    if container is not None:
        will_change(fcurve)
        container.fcurves.remove(fcurve)


def _ensure_group(container, name: str):
    for group in container.groups:
        if group.name == name:
            return group
    return container.groups.new(name)


def ensure_fcurve(id_data: bpy.types.ID, channel: Channel) -> bpy.types.FCurve:
    """The F-curve for ``channel``, created (with its action, slot and group) when missing."""
    container = _channel_container(id_data, create=True)
    fcurve = container.fcurves.find(channel.data_path, index=channel.index)
    if fcurve is not None:
        return fcurve
    if not LAYERED_ACTIONS:
        return container.fcurves.new(channel.data_path, index=channel.index, action_group=channel.group)
    if GROUP_NAME_IN_NEW:
        return container.fcurves.new(channel.data_path, index=channel.index, group_name=channel.group)
    fcurve = container.fcurves.new(channel.data_path, index=channel.index)
    if channel.group:
        fcurve.group = _ensure_group(container, channel.group)
    return fcurve


def _read_keys(points) -> dict[str, np.ndarray]:
    n = len(points)
    out = {}
    for attr, width, dtype in _KEY_ATTRIBUTES:
        buf = np.empty(n * width, dtype=dtype)
        points.foreach_get(attr, buf)
        out[attr] = buf.reshape(n, width)
    return out


def _set_keys(fcurve: bpy.types.FCurve, keys: dict[str, np.ndarray], extrapolation: str) -> None:
    """Replace ``fcurve``'s keys by ``keys`` (as :func:`_read_keys` gives them, every attribute, in bulk)."""
    will_change(fcurve)
    points = fcurve.keyframe_points
    points.clear()
    points.add(len(keys["co"]))
    for attr, _width, _dtype in _KEY_ATTRIBUTES:
        points.foreach_set(attr, keys[attr].ravel())
    fcurve.extrapolation = extrapolation
    fcurve.update()


def copy_keys(source: bpy.types.FCurve, dest: bpy.types.FCurve) -> None:
    """Make ``dest``'s keys and extrapolation a copy of ``source``'s (every key attribute, in bulk)."""
    _set_keys(dest, _read_keys(source.keyframe_points), source.extrapolation)


def write_fcurve(
    fcurve: bpy.types.FCurve,
    frames: np.ndarray,
    values: np.ndarray,
    *,
    interpolation: str | None = None,
    replace: tuple[float, float] | None = None,
) -> None:
    """Write keys to one F-curve in bulk, replacing a frame range and keeping every other key.

    Args:
        fcurve: The curve to write.
        frames: (N,) frame numbers, strictly increasing.
        values: (N,) values.
        interpolation: "CONSTANT", "LINEAR" or "BEZIER" for the new keys; None keeps the
            default Blender gives new keys (the user's preference, Bezier out of the box).
        replace: Inclusive frame range whose existing keys are removed first; defaults to
            ``(frames[0], frames[-1])``. Keys outside it keep every attribute.
    """
    frames = np.asarray(frames, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if frames.shape != values.shape or frames.ndim != 1:
        raise ValueError(f"frames and values must be equal-length 1-D arrays, got {frames.shape} and {values.shape}")
    if interpolation is not None and interpolation not in INTERPOLATION:
        raise ValueError(f"unknown interpolation {interpolation!r}; valid: {', '.join(INTERPOLATION)}")
    will_change(fcurve)
    points = fcurve.keyframe_points
    if replace is None:
        replace = (float(frames[0]), float(frames[-1])) if len(frames) else (0.0, -1.0)
    lo, hi = replace
    old_frames = np.empty(len(points) * 2, dtype=np.float32)
    points.foreach_get("co", old_frames)
    old_frames = old_frames[0::2]
    keep = (old_frames < lo - 1e-4) | (old_frames > hi + 1e-4)
    if not keep.any():
        # Fast path (a new curve, or one whose keys all fall in the range): only what differs
        # from the defaults Blender gives new keys is written.
        points.clear()
        points.add(len(frames))
        points.foreach_set("co", np.column_stack([frames, values]).astype(np.float32).ravel())
        # Setting an enum in bulk costs 3x the coordinates: skip it when the default matches.
        if interpolation is not None and len(frames) and points[0].interpolation != interpolation:
            points.foreach_set("interpolation", np.full(len(frames), INTERPOLATION[interpolation], np.int32))
        fcurve.update()
        return
    kept = {k: v[keep] for k, v in _read_keys(points).items()}
    n_keep = len(kept["co"])
    total = n_keep + len(frames)
    points.clear()
    points.add(total)
    # Freshly added keys carry the user's defaults (handle types, key type): start from those.
    merged = _read_keys(points)
    new = slice(n_keep, total)
    for attr in merged:
        merged[attr][:n_keep] = kept[attr]
    merged["co"][new, 0] = frames
    merged["co"][new, 1] = values
    merged["handle_left"][new] = merged["co"][new]
    merged["handle_right"][new] = merged["co"][new]
    if interpolation is not None:
        merged["interpolation"][new] = INTERPOLATION[interpolation]
    merged["select_control_point"][new] = False
    merged["select_left_handle"][new] = False
    merged["select_right_handle"][new] = False
    order = np.argsort(merged["co"][:, 0], kind="stable")
    for attr, _width, _dtype in _KEY_ATTRIBUTES:
        points.foreach_set(attr, merged[attr][order].ravel())
    fcurve.update()


def write_channels(
    id_data: bpy.types.ID,
    channels: Sequence[Channel],
    frames: np.ndarray,
    values: np.ndarray,
    *,
    interpolation: str | None = None,
    replace: tuple[float, float] | None = None,
) -> list[bpy.types.FCurve]:
    """Write N keys on each of K channels of ``id_data`` in bulk.

    Args:
        id_data: The animated ID (an armature object for pose bones).
        channels: K channels (see :func:`bone_channels`).
        frames: (N,) strictly increasing frame numbers.
        values: (N, K) values, column k for ``channels[k]``.
        interpolation: Interpolation of the new keys.
        replace: Inclusive frame range replaced on every channel (default: the frames' span).

    Returns:
        The K F-curves written.
    """
    values = np.asarray(values, dtype=np.float64)
    frames = np.asarray(frames, dtype=np.float64)
    if values.shape != (len(frames), len(channels)):
        raise ValueError(
            f"values must have shape (frames, channels) = ({len(frames)}, {len(channels)}), got {values.shape}"
        )
    if len(frames) > 1 and not np.all(np.diff(frames) > 0):
        raise ValueError("frames must be strictly increasing")
    curves = []
    for k, channel in enumerate(channels):
        fcurve = ensure_fcurve(id_data, channel)
        write_fcurve(fcurve, frames, values[:, k], interpolation=interpolation, replace=replace)
        curves.append(fcurve)
    return curves


def clear_range(id_data: bpy.types.ID, start: float, end: float, data_paths: set[str] | None = None) -> int:
    """Remove keys in the inclusive range [start, end]; returns how many were removed.

    Args:
        id_data: The animated ID.
        start: First frame of the range.
        end: Last frame of the range.
        data_paths: Only curves with these data paths; ``None`` means every curve.
    """
    removed = 0
    for fcurve in iter_fcurves(id_data):
        if data_paths is not None and fcurve.data_path not in data_paths:
            continue
        before = len(fcurve.keyframe_points)
        if before:
            write_fcurve(fcurve, np.zeros(0), np.zeros(0), replace=(start, end))
            removed += before - len(fcurve.keyframe_points)
    return removed
