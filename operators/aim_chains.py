# SPDX-License-Identifier: GPL-3.0-or-later
"""Aim chains from Blender's tracking constraints: Damped Track and Track To on pose bones, one click.

Each converts to a one-bone aim chain on the constrained bone (raise its Chain Length to spread
the turn along its parents): Damped Track's track axis becomes the aim axis; Track To's also
brings its up axis, toward world +Z as Track To turns it. The chain remembers the constraint, so
a bake with Mute IK Constraints mutes it as it mutes converted IK constraints. Locked Track, a
Track To whose up is the target's Z axis, and constraints in other than world space are skipped
with a note saying why.
"""

from __future__ import annotations

import bpy

from .chains import copy_influence, unique_chain_name
from .polls import armature_poll

TRACK_TYPES = ("DAMPED_TRACK", "TRACK_TO")
_AXIS = {"TRACK_X": "X", "TRACK_Y": "Y", "TRACK_Z": "Z", "TRACK_NEGATIVE_X": "NEG_X", "TRACK_NEGATIVE_Y": "NEG_Y",
         "TRACK_NEGATIVE_Z": "NEG_Z"}
_UP = {"UP_X": "X", "UP_Y": "Y", "UP_Z": "Z"}


def track_skip_reason(con: bpy.types.Constraint) -> str:
    """Why a tracking constraint does not convert to an aim chain ("" when it does)."""
    kind = con.type.replace("_", " ").title()
    if con.type == "LOCKED_TRACK":
        return (f"Locked Track {con.name!r} turns about one axis only: make an aim chain on a bone whose other "
                "IK axes are locked instead; skipped")
    if con.mute or not getattr(con, "enabled", True):
        return f"{kind} {con.name!r} is muted; skipped"
    if con.influence <= 0.0:
        return f"{kind} {con.name!r} has zero influence; skipped"
    if con.target is None:
        return f"{kind} {con.name!r} has no target; skipped"
    if con.owner_space != "WORLD" or con.target_space != "WORLD":
        return f"{kind} {con.name!r} works in {con.owner_space.lower()} space; only world space converts; skipped"
    if con.type == "TRACK_TO" and con.use_target_z:
        return (f"Track To {con.name!r} turns its up axis toward the target's Z axis, which aim chains do not "
                "(their up is world +Z or an up target's position); skipped")
    return ""


def chain_from_track(chain, pb: bpy.types.PoseBone, con: bpy.types.Constraint) -> None:
    """Fill an aim chain's settings from a Damped Track or Track To constraint on ``pb``."""
    chain.mode = "AIM"
    chain.tip_bone, chain.root_bone, chain.chain_length = pb.name, "", 1
    chain.target = con.target
    chain.target_bone = con.subtarget if con.target.type == "ARMATURE" else ""
    chain.aim_axis = _AXIS[con.track_axis]
    chain.up_axis = _UP[con.up_axis] if con.type == "TRACK_TO" else "NONE"
    chain.up_target = None
    chain.aim_spread = 0.0
    chain.constraint, chain.constraint_bone = con.name, pb.name


def convert_tracks(arm: bpy.types.Object) -> tuple[int, list[str]]:
    """Create or update one aim chain per Damped Track or Track To constraint; returns (count, notes)."""
    data = arm.articulate
    by_constraint = {(c.constraint_bone or c.tip_bone, c.constraint): c for c in data.chains if c.constraint}
    made, notes = 0, []
    for pb in arm.pose.bones:
        for con in pb.constraints:
            if con.type not in (*TRACK_TYPES, "LOCKED_TRACK"):
                continue
            reason = track_skip_reason(con)
            if reason:
                notes.append(f"{pb.name}: {reason}")
                continue
            if con.type == "TRACK_TO" and _UP[con.up_axis] == _AXIS[con.track_axis].replace("NEG_", ""):
                notes.append(f"{pb.name}: Track To {con.name!r} has its up axis along its track axis; skipped")
                continue
            chain = by_constraint.get((pb.name, con.name)) or data.chains.add()
            chain_from_track(chain, pb, con)
            note = copy_influence(arm, con, chain, [])  # its value, and its keys when it is keyed
            if note:
                notes.append(f"{pb.name}: {note}")
            chain.name = unique_chain_name(data, f"{pb.name} Aim", chain)
            made += 1
    return made, notes


class ARTICULATE_OT_aim_chains_from_tracks(bpy.types.Operator):
    """Create an aim chain for every Damped Track and Track To constraint of the armature's bones"""

    bl_idname = "articulate.aim_chains_from_tracks"
    bl_label = "Aim Chains from Track Constraints"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return armature_poll(cls, context, editable=True)

    def execute(self, context: bpy.types.Context) -> set[str]:
        arm = context.object
        made, notes = convert_tracks(arm)
        if not made:
            why = f": {'; '.join(notes)}" if notes else ""
            self.report({"ERROR"}, f"armature {arm.name!r} has no Damped Track or Track To constraint to convert{why}")
            return {"CANCELLED"}
        msg = f"{made} aim chain(s) from track constraints"
        self.report({"WARNING"} if notes else {"INFO"}, msg + (f"; notes: {'; '.join(notes)}" if notes else ""))
        return {"FINISHED"}


classes = (ARTICULATE_OT_aim_chains_from_tracks,)
