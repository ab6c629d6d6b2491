# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot previews look like the robot: .dae meshes in every Blender, colours, a collection each, tool links."""

from pathlib import Path

import bpy
import numpy as np
import pytest
from collada_counts import independent_parse
from data_files import ROBOTS, UR5_VISUAL, ur5_package_dir
from robot_cases import dual_arm_urdf, rail_arm_urdf

UR5_LINKS = {"base_link_inertia": "base", "shoulder_link": "shoulder", "upper_arm_link": "upperarm",
             "forearm_link": "forearm", "wrist_1_link": "wrist1", "wrist_2_link": "wrist2", "wrist_3_link": "wrist3"}
BUNDLED_MESHES = Path(__file__).resolve().parents[2] / "presets" / "robots" / "meshes"
IIWA_VISUAL = BUNDLED_MESHES / "lbr_iiwa_14_r820" / "visual"
PANDA_MESHES = BUNDLED_MESHES / "panda"


def _meshes(arm) -> dict[str, bpy.types.Object]:
    return {o.name: o for o in bpy.data.objects if o.type == "MESH" and o.parent == arm}


def _world_vertices(obj) -> np.ndarray:
    co = np.empty(3 * len(obj.data.vertices), dtype=np.float32)
    obj.data.vertices.foreach_get("co", co)
    M = np.array(obj.matrix_world)
    return co.reshape(-1, 3).astype(float) @ M[:3, :3].T + M[:3, 3]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _scene_state():
    return (sorted(o.name for o in bpy.data.objects), sorted(c.name for c in bpy.data.collections),
            len(bpy.data.meshes), len(bpy.data.materials))


def test_ur5_urdf_gets_its_seven_dae_meshes_placed_and_coloured(empty_scene, addon_module, tmp_path):
    """The official UR5 with its package folder: 7 mesh objects, vertex counts of an independent parse,
    every vertex where the core's reading and the URDF's kinematics put it, the files' colours."""
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(ROBOTS / "ur5.urdf"),
                                                package_dir=str(ur5_package_dir(tmp_path))) == {"FINISHED"}
    arm = bpy.context.object
    meshes = _meshes(arm)
    assert sorted(meshes) == sorted(f"{link}.{stem}" for link, stem in UR5_LINKS.items())
    robot = addon_module("operators.bridge.robot")
    collada = addon_module("ik_core.formats.collada")
    visuals = {v.link: v for v in addon_module("ik_core.formats.urdf_visuals").parse_visuals(ROBOTS / "ur5.urdf")}
    model = robot.robot_model(arm)
    kinematics = addon_module("ik_core.model.kinematics")
    q = np.random.default_rng(3).uniform(-2.5, 2.5, model.skeleton.dof)  # the meshes must follow the bones
    robot.set_joint_values(arm, model.skeleton, q)
    bpy.context.view_layer.update()
    for link, stem in UR5_LINKS.items():
        obj = meshes[f"{link}.{stem}"]
        vertices, triangles, _low, _high = independent_parse((UR5_VISUAL / f"{stem}.dae").read_text())
        assert (len(obj.data.vertices), len(obj.data.polygons)) == (vertices, triangles)
        local = collada.merge_meshes(collada.read_collada(UR5_VISUAL / f"{stem}.dae")).positions
        T = kinematics.effector_poses(model.skeleton, q, link) @ visuals[link].origin
        expected = local @ T[:3, :3].T + T[:3, 3]
        np.testing.assert_allclose(_world_vertices(obj), expected, atol=2e-5)  # float32 vertices
        colours = [tuple(m.diffuse_color) for m in obj.data.materials]
        assert colours and all(c[:3] != (0.75, 0.75, 0.78) for c in colours)  # the file's, not the fallback
    blue = [m for o in meshes.values() for m in o.data.materials if m.name.startswith("blau")]
    assert blue and all(m.diffuse_color[2] > m.diffuse_color[0] + 0.1 for m in blue)  # the UR's blue caps
    assert not [o for o in bpy.data.objects if o.name.endswith((".joint", ".link0"))]  # no stick figure


def test_each_robot_gets_a_collection_of_its_own(empty_scene, tmp_path):
    """Armature, target and link meshes of each robot sit in one collection named after it, nothing else."""
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(ROBOTS / "ur5.urdf"),
                                                package_dir=str(ur5_package_dir(tmp_path))) == {"FINISHED"}
    ur5 = bpy.context.object
    assert bpy.ops.articulate.robot_add(preset="panda") == {"FINISHED"}
    panda = bpy.context.object
    for arm, name in ((ur5, "ur5_robot"), (panda, "Franka_Emika_Panda_arm_to_flange")):
        (collection,) = arm.users_collection
        assert collection.name == name and collection.name in bpy.context.scene.collection.children
        owned = {arm, *(c.target for c in arm.articulate.chains), *_meshes(arm).values()}
        assert set(collection.objects) == owned
        assert all(o.users_collection == (collection,) for o in owned)
    assert not bpy.context.scene.collection.objects  # nothing left loose in the scene's own collection


def test_ur5_preset_draws_the_bundled_meshes(empty_scene):
    """Add Robot > UR5 gives the real UR5 meshes (bundled), in every supported Blender."""
    assert bpy.ops.articulate.robot_add(preset="ur5") == {"FINISHED"}
    meshes = _meshes(bpy.context.object)
    assert len(meshes) == 7 and all(len(o.data.vertices) > 1000 for o in meshes.values())
    assert sum(len(o.data.polygons) for o in meshes.values()) == 1932 + 13492 + 29436 + 21028 + 14074 * 2 + 1658


def test_iiwa_preset_draws_its_bundled_meshes_where_the_kinematics_put_them(empty_scene, addon_module):
    """Add Robot > KUKA iiwa gives the iiwa's own meshes (bundled): 8 objects, the counts of an independent
    parse of each file, every vertex on its link for any joint values, the files' grey and orange."""
    assert bpy.ops.articulate.robot_add(preset="lbr_iiwa_14_r820") == {"FINISHED"}
    arm = bpy.context.object
    meshes = _meshes(arm)
    links = ["base_link"] + [f"link_{i}" for i in range(1, 8)]
    assert sorted(meshes) == sorted(f"{link}.{link}" for link in links)
    robot = addon_module("operators.bridge.robot")
    collada = addon_module("ik_core.formats.collada")
    kinematics = addon_module("ik_core.model.kinematics")
    model = robot.robot_model(arm)
    q = np.random.default_rng(5).uniform(-2.0, 2.0, model.skeleton.dof)
    robot.set_joint_values(arm, model.skeleton, q)
    bpy.context.view_layer.update()
    for link in links:
        obj = meshes[f"{link}.{link}"]
        path = IIWA_VISUAL / f"{link}.dae"
        vertices, triangles, _low, _high = independent_parse(path.read_text())
        assert (len(obj.data.vertices), len(obj.data.polygons)) == (vertices, triangles)
        local = collada.merge_meshes(collada.read_collada(path)).positions
        # The URDF's visual origins are all zero; base_link is the model's base frame.
        T = np.array(arm.matrix_world) @ (np.eye(4) if link == "base_link"
                                          else kinematics.effector_poses(model.skeleton, q, link))
        np.testing.assert_allclose(_world_vertices(obj), local @ T[:3, :3].T + T[:3, 3], atol=2e-5)
    colours = {m.name.split(".")[0]: tuple(m.diffuse_color) for o in meshes.values() for m in o.data.materials}
    assert colours["orange"] == pytest.approx((0.8, 0.3984314, 0.0, 1.0))
    assert colours["gray"] == pytest.approx((0.64, 0.64, 0.64, 1.0))


def _obj_positions(path: Path) -> np.ndarray:
    """(V, 3) the ``v`` lines of a Wavefront OBJ, read by a split: the file's own coordinates."""
    return np.array([line.split()[1:4] for line in path.read_text().splitlines() if line.startswith("v ")],
                    dtype=float)


def test_panda_preset_draws_franka_meshes_where_the_kinematics_put_them(empty_scene, addon_module):
    """Add Robot > Panda gives Franka's meshes (bundled OBJ): every link drawn, all its vertices, which map
    back through the kinematics onto the file's own bounds for any joint values; Franka's white and grey."""
    assert bpy.ops.articulate.robot_add(preset="panda") == {"FINISHED"}
    arm = bpy.context.object
    robot = addon_module("operators.bridge.robot")
    kinematics = addon_module("ik_core.model.kinematics")
    model = robot.robot_model(arm)
    lower, upper = model.limits()
    q = lower + (upper - lower) * np.random.default_rng(7).uniform(0.1, 0.9, model.skeleton.dof)  # within limits
    robot.set_joint_values(arm, model.skeleton, q)
    bpy.context.view_layer.update()
    meshes = _meshes(arm)
    files = {0: "collision/link0", **{i: f"visual/link{i}" for i in range(1, 7)}, 7: "collision/link7"}
    for i, stem in files.items():
        link = f"panda_link{i}"
        parts = [o for name, o in meshes.items() if name.split(".")[0] == link]
        assert parts, link
        world = np.concatenate([_world_vertices(o) for o in parts])
        T = np.array(arm.matrix_world) @ (np.eye(4) if i == 0 else kinematics.effector_poses(model.skeleton, q, link))
        local = (world - T[:3, 3]) @ T[:3, :3]  # back into the link's frame
        raw = _obj_positions(PANDA_MESHES / f"{stem}.obj")
        assert len(world) <= len(raw)  # Blender keeps the vertices faces use
        np.testing.assert_allclose(local.min(axis=0), raw.min(axis=0), atol=2e-5)
        np.testing.assert_allclose(local.max(axis=0), raw.max(axis=0), atol=2e-5)
    greys = {round(m.diffuse_color[0], 3) for o in meshes.values() for m in o.data.materials}
    assert 0.251 in greys and 1.0 in greys  # Franka's dark grey and white, from the OBJ materials
    assert bpy.data.materials["PandaWhite"].users  # links 0 and 7 have no material of their own


def test_urdf_colour_paints_meshes_without_their_own(empty_scene, tmp_path):
    """A .dae without materials and a box take the URDF's colour; the .dae's own colours would win."""
    dae = ('<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema"><asset><unit meter="0.001"/>'
           "<up_axis>Z_UP</up_axis></asset><library_geometries><geometry id=\"g\"><mesh>"
           '<source id="p"><float_array id="pa" count="12">0 0 0 100 0 0 0 100 0 0 0 100</float_array>'
           '<technique_common><accessor source="#pa" count="4" stride="3"><param name="X" type="float"/>'
           '<param name="Y" type="float"/><param name="Z" type="float"/></accessor></technique_common></source>'
           '<vertices id="v"><input semantic="POSITION" source="#p"/></vertices>'
           '<triangles count="4"><input semantic="VERTEX" source="#v" offset="0"/><p>0 2 1 0 1 3 0 3 2 1 2 3</p>'
           "</triangles></mesh></geometry></library_geometries></COLLADA>")
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "tetra.dae").write_text(dae)
    urdf = rail_arm_urdf().replace('<link name="l2"/>', (
        '<material name="Signal"><color rgba="0.9 0.1 0.1 1"/></material>'
        '<link name="l2"><visual><geometry><mesh filename="meshes/tetra.dae"/></geometry>'
        '<material name="Signal"/></visual>'
        '<visual><geometry><box size="0.1 0.1 0.1"/></geometry><material name="Signal"/></visual></link>'))
    assert urdf != rail_arm_urdf()
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(_write(tmp_path, "rail.urdf", urdf))) == {"FINISHED"}
    meshes = _meshes(bpy.context.object)
    tetra = meshes["l2.tetra"]
    assert len(tetra.data.vertices) == 4 and len(tetra.data.polygons) == 4
    v = _world_vertices(tetra)
    assert np.linalg.norm(v[1:] - v[0], axis=1) == pytest.approx([0.1] * 3, abs=1e-6)  # 100 mm in the file
    for obj in (tetra, next(o for n, o in meshes.items() if n.startswith("l2.visual"))):
        assert [m.name for m in obj.data.materials] == ["Signal"]
        assert tuple(obj.data.materials[0].diffuse_color) == pytest.approx((0.9, 0.1, 0.1, 1.0))


def test_unreadable_dae_falls_back_with_a_warning(empty_scene, tmp_path):
    """A broken .dae does not stop the import: the link is drawn simply and the file is named."""
    (tmp_path / "broken.dae").write_text("<COLLADA><library_geometries>")
    urdf = rail_arm_urdf().replace('<link name="l2"/>', '<link name="l2"><visual><geometry>'
                                   '<mesh filename="broken.dae"/></geometry></visual></link>')
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(_write(tmp_path, "rail.urdf", urdf))) == {"FINISHED"}
    names = [o.name for o in bpy.data.objects if o.parent == bpy.context.object]
    assert any(n.endswith(".joint") for n in names)  # the simple link shapes


def test_xacro_macros_in_a_urdf_file_are_refused_and_change_nothing(empty_scene, tmp_path):
    """Xacro macros in a file named .urdf give a clear error (give the .xacro, or expand it) and change nothing."""
    path = _write(tmp_path, "arm.urdf", rail_arm_urdf().replace(
        "<robot ", '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" ', 1).replace(
        "</robot>", '<xacro:include filename="more.xacro"/></robot>'))
    before = _scene_state()
    with pytest.raises(RuntimeError, match=r"xacro.*the .xacro file itself.*xacro robot.urdf.xacro > robot.urdf"):
        bpy.ops.articulate.robot_import_urdf(filepath=str(path))
    assert _scene_state() == before


def test_single_chain_picks_its_tip(empty_scene, tmp_path):
    """A serial arm gets one chain to the end of the arm without being told, and says so."""
    path = _write(tmp_path, "rail.urdf", rail_arm_urdf())
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path)) == {"FINISHED"}
    arm = bpy.context.object
    assert [c.tool_link for c in arm.articulate.chains] == ["tool0"]


def test_tree_offers_its_links_and_takes_the_chosen_one(empty_scene, tmp_path):
    """A two-arm tree lists its links as Tool Link choices (ends first); one picked gives one chain."""
    path = _write(tmp_path, "dual.urdf", dual_arm_urdf())
    with pytest.raises(TypeError) as listed:  # the enum's error message lists the choices offered
        bpy.ops.articulate.robot_import_urdf(filepath=str(path), tool_link="not_a_link")
    offered = str(listed.value)
    for link in ("AUTO", "l_tool", "r_tool", "l_finger1_link", "chest"):
        assert f"'{link}'" in offered
    assert offered.index("'l_tool'") < offered.index("'chest'")
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path), tool_link="r_tool") == {"FINISHED"}
    assert [c.tool_link for c in bpy.context.object.articulate.chains] == ["r_tool"]
    # Automatic on a tree keeps the chain-per-arm default; the comma list still overrides both.
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path)) == {"FINISHED"}
    assert [c.tool_link for c in bpy.context.object.articulate.chains] == ["l_tool", "r_tool"]
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path), tool_link="r_tool",
                                                tip_link="l_tool") == {"FINISHED"}
    assert [c.tool_link for c in bpy.context.object.articulate.chains] == ["l_tool"]


def test_robot_chain_add_lists_tool_links_ends_first(empty_scene, tmp_path, capfd):
    """Add Robot Chain offers the rig's links, the arms' ends first, adds the chosen one and says so."""
    path = _write(tmp_path, "dual.urdf", dual_arm_urdf())
    assert bpy.ops.articulate.robot_import_urdf(filepath=str(path), tool_link="l_tool") == {"FINISHED"}
    with pytest.raises(TypeError) as listed:
        bpy.ops.articulate.robot_chain_add(tool_link="not_a_link")
    offered = str(listed.value)
    assert offered.index("'l_tool'") < offered.index("'r_tool'") < offered.index("'chest'")
    capfd.readouterr()
    assert bpy.ops.articulate.robot_chain_add(tool_link="r_tool") == {"FINISHED"}
    assert [c.tool_link for c in bpy.context.object.articulate.chains] == ["l_tool", "r_tool"]
    target = bpy.context.object.articulate.chains[-1].target
    out = capfd.readouterr().out
    assert f"Info: added chain 'r_tool' from the root to r_tool: move its target {target.name!r}" in out
