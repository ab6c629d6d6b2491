# SPDX-License-Identifier: GPL-3.0-or-later
"""Alternative poses of a redundant arm: each reaches its target in Blender, in limits; a bake keeps the one picked."""

import math

import bpy
import numpy as np
import pytest

FRAMES = 30
START = np.array([0.55, 0.25, 1.2])  # the target on frame 1 [m]
DRIFT = np.array([0.06, -0.04, 0.05])  # how far it moves by frame 30 [m]
TOLERANCE = 1e-4


@pytest.fixture
def arm_scene(empty_scene, addon_module):
    """Clavicle + upper arm + forearm + hand along +X, limited by IK limits and a Limit Rotation constraint."""
    build = addon_module("operators.bridge.build")
    heads = np.array([[0.0, 0.0, 1.4], [0.15, 0.0, 1.4], [0.45, 0.0, 1.4], [0.72, 0.0, 1.4]])
    tails = np.array([[0.15, 0.0, 1.4], [0.45, 0.0, 1.4], [0.72, 0.0, 1.4], [0.82, 0.0, 1.4]])
    arm = build.create_armature("Rig", heads, tails, [-1, 0, 1, 2], ["Clavicle", "UpperArm", "ForeArm", "Hand"])
    pb = arm.pose.bones
    for name, limits in (("Clavicle", {"x": 20, "z": 20}), ("UpperArm", {"x": 90, "y": 60, "z": 90})):
        for axis, deg in limits.items():
            setattr(pb[name], f"use_ik_limit_{axis}", True)
            setattr(pb[name], f"ik_min_{axis}", -math.radians(deg))
            setattr(pb[name], f"ik_max_{axis}", math.radians(deg))
    pb["Clavicle"].lock_ik_y = True
    fore = pb["ForeArm"]
    fore.lock_ik_y = fore.lock_ik_z = True
    fore.use_ik_limit_x, fore.ik_min_x, fore.ik_max_x = True, 0.0, math.radians(150)
    hand = pb["Hand"].constraints.new("LIMIT_ROTATION")
    hand.owner_space = "LOCAL"
    for axis in "xz":
        setattr(hand, f"use_limit_{axis}", True)
        setattr(hand, f"min_{axis}", -math.radians(40))
        setattr(hand, f"max_{axis}", math.radians(40))
    pb["Hand"].lock_ik_y = True
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    compat = addon_module("operators.compat")
    path = START + np.linspace(0.0, 1.0, FRAMES)[:, None] * DRIFT
    compat.write_channels(target, [compat.Channel("location", i, "Object Transforms") for i in range(3)],
                          np.arange(1.0, FRAMES + 1.0), path)
    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.chain_length, chain.target = "Arm", "Hand", 4, target
    chain.tolerance = TOLERANCE
    bpy.context.view_layer.objects.active = arm
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, FRAMES
    bpy.context.scene.frame_set(1)
    return arm, target


def _tip_error(arm, target) -> float:
    """Distance [m] from the hand's tail, as Blender evaluates the pose, to the target."""
    bpy.context.view_layer.update()
    tail = np.array(arm.matrix_world @ arm.pose.bones["Hand"].tail)
    return float(np.linalg.norm(tail - np.array(target.matrix_world.translation)))


def _configuration(addon_module, arm):
    """The chain's configuration (its skeleton's q) of the pose Blender shows, and the prepared chain."""
    baking = addon_module("operators.baking")
    bridge = addon_module("operators.bridge")
    p = baking.prepare_chains(arm, [arm.articulate.chains[0]])[0]
    return baking.configurations(p, bridge.pose_rotations(p.bones)[None])[0], p


def _inside_limits(addon_module, arm) -> bool:
    """Every chain bone's rotation inside its limit (IK limits and Limit Rotation, read as the bake reads them)."""
    bridge = addon_module("operators.bridge")
    for pb in arm.pose.bones:
        limit = bridge.bone_limit(pb)
        R = bridge.pose_rotations([pb])
        if limit is not None and not limit.contains_matrix(R, 1e-6).all():
            return False
    return True


def test_each_alternative_reaches_the_target_inside_the_limits(arm_scene, addon_module, core):
    """At least two poses, pairwise apart; each, used, puts the evaluated tip on the target within the limits."""
    arm, target = arm_scene
    assert bpy.ops.articulate.chain_alternatives() == {"FINISHED"}
    items = arm.articulate.alternatives
    assert len(items) >= 2
    q0, p = _configuration(addon_module, arm)
    values = np.array([list(it.values[: it.dof]) for it in items])
    steps = core.model.distance.joint_steps
    for i in range(len(values)):
        assert np.min(steps(p.skeleton, values[i], np.delete(values, i, axis=0))) >= 0.3 - 1e-9
    assert np.all(np.diff([it.score for it in items]) >= 0)
    for k, item in enumerate(items):
        arm.articulate.active_alternative = k
        assert bpy.ops.articulate.chain_use_alternative() == {"FINISHED"}
        assert _tip_error(arm, target) < 2 * TOLERANCE, f"pose {k + 1}"
        assert _inside_limits(addon_module, arm), f"pose {k + 1}"
        q, _ = _configuration(addon_module, arm)
        assert np.max(steps(p.skeleton, q, values[k])) < 1e-4  # the keyed pose is the listed one
        assert item.distance == pytest.approx(float(steps(p.skeleton, q0, values[k])), abs=1e-5)


def test_the_list_matches_the_core(arm_scene, addon_module, core):
    """The operator lists what the core function returns for the chain's target, pose and settings."""
    arm, target = arm_scene
    assert bpy.ops.articulate.chain_alternatives(count=5) == {"FINISHED"}
    q0, p = _configuration(addon_module, arm)
    local = np.linalg.solve(np.array(arm.matrix_world), np.array(target.matrix_world))[:3, 3]
    solver = core.solvers.make_solver("dls", p.skeleton, "tip", mode="position", tolerance=TOLERANCE,
                                      max_iterations=100, restarts=0, null_space_gain=0.0)
    expected = core.solvers.alternatives.alternative_poses(solver, local, q0, count=5)
    listed = np.array([list(it.values[: it.dof]) for it in arm.articulate.alternatives])
    assert listed.shape == expected.q.shape
    np.testing.assert_allclose(listed, expected.q, atol=1e-5)  # stored as float32
    np.testing.assert_allclose([it.margin for it in arm.articulate.alternatives], expected.margin, atol=1e-5)


def test_a_bake_from_the_chosen_pose_keeps_it(arm_scene, addon_module, core):
    """Key the second pose on frame 1, bake 30 frames of a slowly moving target: every frame reaches the
    target and stays nearer the chosen pose than the first one."""
    arm, target = arm_scene
    assert bpy.ops.articulate.chain_alternatives() == {"FINISHED"}
    items = arm.articulate.alternatives
    first = np.array(items[0].values[: items[0].dof])
    chosen = np.array(items[1].values[: items[1].dof])
    arm.articulate.active_alternative = 1
    assert bpy.ops.articulate.chain_use_alternative() == {"FINISHED"}
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    steps = core.model.distance.joint_steps
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        assert _tip_error(arm, target) < 2 * TOLERANCE, f"frame {f}"
        assert _inside_limits(addon_module, arm), f"frame {f}"
        q, p = _configuration(addon_module, arm)
        to_chosen, to_first = float(steps(p.skeleton, q, chosen)), float(steps(p.skeleton, q, first))
        assert to_chosen < to_first, f"frame {f}: {to_chosen:.3f} rad from the chosen pose, {to_first:.3f} from pose 1"
    bpy.context.scene.frame_set(1)
    q1, p = _configuration(addon_module, arm)
    assert float(steps(p.skeleton, q1, chosen)) < 1e-3  # the bake's first frame is the chosen pose itself


def test_the_pose_in_use_comes_first(arm_scene, addon_module):
    """After keying the third pose, finding again lists that pose first, as the current one."""
    arm, _ = arm_scene
    assert bpy.ops.articulate.chain_alternatives() == {"FINISHED"}
    third = np.array(arm.articulate.alternatives[2].values[: arm.articulate.alternatives[2].dof])
    arm.articulate.active_alternative = 2
    assert bpy.ops.articulate.chain_use_alternative() == {"FINISHED"}
    assert bpy.ops.articulate.chain_alternatives() == {"FINISHED"}
    first = arm.articulate.alternatives[0]
    assert first.distance < 1e-4 and first.name.endswith("(current)")
    np.testing.assert_allclose(first.values[: first.dof], third, atol=1e-5)
    assert all(it.distance >= 0.3 for it in list(arm.articulate.alternatives)[1:])


def test_robot_rigs_point_to_their_branches(empty_scene):
    """A robot rig solved on its stored model is refused with a pointer to Find IK Branches."""
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    with pytest.raises(RuntimeError, match="Find IK Branches"):
        bpy.ops.articulate.chain_alternatives()


def _snapshot(arm):
    bpy.context.view_layer.update()
    pose = [tuple(v for col in pb.matrix_basis.col for v in col) for pb in arm.pose.bones]
    return repr((pose, arm.animation_data is not None and arm.animation_data.action is not None,
                 [(it.name, tuple(it.values)) for it in arm.articulate.alternatives]))


def test_failures_are_named_and_change_nothing(arm_scene):
    """No chain, no target, an unreachable target: a clear error and the scene as it was."""
    arm, target = arm_scene
    assert bpy.ops.articulate.chain_alternatives() == {"FINISHED"}
    before = _snapshot(arm)
    target.animation_data_clear()
    target.location = (5.0, 0.0, 1.4)
    with pytest.raises(RuntimeError, match="no pose reaches its target.*out of reach"):
        bpy.ops.articulate.chain_alternatives()
    assert _snapshot(arm) == before
    arm.articulate.chains[0].target = None
    with pytest.raises(RuntimeError, match="has no target"):
        bpy.ops.articulate.chain_alternatives()
    arm.articulate.chains[0].name = "Renamed"
    with pytest.raises(RuntimeError, match="chain 'Arm' of this pose no longer exists"):
        bpy.ops.articulate.chain_use_alternative()
    assert _snapshot(arm) == before
    arm.articulate.chains.remove(0)
    with pytest.raises(RuntimeError, match="no active chain"):
        bpy.ops.articulate.chain_alternatives()
    assert _snapshot(arm) == before


class _Layout:
    """Stands in for UILayout: checks every property and operator draw() names."""

    def __init__(self, log):
        self.log = log

    def __getattr__(self, name):
        if name in {"row", "column", "box", "split"}:
            return lambda *a, **k: _Layout(self.log)
        return lambda *a, **k: None

    def prop(self, data, prop, **kwargs):
        assert prop in data.bl_rna.properties, prop
        self.log.append(("prop", prop))

    def template_list(self, list_type, list_id, data, prop, active_data, active_prop, **kwargs):
        assert hasattr(bpy.types, list_type), list_type
        assert prop in data.bl_rna.properties and active_prop in active_data.bl_rna.properties
        self.log.append(("list", prop))

    def operator(self, idname, **kwargs):
        category, name = idname.split(".")
        getattr(getattr(bpy.ops, category), name).get_rna_type()  # raises for an unregistered operator
        self.log.append(("operator", idname))


def test_panel_and_list_draw_real_names(arm_scene):
    """The sub-panel and its list name only registered operators and existing properties."""
    arm, _ = arm_scene
    assert bpy.ops.articulate.chain_alternatives() == {"FINISHED"}
    panel = bpy.types.ARTICULATE_PT_alternatives
    assert panel.poll(bpy.context)
    log = []
    panel.draw(type("P", (), {"layout": _Layout(log)})(), bpy.context)
    assert ("operator", "articulate.chain_alternatives") in log and ("list", "alternatives") in log
    assert ("operator", "articulate.chain_use_alternative") in log
    item = arm.articulate.alternatives[0]
    bpy.types.ARTICULATE_UL_alternatives.draw_item(None, bpy.context, _Layout(log), arm.articulate, item, 0, None, "",
                                                   0)
    assert ("prop", "distance") in log and ("prop", "margin") in log


def test_use_pose_says_what_it_keyed(arm_scene, capfd):
    """Use Pose reports which pose of which chain it keyed on which frame (headless, Blender prints reports)."""
    arm, _target = arm_scene
    assert bpy.ops.articulate.chain_alternatives() == {"FINISHED"}
    arm.articulate.active_alternative = 1
    capfd.readouterr()
    assert bpy.ops.articulate.chain_use_alternative() == {"FINISHED"}
    out = capfd.readouterr().out
    item = arm.articulate.alternatives[1]
    frame = bpy.context.scene.frame_current
    assert f"Info: {item.name} of chain {item.chain!r} keyed on frame {frame}" in out
