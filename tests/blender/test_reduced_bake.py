# SPDX-License-Identifier: GPL-3.0-or-later
"""Key reduction on bake: far fewer keys, every chain tip within the tolerance of the full bake in playback."""

import json

import bpy
import numpy as np
import pytest

FRAMES = 120
# The README demo (the metarig example), built in a child process: enabling Rigify here makes
# bpy 4.2 segfault at exit (see test_rigify_body.py).
_BUILD = """
import importlib, os, sys
sys.path.insert(0, sys.argv[2])
import bpy
import cli
examples = importlib.import_module(cli.ensure_addon().__name__ + ".operators.examples")
examples.build_metarig_scene(frames=int(sys.argv[3]), solver="auto")
ok = bpy.ops.wm.save_as_mainfile(filepath=sys.argv[1]) == {"FINISHED"}
sys.stdout.flush()
os._exit(0 if ok else 1)
"""
TIPS = ("forearm.L", "forearm.R", "shin.L", "shin.R")


@pytest.fixture(scope="module")
def demo_blend(addon, blend_from_script):
    from pathlib import Path

    return blend_from_script(_BUILD, "reduce_demo", Path(__file__).resolve().parents[2], FRAMES)


def _bake(blend, tmp_path, tolerance: float) -> tuple[dict, np.ndarray]:
    """Bake the demo with ``tolerance``; returns the report and (F, 4, 3) chain tips in playback."""
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    arm = bpy.data.objects["Metarig"]
    bpy.context.view_layer.objects.active = arm
    path = tmp_path / f"report-{tolerance}.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES,
                                   key_tolerance=tolerance, report_path=str(path)) == {"FINISHED"}
    tips = np.empty((FRAMES, len(TIPS), 3))
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        tips[f - 1] = [tuple(arm.matrix_world @ arm.pose.bones[b].tail) for b in TIPS]
    return json.loads(path.read_text()), tips


def test_the_demo_keeps_a_fifth_of_its_keys_within_a_millimetre(demo_blend, tmp_path):
    """The README demo with 1 mm: at least 4.5x fewer keys (5.05x measured; the issue asks 5x), every tip on every
    frame within 1 mm of where the full bake puts it (measured here by playback), the report saying so and
    still agreeing with playback."""
    _, full = _bake(demo_blend, tmp_path, 0.0)
    report, reduced = _bake(demo_blend, tmp_path, 0.001)
    summary = report["key_reduction"]
    assert summary["measured_by"] == "playback"
    assert summary["keys_after"] * 4.5 <= summary["keys_before"], summary
    drift = np.linalg.norm(reduced - full, axis=-1)
    assert drift.max() <= 0.001 + 2e-6, drift.max()
    assert summary["max_deviation_m"] == pytest.approx(drift.max(), abs=2e-6)
    arm = bpy.data.objects["Metarig"]
    for chain in report["chains"]:  # the report is the reduced keys' playback, frame by frame
        tip = TIPS.index(chain["bones"][-1])
        target = bpy.data.objects[f"target.{chain['chain']}"] if f"target.{chain['chain']}" in bpy.data.objects \
            else None
        if target is None:
            continue
        for f in range(1, FRAMES + 1, 17):
            bpy.context.scene.frame_set(f)
            shown = np.linalg.norm(reduced[f - 1, tip] - np.array(target.matrix_world.translation))
            assert shown == pytest.approx(chain["position_error_m"][f - 1], abs=1e-5)
    assert arm.animation_data.action is not None


def test_zero_keeps_every_frame(demo_blend, tmp_path):
    report, _ = _bake(demo_blend, tmp_path, 0.0)
    assert "key_reduction" not in report


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_curve_model_is_how_blender_plays_auto_clamped_keys(empty_scene, addon_module, seed):
    """Keys at uneven frames (1 to 14 apart, so some handles hit the 5x length limit), values that turn and
    overshoot (so handles are cut at a neighbour's value): the model's curve is Blender's F-curve, frame by
    frame, with handle smoothing off as the reduced bake sets it."""
    reduction = addon_module("ik_core.take.key_reduction")
    rng = np.random.default_rng(seed)
    kept = np.concatenate([[0], np.cumsum(rng.integers(1, 15, size=14))])
    n = int(kept[-1]) + 1
    values = np.zeros((n, 1))
    values[kept, 0] = np.cumsum(rng.normal(size=len(kept)))
    obj = bpy.data.objects.new("Probe", None)
    bpy.context.scene.collection.objects.link(obj)
    obj.keyframe_insert("location", index=0, frame=0)
    (fc,) = addon_module("operators.compat").iter_fcurves(obj)
    fc.keyframe_points.add(len(kept) - 1)
    fc.keyframe_points.foreach_set("co", np.column_stack([kept.astype(float), values[kept, 0]]).ravel())
    fc.auto_smoothing = "NONE"
    fc.update()
    played = np.array([fc.evaluate(float(f)) for f in range(n)])
    model = reduction.interpolate_auto_clamped(values, kept)[:, 0]
    np.testing.assert_allclose(model, played, atol=2e-5 * max(1.0, np.abs(values).max()))
