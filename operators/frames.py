# SPDX-License-Identifier: GPL-3.0-or-later
"""The frame range of every bake: the scene range, the preview range or a custom one, as the panel sets it.

Chain bakes, full-body bakes, IK/FK switching and Clear all take their frames from here: the
panel's Bake settings choose the source (:data:`RANGE_ITEMS`), and an operator run with
``use_scene_settings`` off takes its own Start and End instead (scripts and ``cli.py``).
"""

from __future__ import annotations

import bpy

from .baking import frame_range

RANGE_ITEMS = [
    ("SCENE", "Scene Range", "The scene's Start and End frames (Output properties, or the timeline's header)"),
    ("PREVIEW", "Preview Range", "The timeline's preview range; the scene range while the preview range is off"),
    ("CUSTOM", "Custom", "The Start and End set here, independent of the scene"),
]


def panel_range(scene: bpy.types.Scene) -> tuple[int, int, str]:
    """(start, end, where they come from) of the range the panel's Bake settings choose.

    The label names the source as the user sees it, e.g. "scene range" or "preview range (off:
    scene range)".
    """
    settings = scene.articulate
    source = settings.frame_range
    if source == "CUSTOM":
        return settings.frame_start, settings.frame_end, "custom range"
    if source == "PREVIEW":
        if scene.use_preview_range:
            return scene.frame_preview_start, scene.frame_preview_end, "preview range"
        return scene.frame_start, scene.frame_end, "scene range: the preview range is off"
    return scene.frame_start, scene.frame_end, "scene range"


class FrameRangeOptions:
    """Operator properties for a frame range: the panel's, or Start and End given to the operator."""

    use_scene_settings: bpy.props.BoolProperty(
        name="Use Panel Settings", default=True,
        description="Take the frame range (scene range, preview range or custom) from the Articulate panel's "
                    "Bake settings; off: use Start and End here",
    )
    frame_start: bpy.props.IntProperty(
        name="Start", default=1, description="First frame, when Use Panel Settings is off (as the timeline numbers it)"
    )
    frame_end: bpy.props.IntProperty(
        name="End", default=250, description="Last frame, included, when Use Panel Settings is off"
    )

    def start_end(self, context: bpy.types.Context) -> tuple[int, int]:
        """The (start, end) frames this run uses."""
        if self.use_scene_settings:
            start, end, _label = panel_range(context.scene)
            return start, end
        return self.frame_start, self.frame_end

    def frames(self, context: bpy.types.Context, step: int = 1) -> range:
        """The frames this run uses, every ``step``-th one.

        Raises:
            BakeFailed: An empty or reversed range, or a step below 1 (the message gives the range).
        """
        start, end = self.start_end(context)
        return frame_range(start, end, step)

    def draw_range(self, layout: bpy.types.UILayout, context: bpy.types.Context, step_prop: str = "") -> None:
        """The redo panel's range: the toggle, then the panel's range as text, or Start and End (and the step)."""
        layout.prop(self, "use_scene_settings")
        if self.use_scene_settings:
            start, end, label = panel_range(context.scene)
            layout.label(text=f"Frames {start}-{end} ({label})", icon="TIME")
            return
        row = layout.row(align=True)
        row.prop(self, "frame_start")
        row.prop(self, "frame_end")
        if step_prop:
            row.prop(self, step_prop)


def draw_panel_range(layout: bpy.types.UILayout, scene: bpy.types.Scene) -> None:
    """The Bake panel's range: the source, Start and End where they apply, and what the range is now."""
    settings = scene.articulate
    layout.prop(settings, "frame_range")
    row = layout.row(align=True)
    if settings.frame_range == "CUSTOM":
        row.prop(settings, "frame_start")
        row.prop(settings, "frame_end")
    else:
        start, end, label = panel_range(scene)
        row.label(text=f"Frames {start}-{end} ({label})", icon="TIME")
    row.prop(settings, "frame_step")
