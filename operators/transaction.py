# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators as transactions: an operator that fails leaves the file exactly as it found it.

Undo does not run for scripts, ``cli.py`` or background Blender, and an operator can fail half
way (a bake that keyed every joint and then died in its playback check). So every operator's
``execute`` runs inside a :class:`Snapshot` of what operators change, taken before it starts:

- the data-blocks that exist (objects, actions, meshes, ... made during the run are removed);
- the actions the run changes, copied whole by Blender (keys, handles, curves, groups, slots)
  the moment :mod:`.compat` (through which every key is written) is about to change them, and
  swapped back in when the run fails;
- per object: transform, parenting, visibility, animation data and drivers' mute flags, custom
  properties, the Articulate settings, pose channels, IK settings and constraints, bones;
- the scene's frame, range, rate, markers and Articulate settings; the active object and mode.

:func:`guarded` wraps an operator's ``execute``: on an exception or a CANCELLED result the
snapshot is put back, and an exception becomes an error report instead of a Python traceback
(the report names where it happened, for a bug report). An operator that finished but changed
data linked from a library is undone too: the change would be lost on save.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from pathlib import Path

import bpy

from . import compat
from .bridge.rig import linked_problem

# Data-blocks an operator may create: removed again when it fails (objects first, then their data).
CREATED = ("objects", "actions", "armatures", "meshes", "curves", "materials", "cameras", "lights", "images",
           "worlds", "collections")
# Snapshots of the runs under way, outermost first: an operator may run another (Import Cartesian
# Path runs Bake), and an inner run that fails swaps actions its outer runs must know of.
_open: list[Snapshot] = []
# Marks an error that no check of the operator foresaw (tests count these as tracebacks).
UNEXPECTED = "unexpected error"
_POSE = ("rotation_mode", "location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale",
         "lock_location", "lock_rotation", "lock_rotation_w", "lock_scale", "ik_stretch",
         *(f"{p}_{a}" for p in ("use_ik_limit", "ik_min", "ik_max", "lock_ik", "ik_stiffness") for a in "xyz"))
_OBJECT = ("location", "rotation_mode", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale",
           "parent", "parent_type", "parent_bone", "matrix_parent_inverse", "hide_viewport", "hide_render",
           "empty_display_type", "empty_display_size")
_SCENE = ("frame_start", "frame_end", "frame_step", "frame_preview_start", "frame_preview_end", "use_preview_range")


_NUMBERS = (float, int, bool)


def _plain(value):
    """A property's value as a comparable Python value (vectors and matrices as tuples)."""
    if isinstance(value, bpy.types.ID) or value is None or isinstance(value, (str, int, float, bool, set)):
        return value
    try:
        items = tuple(value)
    except TypeError:
        return value
    if all(type(v) in _NUMBERS for v in items):  # a vector or a flag array: already plain (the common case)
        return items
    return tuple(_plain(v) for v in items)


def rna_state(struct) -> dict:
    """Every editable property of a property group, nested groups and lists included, by identifier."""
    out = {}
    for prop in struct.bl_rna.properties:
        key = prop.identifier
        if key == "rna_type":
            continue
        value = getattr(struct, key)
        if prop.type == "COLLECTION":
            out[key] = [rna_state(item) for item in value]
        elif prop.type == "POINTER" and not isinstance(value, bpy.types.ID) and value is not None:
            out[key] = rna_state(value)
        elif not prop.is_readonly:
            out[key] = _plain(value)
    return out


def set_rna_state(struct, state: dict) -> None:
    """Give a property group the values :func:`rna_state` read (only those that differ are written)."""
    for prop in struct.bl_rna.properties:
        key = prop.identifier
        if key not in state:
            continue
        want = state[key]
        if prop.type == "COLLECTION":
            items = getattr(struct, key)
            if [rna_state(i) for i in items] != want:
                items.clear()
                for item_state in want:
                    set_rna_state(items.add(), item_state)
        elif prop.type == "POINTER" and isinstance(want, dict):
            set_rna_state(getattr(struct, key), want)
        elif _plain(getattr(struct, key)) != want:
            try:
                setattr(struct, key, want)
            except (ReferenceError, TypeError, ValueError):  # a pointer to an object removed since
                setattr(struct, key, None) if prop.type == "POINTER" else None


def _custom(id_data: bpy.types.ID) -> dict:
    """Custom properties (not the add-on's registered ones), as values that survive their ID changing."""
    registered = id_data.bl_rna.properties
    out = {}
    for key in id_data.keys():
        if key in registered:
            continue
        value = id_data[key]
        out[key] = value.to_dict() if hasattr(value, "to_dict") else (
            value.to_list() if hasattr(value, "to_list") else value)
    return out


def _set_custom(id_data: bpy.types.ID, state: dict) -> None:
    if _custom(id_data) == state:
        return
    for key in [k for k in id_data.keys() if k not in id_data.bl_rna.properties and k not in state]:
        del id_data[key]
    for key, value in state.items():
        id_data[key] = value


def _values(struct, names) -> dict:
    return {n: _plain(getattr(struct, n)) for n in names if hasattr(struct, n)}


def _set_values(struct, state: dict) -> None:
    for name, value in state.items():
        if _plain(getattr(struct, name)) != value:
            try:
                setattr(struct, name, value)
            except (ReferenceError, TypeError, ValueError, AttributeError):
                pass  # a parent removed since: nothing to restore it to


def _constraints(owner) -> dict:
    return {c.name: _values(c, ("mute", "influence", "enabled", "target", "subtarget")) for c in owner.constraints}


def _set_constraints(owner, state: dict) -> None:
    for con in owner.constraints:
        if con.name in state:
            _set_values(con, state[con.name])


class _ObjectState:
    """One local object as an operator may change it."""

    def __init__(self, obj: bpy.types.Object) -> None:
        self.obj = obj
        self.values = _values(obj, _OBJECT)
        self.custom = _custom(obj)
        self.articulate = rna_state(obj.articulate) if hasattr(obj, "articulate") else None
        self.constraints = _constraints(obj)
        adt = obj.animation_data
        self.animated = adt is not None
        self.action = adt.action if adt is not None else None
        self.action_pointer = self.action.as_pointer() if self.action is not None else 0
        self.slot = adt.action_slot_handle if adt is not None and compat.LAYERED_ACTIONS else None
        self.drivers = {(fc.data_path, fc.array_index): fc.mute for fc in adt.drivers} if adt is not None else {}
        self.pose = None
        if obj.type == "ARMATURE" and obj.pose is not None:
            self.bones = set(obj.data.bones.keys())
            self.pose = {pb.name: (_values(pb, _POSE), _constraints(pb)) for pb in obj.pose.bones}

    def restore(self, swapped: dict[int, bpy.types.Action]) -> None:
        """Put the object back; ``swapped`` maps the pointer of each action replaced by its copy to the copy."""
        obj = self.obj
        if self.action_pointer in swapped:
            self.action = swapped[self.action_pointer]
        self._restore_bones()
        _set_values(obj, self.values)
        _set_custom(obj, self.custom)
        if self.articulate is not None:
            set_rna_state(obj.articulate, self.articulate)
        _set_constraints(obj, self.constraints)
        self._restore_animation()
        for pb in obj.pose.bones if self.pose is not None else ():
            if pb.name in self.pose:
                values, constraints = self.pose[pb.name]
                _set_values(pb, values)
                _set_constraints(pb, constraints)

    def _restore_animation(self) -> None:
        obj = self.obj
        adt = obj.animation_data
        if not self.animated:
            if adt is not None:
                obj.animation_data_clear()
            return
        if adt is None:
            adt = obj.animation_data_create()
        if adt.action != self.action:
            adt.action = self.action
        if self.slot is not None and adt.action_slot_handle != self.slot:
            slot = next((s for s in self.action.slots if s.handle == self.slot), None) if self.action else None
            if slot is not None:
                adt.action_slot = slot
        for fc in adt.drivers:
            mute = self.drivers.get((fc.data_path, fc.array_index))
            if mute is not None and fc.mute != mute:
                fc.mute = mute

    def _restore_bones(self) -> None:
        """Remove bones the run added (a robot chain's tool bone), in edit mode as Blender requires."""
        if self.pose is None or set(self.obj.data.bones.keys()) <= self.bones:
            return
        view_layer = bpy.context.view_layer
        if self.obj.name not in view_layer.objects:
            return
        active, mode = view_layer.objects.active, bpy.context.mode
        if mode != "OBJECT":
            bpy.ops.object.mode_set(mode="OBJECT")
        view_layer.objects.active = self.obj
        bpy.ops.object.mode_set(mode="EDIT")
        edit = self.obj.data.edit_bones
        for bone in [b for b in edit if b.name not in self.bones]:
            edit.remove(bone)
        bpy.ops.object.mode_set(mode="OBJECT")
        view_layer.objects.active = active


class Snapshot:
    """What operators change in the file, taken before a run, to put back when it fails."""

    def __init__(self, context: bpy.types.Context) -> None:
        scene = context.scene
        self.scene = scene
        self.ids = {name: {i.as_pointer() for i in getattr(bpy.data, name)} for name in CREATED}
        local = [o for o in bpy.data.objects if o.library is None]
        self.objects = [_ObjectState(o) for o in local]
        self.linked = {o.name_full: (_custom(o), rna_state(o.articulate)) for o in bpy.data.objects
                       if o.library is not None}
        # Actions are copied on their first change only (compat.will_change): (original, copy) by pointer.
        self.actions: dict[int, tuple[bpy.types.Action, bpy.types.Action]] = {}
        self.aliases: dict[int, int] = {}  # an inner run's copy swapped in -> the action it stands for
        self.frame = scene.frame_current
        self.scene_values = _values(scene, _SCENE)
        self.rate = (scene.render.fps, scene.render.fps_base)
        self.markers = [(m.name, m.frame, m.select, m.camera) for m in scene.timeline_markers]
        self.settings = rna_state(scene.articulate)
        self.active = context.view_layer.objects.active
        self.mode = context.mode

    def linked_changed(self) -> list[str]:
        """Names of objects linked from a library whose properties the run changed."""
        return [o.name for o in bpy.data.objects if o.library is not None and o.name_full in self.linked
                and self.linked[o.name_full] != (_custom(o), rna_state(o.articulate))]

    def before_change(self, action: bpy.types.Action) -> None:
        """Keep a copy of an action about to change, the first time (Blender copies it whole, in C).

        Actions made during the run are not copied: they are removed when it fails.
        """
        pointer = action.as_pointer()
        pointer = self.aliases.get(pointer, pointer)
        if pointer in self.actions or pointer not in self.ids["actions"] or action.library is not None:
            return
        self.actions[pointer] = (action, action.copy())

    def replaced(self, pointer: int, copy: bpy.types.Action) -> None:
        """An inner run put ``copy`` in place of the action at ``pointer``: it is that action from now on."""
        pointer = self.aliases.get(pointer, pointer)
        if pointer not in self.ids["actions"]:
            return  # made during this run: removed with the rest
        self.aliases[copy.as_pointer()] = pointer
        self.ids["actions"].add(copy.as_pointer())
        if pointer in self.actions:
            self.actions[pointer] = (copy, self.actions[pointer][1])

    def discard(self) -> None:
        """Forget the snapshot (the run succeeded): the action copies go."""
        for _original, copy in self.actions.values():
            bpy.data.actions.remove(copy)
        self.actions = {}

    def restore(self) -> None:
        """Put the file back as it was when the snapshot was taken."""
        if bpy.context.mode != "OBJECT" and self.mode == "OBJECT":
            bpy.ops.object.mode_set(mode="OBJECT")
        self._remove_created()
        swapped = self._restore_actions()
        for state in self.objects:
            if _alive(state.obj):
                state.restore(swapped)
        self._restore_linked()
        scene = self.scene
        _set_values(scene, self.scene_values)
        if (scene.render.fps, scene.render.fps_base) != self.rate:
            scene.render.fps, scene.render.fps_base = self.rate
        if [(m.name, m.frame, m.select, m.camera) for m in scene.timeline_markers] != self.markers:
            scene.timeline_markers.clear()
            for name, frame, select, camera in self.markers:
                marker = scene.timeline_markers.new(name, frame=frame)
                marker.select, marker.camera = select, camera
        set_rna_state(scene.articulate, self.settings)
        view_layer = bpy.context.view_layer
        if _alive(self.active) and view_layer.objects.active != self.active:
            view_layer.objects.active = self.active
        mode = "EDIT" if self.mode.startswith("EDIT") else self.mode
        if bpy.context.mode != self.mode and mode in ("EDIT", "POSE", "OBJECT") and _alive(self.active):
            bpy.ops.object.mode_set(mode=mode)
        # Evaluate the restored keys at the frame the run started on (it may have stepped through others).
        scene.frame_set(self.frame)

    def _remove_created(self) -> None:
        for name in CREATED:
            collection = getattr(bpy.data, name)
            # The copies every open run keeps (an outer run's too, made while this one ran) are not this run's.
            copies = {c.as_pointer() for snap in {*_open, self} for _o, c in snap.actions.values()
                      } if name == "actions" else set()
            made = [i for i in collection if i.as_pointer() not in self.ids[name] and i.as_pointer() not in copies]
            for item in made:
                collection.remove(item)

    def _restore_actions(self) -> dict[int, bpy.types.Action]:
        """Swap each changed action for its copy, everywhere it is used, under its own name.

        Returns:
            The copy now in use, by the pointer of the action it replaced.
        """
        swapped = {}
        for pointer, (original, copy) in self.actions.items():
            if not _alive(original):
                bpy.data.actions.remove(copy)
                continue
            name, fake = original.name, original.use_fake_user
            original.user_remap(copy)
            bpy.data.actions.remove(original)
            copy.name, copy.use_fake_user = name, fake
            swapped[pointer] = copy
            for outer in _open:
                if outer is not self:
                    outer.replaced(pointer, copy)
        self.actions = {}
        return swapped

    def _restore_linked(self) -> None:
        for obj in bpy.data.objects:
            saved = self.linked.get(obj.name_full) if obj.library is not None else None
            if saved is not None and saved != (_custom(obj), rna_state(obj.articulate)):
                _set_custom(obj, saved[0])
                set_rna_state(obj.articulate, saved[1])


def _alive(id_data) -> bool:
    """False for a data-block removed since it was referenced (its Python object then raises)."""
    if id_data is None:
        return False
    try:
        _ = id_data.name
    except ReferenceError:
        return False
    return True


def where(err: BaseException) -> str:
    """"<ErrorType> at <file>:<line>": the innermost frame of the add-on, for a bug report without a traceback."""
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if "operators" in f.filename or "ik_core" in f.filename] or frames
    last = ours[-1] if ours else None
    place = f" at {Path(last.filename).name}:{last.lineno}" if last else ""
    return f"{type(err).__name__}{place}"


def guarded(execute: Callable) -> Callable:
    """``execute`` run as a transaction (see the module's docstring); idempotent."""
    if getattr(execute, "articulate_transaction", False):
        return execute

    @functools.wraps(execute)
    def run(self, context):
        snapshot = Snapshot(context)
        _open.append(snapshot)
        try:
            return _run(self, context, execute, snapshot)
        finally:
            _open.remove(snapshot)

    run.articulate_transaction = True
    return run


def _run(op: bpy.types.Operator, context: bpy.types.Context, execute: Callable, snapshot: Snapshot) -> set[str]:
    """``execute`` with ``snapshot`` put back when it raises, cancels or changes linked data."""
    try:
        with compat.watching(snapshot.before_change):
            result = execute(op, context)
    except Exception as err:  # the last line of defence: nothing the checks foresaw
        _undo(op, snapshot)
        op.report({"ERROR"}, f"{op.bl_label}: {UNEXPECTED} ({where(err)}: {err}); nothing was changed. "
                             "Please report it with the file")
        return {"CANCELLED"}
    if "CANCELLED" in result:
        _undo(op, snapshot)
        return result
    linked = snapshot.linked_changed()
    if linked:
        _undo(op, snapshot)
        op.report({"ERROR"}, linked_problem(bpy.data.objects[linked[0]]))
        return {"CANCELLED"}
    snapshot.discard()
    return result


def _undo(op: bpy.types.Operator, snapshot: Snapshot) -> None:
    """Put the snapshot back; a failure to do so is reported, never raised over the operator's own error."""
    try:
        snapshot.restore()
    except Exception as err:  # reported: the user must know the file may hold part of the run
        op.report({"ERROR"}, f"{op.bl_label}: could not undo everything it changed ({where(err)}: {err}); "
                             "check the result or revert the file")


def guard_all(classes: tuple) -> tuple:
    """Give every operator class of ``classes`` a transactional ``execute``; returns ``classes``."""
    for cls in classes:
        if "execute" in cls.__dict__ or hasattr(cls, "execute"):
            cls.execute = guarded(cls.execute)
    return classes
