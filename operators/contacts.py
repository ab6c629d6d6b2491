# SPDX-License-Identifier: GPL-3.0-or-later
"""Contacts of a chain's effector with the ground: Detect Contacts and the contact list (see :mod:`.planting`).

A chain with **Contacts** on has a list of contact intervals (frames, both ends included),
filled by Detect Contacts from its target's animation and editable by hand; bakes plant its
target during them.
"""

from __future__ import annotations

from collections.abc import Sequence

import bpy
import numpy as np

from ..ik_core import ArticulateError
from ..ik_core.contacts import contact_intervals, detect_contacts
from ..ik_core.errors import name_hint
from . import bridge
from .baking import BakeFailed, check_target
from .frames import FrameRangeOptions
from .planting import PlantingFailed, frame_time, ground_levels, options, rest_height
from .polls import chain_poll

MARKER_PREFIX = "Contact"


def fill_contact_list(items, spans: Sequence[tuple[int, int]]) -> None:
    """Replace a contact list's items (a chain's, or a foot's Known Steps) by ``spans`` (start, end), in order."""
    items.clear()
    for start, end in sorted(spans):
        item = items.add()
        item.name, item.frame_start, item.frame_end = f"{start}-{end}", start, end


def store_intervals(chain, frames: Sequence[int], contact: np.ndarray) -> int:
    """Replace the chain's contacts inside ``frames`` by the runs of ``contact`` (N,); those outside stay.

    Returns:
        The number of intervals stored.
    """
    first, last = int(frames[0]), int(frames[-1])
    keep = [(c.frame_start, c.frame_end) for c in chain.contacts if c.frame_end < first or c.frame_start > last]
    new = [(int(frames[a]), int(frames[b - 1])) for a, b in contact_intervals(contact)]
    fill_contact_list(chain.contacts, keep + new)
    chain.active_contact = 0
    return len(new)


def _marker_name(arm: bpy.types.Object, chain, edge: str) -> str:
    return f"{MARKER_PREFIX} {arm.name}:{chain.name} {edge}"


def mark_contacts(scene: bpy.types.Scene, arm: bpy.types.Object, chain, first: int, last: int) -> int:
    """Replace the chain's contact markers on frames ``first``..``last`` by one at each contact's start and end.

    Returns:
        The number of markers added.
    """
    names = {_marker_name(arm, chain, "down"), _marker_name(arm, chain, "up")}
    for m in [m for m in scene.timeline_markers if m.name in names and first <= m.frame <= last]:
        scene.timeline_markers.remove(m)
    added = 0
    for c in chain.contacts:
        for frame, edge in ((c.frame_start, "down"), (c.frame_end, "up")):
            if first <= frame <= last:
                scene.timeline_markers.new(_marker_name(arm, chain, edge), frame=frame)
                added += 1
    return added


def detect(scene: bpy.types.Scene, arm: bpy.types.Object, chains: Sequence, frames: range,
           depsgraph: bpy.types.Depsgraph, markers: bool) -> list[tuple[str, int, int]]:
    """Detect and store the contacts of ``chains`` from their targets' paths over ``frames``; turn Contacts on.

    Everything is checked and sampled before any chain is changed.

    Returns:
        Per chain (name, intervals found, contact frames).

    Raises:
        BakeFailed: A chain without a valid target, bad thresholds, a ground collection that
            cannot be measured, or fewer than two frames.
    """
    if len(frames) < 2:
        raise BakeFailed(f"contacts need at least two frames to measure speeds; the range has {len(frames)}")
    for chain in chains:
        check_target(arm, chain, {b.name for b in _chain_bones(arm, chain)})
    try:
        paths = bridge.sample_targets(scene, list(frames), [(c.target, c.target_bone) for c in chains])
    except bridge.BridgeError as err:
        raise BakeFailed(str(err)) from None
    found = []
    for chain, M in zip(chains, paths):
        p = M[:, :3, 3]
        try:
            ground = ground_levels(chain, p, depsgraph)
            lifted = p - np.column_stack([np.zeros((len(p), 2)), ground])  # heights above the ground under each frame
            contact = detect_contacts(lifted, frame_time(scene, frames.step), 0.0, rest_height(chain, p, ground),
                                      options(chain))
        except PlantingFailed as err:
            raise BakeFailed(str(err)) from None
        except ArticulateError as err:
            raise BakeFailed(f"chain {chain.name!r}: {err}") from None
        found.append((chain, contact))
    out = []
    for chain, contact in found:
        n = store_intervals(chain, frames, contact)
        chain.use_contacts = True
        if markers:
            mark_contacts(scene, arm, chain, frames[0], frames[-1])
        out.append((chain.name, n, int(contact.sum())))
    return out


def _chain_bones(arm: bpy.types.Object, chain) -> list:
    try:
        return bridge.chain_bones(arm, chain)
    except bridge.BridgeError as err:
        raise BakeFailed(f"chain {chain.name!r}: {err}") from None


def _target_chains(arm: bpy.types.Object, name: str, every: bool) -> list:
    data = arm.articulate
    if every:
        chains = [c for c in data.chains if c.use_contacts]
        if not chains:
            raise BakeFailed(f"armature {arm.name!r} has no chain with Contacts on; turn Contacts on for a chain "
                             "or name one")
        return chains
    if name:
        chain = data.chains.get(name)
        if chain is None:
            raise BakeFailed(f"armature {arm.name!r} has no chain {name!r}; "
                             + name_hint(name, data.chains.keys(), "chain"))
        return [chain]
    if not 0 <= data.active_chain < len(data.chains):
        raise BakeFailed(f"armature {arm.name!r} has no active chain")
    return [data.chains[data.active_chain]]


class ARTICULATE_OT_contacts_detect(FrameRangeOptions, bpy.types.Operator):
    """Find the contacts of the chain's target with the ground over the frame range and fill the contact list"""

    bl_idname = "articulate.contacts_detect"
    bl_label = "Detect Contacts"
    bl_options = {"REGISTER", "UNDO"}

    armature: bpy.props.StringProperty(
        name="Armature", description="Armature object to work on; empty for the active object",
        options={"HIDDEN", "SKIP_SAVE"},
    )
    chain: bpy.props.StringProperty(
        name="Chain", description="The chain to detect on; empty for the active chain", options={"HIDDEN", "SKIP_SAVE"},
    )
    all_chains: bpy.props.BoolProperty(
        name="Every Chain with Contacts", description="Detect on every chain whose Contacts is on",
        options={"SKIP_SAVE"},
    )
    add_markers: bpy.props.BoolProperty(
        name="Add Markers", default=True,
        description="Add a timeline marker where each contact starts (down) and ends (up)",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return chain_poll(cls, context, editable=True)

    def draw(self, context: bpy.types.Context) -> None:
        self.draw_range(self.layout, context)
        self.layout.prop(self, "add_markers")

    def execute(self, context: bpy.types.Context) -> set[str]:
        try:
            arm = bpy.data.objects.get(self.armature) if self.armature else context.object
            if arm is None or arm.type != "ARMATURE":
                raise BakeFailed(f"no armature {self.armature!r}" if self.armature else "the active object is not "
                                 "an armature")
            chains = _target_chains(arm, self.chain, self.all_chains)
            frames = self.frames(context)
            found = detect(context.scene, arm, chains, frames, context.evaluated_depsgraph_get(), self.add_markers)
        except BakeFailed as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        text = "; ".join(f"{name}: {n} contact(s), {k} of {len(frames)} frames" for name, n, k in found)
        self.report({"INFO"}, f"Frames {frames[0]}-{frames[-1]}: {text}")
        return {"FINISHED"}


class ARTICULATE_OT_contact_add(bpy.types.Operator):
    """Add a contact interval to the active chain's list, starting and ending on the current frame"""

    bl_idname = "articulate.contact_add"
    bl_label = "Add Contact"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return chain_poll(cls, context, editable=True)

    def execute(self, context: bpy.types.Context) -> set[str]:
        data = context.object.articulate
        chain = data.chains[data.active_chain]
        frame = context.scene.frame_current
        item = chain.contacts.add()
        item.name, item.frame_start, item.frame_end = f"{frame}-{frame}", frame, frame
        chain.active_contact = len(chain.contacts) - 1
        return {"FINISHED"}


class ARTICULATE_OT_contact_remove(bpy.types.Operator):
    """Remove the selected contact interval of the active chain"""

    bl_idname = "articulate.contact_remove"
    bl_label = "Remove Contact"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not chain_poll(cls, context, editable=True):
            return False
        data = context.object.articulate
        if not len(data.chains[data.active_chain].contacts):
            cls.poll_message_set("The chain's contact list is empty")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[str]:
        data = context.object.articulate
        chain = data.chains[data.active_chain]
        if not 0 <= chain.active_contact < len(chain.contacts):
            self.report({"ERROR"}, f"chain {chain.name!r}: no contact is selected in its list")
            return {"CANCELLED"}
        chain.contacts.remove(chain.active_contact)
        chain.active_contact = max(0, min(chain.active_contact, len(chain.contacts) - 1))
        return {"FINISHED"}


classes = (ARTICULATE_OT_contacts_detect, ARTICULATE_OT_contact_add, ARTICULATE_OT_contact_remove)
