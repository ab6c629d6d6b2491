# SPDX-License-Identifier: GPL-3.0-or-later
"""Damped Track and Track To convert to aim chains whose bake plays back as the constraints did."""

import json
import os
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

FRAMES = 24


@pytest.fixture
def tracked(empty_scene, addon_module):
    """A neck and head pointing up; the head tracked by a constraint to an empty circling in front of it."""
    bridge = addon_module("operators.bridge")
    compat = addon_module("operators.compat")
    arm = bridge.create_armature("Rig", np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.3]]),
                                 np.array([[0.0, 0.0, 1.3], [0.0, 0.0, 1.5]]), [-1, 0], ["Neck", "Head"])
    target = bpy.data.objects.new("Look", None)
    empty_scene.collection.objects.link(target)
    t = np.linspace(0.0, 2.0 * np.pi, FRAMES)
    path = np.stack([1.5 * np.sin(t), -2.0 + 0.5 * np.cos(t), 1.4 + 0.8 * np.sin(2.0 * t)], axis=1)
    compat.write_channels(target, [compat.Channel("location", i, "Object Transforms") for i in range(3)],
                          np.arange(1.0, FRAMES + 1.0), path)
    bpy.context.view_layer.objects.active = arm
    return arm, target


def _head_frames(arm) -> np.ndarray:
    """(FRAMES, 3, 3) world rotation of the head on every frame, as playback shows it."""
    out = []
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        M = np.array(arm.matrix_world @ arm.pose.bones["Head"].matrix)[:3, :3]
        out.append(M / np.linalg.norm(M, axis=0))
    return np.array(out)


def _angles(Ra, Rb) -> np.ndarray:
    c = (np.trace(np.swapaxes(Ra, -1, -2) @ Rb, axis1=-2, axis2=-1) - 1.0) / 2.0
    return np.arccos(np.clip(c, -1.0, 1.0))


@pytest.mark.parametrize(("kind", "influence"), [("DAMPED_TRACK", 1.0), ("TRACK_TO", 1.0), ("DAMPED_TRACK", 0.4)])
def test_converted_track_bakes_what_the_constraint_showed(tracked, kind, influence):
    """The aim chain's bake puts the head in the same orientation the constraint gave it, on every frame
    (at partial influence too: the head turned that part of the way from rest)."""
    arm, target = tracked
    con = arm.pose.bones["Head"].constraints.new(kind)
    con.target, con.track_axis = target, "TRACK_Z"  # the head bone's +Z faces world -Y, toward the target
    con.influence = influence
    if kind == "TRACK_TO":
        con.up_axis = "UP_Y"
    blender = _head_frames(arm)
    assert bpy.ops.articulate.aim_chains_from_tracks() == {"FINISHED"}
    chain = arm.articulate.chains[0]
    assert (chain.mode, chain.tip_bone, chain.chain_length, chain.aim_axis) == ("AIM", "Head", 1, "Z")
    assert chain.up_axis == ("Y" if kind == "TRACK_TO" else "NONE")
    assert chain.influence == pytest.approx(influence)
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    assert con.mute  # the bake muted the constraint the chain replaces
    baked = _head_frames(arm)
    assert np.degrees(_angles(blender, baked)).max() < 0.01
    # The neck did not move: a one-bone chain, as the constraint moved the head alone.
    assert np.allclose(np.array(arm.pose.bones["Neck"].matrix_basis), np.eye(4), atol=1e-6)


def test_locked_track_and_muted_constraints_are_skipped_with_notes(tracked):
    arm, target = tracked
    locked = arm.pose.bones["Head"].constraints.new("LOCKED_TRACK")
    locked.target = target
    muted = arm.pose.bones["Neck"].constraints.new("DAMPED_TRACK")
    muted.target, muted.mute = target, True
    with pytest.raises(RuntimeError, match="no Damped Track or Track To constraint to convert") as err:
        bpy.ops.articulate.aim_chains_from_tracks()
    assert "Locked Track 'Locked Track' turns about one axis only" in str(err.value)
    assert "Damped Track 'Damped Track' is muted" in str(err.value)
    assert len(arm.articulate.chains) == 0


def test_converting_twice_updates_the_chain(tracked):
    arm, target = tracked
    con = arm.pose.bones["Head"].constraints.new("DAMPED_TRACK")
    con.target = target
    bpy.ops.articulate.aim_chains_from_tracks()
    con.track_axis = "TRACK_NEGATIVE_X"
    bpy.ops.articulate.aim_chains_from_tracks()
    assert len(arm.articulate.chains) == 1 and arm.articulate.chains[0].aim_axis == "NEG_X"


@pytest.mark.slow
def test_cli_bakes_a_rig_made_with_damped_track(tracked, tmp_path):
    """`cli.py bake --from-tracks` converts the Damped Track, bakes it, and exits 0 with every frame aimed."""
    arm, target = tracked
    con = arm.pose.bones["Head"].constraints.new("DAMPED_TRACK")
    con.target, con.track_axis = target, "TRACK_Z"
    blend = tmp_path / "tracked.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    cli = Path(__file__).resolve().parents[2] / "cli.py"
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    proc = subprocess.run([sys.executable, str(cli), "bake", str(blend), "--armature", "Rig", "--frames",
                           f"1-{FRAMES}", "--from-tracks", "--report", str(tmp_path / "r.json")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1 aim chain(s)" in proc.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["chains"][0]["mode"] == "aim" and report["missed_frames"] == []
