# SPDX-License-Identifier: GPL-3.0-or-later
"""Operator polls that say why they fail: the tooltip of a greyed-out button, and the error of a script's call.

Each check returns whether the operator can run and, when it cannot, sets the operator's poll
message (``poll_message_set``, as Blender's pose_library does) instead of Blender's "context is
incorrect".
"""

from __future__ import annotations

import bpy

from .bridge.rig import linked_problem


def _active_object_problem(context: bpy.types.Context) -> str:
    """Why the active object is not an armature ("" when it is)."""
    obj = context.object
    if obj is None:
        return "Select an armature: no object is active"
    if obj.type != "ARMATURE":
        return f"The active object {obj.name!r} is a {obj.type.lower()}; select an armature"
    return ""


def armature_poll(cls, context: bpy.types.Context, editable: bool = False) -> bool:
    """An armature is active; with ``editable``, one whose changes can be saved (not linked from a library)."""
    problem = _active_object_problem(context) or (linked_problem(context.object) if editable else "")
    if problem:
        cls.poll_message_set(problem)
    return not problem


def chain_poll(cls, context: bpy.types.Context, editable: bool = False) -> bool:
    """An armature with an active Articulate chain is active (``editable``: and not linked)."""
    if not armature_poll(cls, context, editable):
        return False
    data = context.object.articulate
    if not 0 <= data.active_chain < len(data.chains):
        how = ("select one in the Articulate panel's list" if len(data.chains) else
               "add one (the + button of the Articulate panel) or convert its IK constraints")
        cls.poll_message_set(f"Armature {context.object.name!r} has no active chain: {how}")
        return False
    return True


def list_poll(cls, context: bpy.types.Context, collection: str, how: str, editable: bool = False) -> bool:
    """An armature is active whose ``articulate.<collection>`` list is not empty; ``how`` says how to fill it."""
    if not armature_poll(cls, context, editable):
        return False
    if len(getattr(context.object.articulate, collection)) == 0:
        cls.poll_message_set(f"The list is empty: {how} first")
        return False
    return True


def robot_poll(cls, context: bpy.types.Context, editable: bool = False) -> bool:
    """A robot rig (made by Add Robot or Import URDF) is active (``editable``: and not linked)."""
    obj = context.object
    if obj is None or "articulate_robot" not in obj:
        what = "no object is active" if obj is None else f"{obj.name!r} is not one"
        cls.poll_message_set(f"select a robot rig first (Add Robot or Import URDF makes one): {what}")
        return False
    if editable and (problem := linked_problem(obj)):
        cls.poll_message_set(problem)
        return False
    return True
