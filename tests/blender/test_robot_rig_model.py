# SPDX-License-Identifier: GPL-3.0-or-later
"""The rig is the model: robot rigs bake, check and export on the model they store, every joint kind exactly."""

import json
from pathlib import Path

import bpy
import numpy as np
import pytest
from robot_cases import dual_arm_urdf, rail_arm_urdf, smooth_joint_path

FRAMES = 120


def _import(tmp_path: Path, text: str, name: str, tools: str = "") -> bpy.types.Object:
    path = tmp_path / f"{name}.urdf"
    path.write_text(text)
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path), tip_link=tools) == {"FINISHED"}
    return bpy.context.object


def _write_pose_csv(core, path: Path, poses: np.ndarray, fps: float) -> None:
    quats = core.model.rotations.matrix_to_quat(poses[:, :3, :3])
    rows = ["time,x,y,z,qw,qx,qy,qz"]
    for k, (T, q) in enumerate(zip(poses, quats)):
        rows.append(",".join(repr(float(v)) for v in (k / fps, *T[:3, 3], *q)))
    path.write_text("\n".join(rows) + "\n")


def _exported(arm, tmp_path: Path, core, frames: int):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    out = tmp_path / f"{arm.name}.csv"
    assert bpy.ops.articulate.trajectory_export(filepath=str(out)) == {"FINISHED"}
    with open(out) as f:
        header = f.readline().strip().split(",")
    return header[1:], np.loadtxt(out, delimiter=",", skiprows=1)[:, 1:]


def _judge(core, model, tool: str, names, values, goals):
    """Errors by forward kinematics of the URDF model itself (not of the rig)."""
    whole = model.skeleton
    order = [names.index(n) for n in whole.moving_joint_names if n in names]
    q = np.zeros((len(values), whole.dof))
    cols = [k for k, n in enumerate(whole.moving_joint_names) if n in names]
    q[:, cols] = values[:, order]
    got = core.effector_poses(whole, q, tool)
    pos = np.linalg.norm(got[:, :3, 3] - goals[:, :3, 3], axis=-1)
    rel = np.swapaxes(got[:, :3, :3], -1, -2) @ goals[:, :3, :3]
    ang = np.arccos(np.clip((np.trace(rel, axis1=-2, axis2=-1) - 1) / 2, -1, 1))
    return pos, ang


def test_rail_arm_bakes_every_joint_kind_exactly(empty_scene, core, addon_module, tmp_path):
    """A rail, a continuous joint and a +-7 rad joint: Cartesian CSV -> bake -> export, judged by the URDF's FK.

    The path needs the rail to slide 1.2 m, the continuous joint to turn past 2 pi and the wide
    joint past pi: a bake that locks the rail, limits the wide joint to +-pi or wraps keys cannot
    follow it. Every exported value is the joint value, inside the URDF limits.
    """
    model_mod = addon_module("ik_core.robots.model")
    arm = _import(tmp_path, rail_arm_urdf(), "rail")
    model = model_mod.RobotModel.from_json(arm["articulate_robot_model"])
    assert [c.tool_link for c in arm.articulate.chains] == ["tool0"]
    sk = model.chain_skeleton("tool0")
    start = np.array([0.0, 0.4, 0.8, 1.1, 0.5, 0.7, 0.3])
    q = smooth_joint_path(sk.lower, sk.upper, FRAMES, seed=2, start=start, amplitude=0.15)
    names = list(sk.moving_joint_names)
    q[:, names.index("rail")] = np.linspace(-0.6, 0.6, FRAMES)
    q[:, names.index("turn")] = np.linspace(0.4, 7.4, FRAMES)
    q[:, names.index("shoulder")] = np.linspace(0.8, 4.6, FRAMES)
    goals = core.effector_poses(sk, q, "tool0")
    robot = addon_module("operators.bridge.robot")
    robot.set_joint_values(arm, sk, q[0])
    csv = tmp_path / "path.csv"
    scene = bpy.context.scene
    _write_pose_csv(core, csv, goals, scene.render.fps / scene.render.fps_base)
    assert bpy.ops.articulate.cartesian_import(filepath=str(csv), start_frame=1, bake=False) == {"FINISHED"}
    report_path = tmp_path / "report.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES,
                                   report_path=str(report_path)) == {"FINISHED"}
    report = json.loads(report_path.read_text())
    assert report["model"] == "stored"
    assert report["chains"][0]["solver"] == "dls" and report["chains"][0]["solver_setting"] == "auto"
    header, values = _exported(arm, tmp_path, core, FRAMES)
    assert header == list(model.joint_order)  # URDF document order
    pos, ang = _judge(core, model, "tool0", header, values, goals)
    assert np.mean((pos <= 1e-4) & (ang <= 1e-3)) >= 0.999, (pos.max(), ang.max())
    assert np.max(np.abs(np.diff(values, axis=0))) <= 0.1
    lower, upper = model.limits()
    assert np.all((values >= lower - 1e-9) & (values <= upper + 1e-9))
    rail = values[:, header.index("rail")]
    assert np.ptp(rail) > 0.5  # the prismatic joint slid, keyed as location along its axis
    assert robot.joint_channel({"name": "rail", "kind": "prismatic"})[0].endswith(".location")
    assert np.max(values[:, header.index("shoulder")]) > np.pi + 0.5  # a range wider than 2 pi holds
    turn = values[:, header.index("turn")]
    assert np.ptp(turn) > 2 * np.pi  # the continuous joint stays continuous, never wrapped
    for f in (1, FRAMES // 2, FRAMES):  # playback shows the keyed pose: the tool bone on the target
        scene.frame_set(f)
        tool = np.array(arm.matrix_world @ arm.pose.bones["tool"].matrix)
        np.testing.assert_allclose(tool[:3, 3], goals[f - 1][:3, 3], atol=2e-4)


def test_model_survives_save_and_reload(empty_scene, core, addon_module, tmp_path):
    """The stored model is in the .blend: after a reload the rig solves on the identical model."""
    model_mod = addon_module("ik_core.robots.model")
    arm = _import(tmp_path, rail_arm_urdf(), "rail")
    before = arm["articulate_robot_model"]
    path = tmp_path / "saved.blend"
    bpy.data.libraries.write(str(path), {arm})
    name = arm.name
    bpy.data.objects.remove(arm)
    with bpy.data.libraries.load(str(path)) as (_src, dst):  # read back from the file, as a reload does
        dst.objects = [name]
    arm = dst.objects[0]
    bpy.context.scene.collection.objects.link(arm)
    assert arm["articulate_robot_model"] == before
    model = model_mod.RobotModel.from_json(arm["articulate_robot_model"])
    assert [j.type for j in model.urdf.joints].count("prismatic") == 1
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.articulate.solve_frame() == {"FINISHED"}


def test_dual_arm_tree_solves_both_chains_together(empty_scene, core, addon_module, tmp_path):
    """A whole tree is imported (every moving joint a bone) and both tool chains are on target every frame.

    The torso joint is shared: the two chains are solved together, so it has one value.
    """
    model_mod = addon_module("ik_core.robots.model")
    arm = _import(tmp_path, dual_arm_urdf(), "dual")
    model = model_mod.RobotModel.from_json(arm["articulate_robot_model"])
    assert sorted(c.tool_link for c in arm.articulate.chains) == ["l_tool", "r_tool"]
    mimic_free = [j.name for j in model.urdf.joints if j.type != "fixed" and j.mimic is None]
    assert all(name in arm.pose.bones for name in mimic_free)
    sk = model.chain_skeleton(["l_tool", "r_tool"])
    rng = np.random.default_rng(4)
    start = rng.uniform(np.maximum(sk.lower, -2) * 0.4, np.minimum(sk.upper, 2) * 0.4)
    q = smooth_joint_path(sk.lower, sk.upper, FRAMES, seed=5, start=start, amplitude=0.08)
    goals = {t: core.effector_poses(sk, q, t) for t in ("l_tool", "r_tool")}
    robot = addon_module("operators.bridge.robot")
    robot.set_joint_values(arm, sk, q[0])
    scene = bpy.context.scene
    fps = scene.render.fps / scene.render.fps_base
    for chain in arm.articulate.chains:
        csv = tmp_path / f"{chain.tool_link}.csv"
        _write_pose_csv(core, csv, goals[chain.tool_link], fps)
        assert bpy.ops.articulate.cartesian_import(filepath=str(csv), chain=chain.name, bake=False) == {"FINISHED"}
    report_path = tmp_path / "dual.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=FRAMES,
                                   report_path=str(report_path)) == {"FINISHED"}
    report = json.loads(report_path.read_text())
    assert report["missed_frames"] == []
    header, values = _exported(arm, tmp_path, core, FRAMES)
    for tool in ("l_tool", "r_tool"):
        pos, ang = _judge(core, model, tool, header, values, goals[tool])
        assert pos.max() <= 1e-4 and ang.max() <= 1e-3


def test_chain_to_a_link_not_below_its_base_lists_the_valid_tools(empty_scene, core, tmp_path):
    """Adding a chain whose tool link is not below its base fails with the valid tool links named."""
    arm = _import(tmp_path, dual_arm_urdf(), "dual")
    n = len(arm.articulate.chains)
    with pytest.raises((RuntimeError, TypeError), match="l_tool|enum"):
        bpy.ops.articulate.robot_chain_add(tool_link="r_tool", base_link="l_l1")
    assert len(arm.articulate.chains) == n
    chain = arm.articulate.chains[0]
    chain.base_link = "r_l3"
    with pytest.raises(RuntimeError, match="valid tool links: .*r_tool"):
        bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=3)


@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_floating_or_planar_joint_is_held(empty_scene, core, tmp_path, kind):
    """A URDF with a floating or planar joint imports (urdfdom reads it), the joint held fixed: no bone (issue 26)."""
    text = rail_arm_urdf().replace('<joint name="turn" type="continuous"', f'<joint name="turn" type="{kind}"')
    path = tmp_path / "held.urdf"
    path.write_text(text)
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path)) == {"FINISHED"}
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    assert "turn" not in arm.pose.bones and "elbow" in arm.pose.bones


def test_closed_loop_is_named(empty_scene, core, tmp_path):
    """A link with two parent joints (a closed loop) is refused, naming both joints."""
    text = rail_arm_urdf().replace("</robot>", '<joint name="loop" type="fixed"><parent link="l6"/>'
                                               '<child link="l3"/></joint></robot>')
    path = tmp_path / "loop.urdf"
    path.write_text(text)
    with pytest.raises(RuntimeError, match="'elbow' and 'loop'"):
        bpy.ops.articulate.robot_import_urdf(filepath=str(path))


def test_rig_without_stored_model_still_bakes_and_says_so(empty_scene, core, tmp_path):
    """A rig saved before models were stored bakes from its bones, and the report says so."""
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    arm = bpy.context.object
    del arm["articulate_robot_model"]
    report_path = tmp_path / "old.json"
    assert bpy.ops.articulate.bake(use_scene_settings=False, frame_start=1, frame_end=5,
                                   report_path=str(report_path)) == {"FINISHED"}
    report = json.loads(report_path.read_text())
    assert "model" not in report and any("no kinematic model" in n for n in report["notes"])


def test_robot_check_and_branches_use_the_model(empty_scene, core, addon_module, tmp_path):
    """Check and branch search on a rail rig see the prismatic joint (a bone-derived chain locked it)."""
    arm = _import(tmp_path, rail_arm_urdf(), "rail")
    robots = addon_module("operators.robots")
    skeleton, effector, _bones = robots.robot_chain_model(arm)
    assert effector == "tool0" and "rail" in skeleton.moving_joint_names
    assert bpy.ops.articulate.robot_branches(seeds=16) == {"FINISHED"}
    branch = arm.articulate.branches[0]
    assert branch.joints.split(",") == list(skeleton.moving_joint_names)
    assert bpy.ops.articulate.robot_use_branch() == {"FINISHED"}


def test_cli_solver_choices_are_the_cores(core):
    """``cli.py --solver`` offers exactly the solver choices the core defines."""
    import cli

    assert tuple(cli.SOLVERS) == tuple(core.solvers.SOLVER_CHOICES)


def test_keys_on_a_limit_stay_inside_in_single_precision(addon_module):
    """A value on its limit is keyed as the nearest float32 inside (F-curves store float32); others unchanged."""
    robot_bake = addon_module("operators.robot_bake")
    lower, upper = np.array([-2.8973, 0.0, -np.inf]), np.array([2.8973, 0.04, np.inf])
    q = np.array([[-2.8973, 0.04, 7.5], [2.8973, 0.0, -1e9], [0.1, 0.02, 3.0], [-3.0, 0.05, 0.0]])
    out = robot_bake.inside_as_float32(q, lower, upper)
    single = out.astype(np.float32).astype(float)
    inside = (q >= lower) & (q <= upper)
    assert np.all((single[inside] >= np.broadcast_to(lower, q.shape)[inside])
                  & (single[inside] <= np.broadcast_to(upper, q.shape)[inside]))
    assert np.all(np.abs(out - q) <= 1e-6)
    moved = out != q
    assert moved[0, 0] and moved[1, 0] and not moved[2:].any()  # in-range values and values outside untouched
