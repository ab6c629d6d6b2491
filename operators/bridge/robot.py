# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot skeletons (presets or URDF) as armatures: one bone per moving joint, limits, tool, geometry."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import bpy
import numpy as np

from ...ik_core import JointKind, Skeleton, forward_kinematics
from ...ik_core.urdf_visuals import Visual, resolve_mesh
from .build import sphere_mesh_data
from .errors import BridgeError

HINGE_ORDER = "YZX"  # Y (the joint axis) is not the middle angle: it spans (-pi, pi] without flips
TOOL_BONE = "tool"
MOVING = (JointKind.REVOLUTE, JointKind.CONTINUOUS, JointKind.PRISMATIC)


def _align_y(axis: np.ndarray) -> np.ndarray:
    """(3, 3) the smallest rotation taking +Y onto the unit ``axis``."""
    y = np.array([0.0, 1.0, 0.0])
    v = np.cross(y, axis)
    c = float(np.dot(y, axis))
    if c < -1.0 + 1e-12:  # opposite: half a turn about X
        return np.diag([1.0, -1.0, -1.0])
    K = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    return np.eye(3) + K + K @ K / (1.0 + c)


def _moving_ancestor(skeleton: Skeleton, joint: int) -> int:
    """The nearest joint at or above ``joint`` that moves, or -1."""
    while joint >= 0 and skeleton.joints[joint].kind not in MOVING:
        joint = skeleton.joints[joint].parent
    return joint


def build_robot_rig(
    skeleton: Skeleton,
    name: str,
    *,
    tool: str = "tool",
    home_q: Sequence[float] | None = None,
    joint_of_link: dict[str, str] | None = None,
    visuals: Sequence[Visual] = (),
    urdf_dir: str | None = None,
    package_dirs: Sequence[str] = (),
    metadata: dict | None = None,
) -> tuple[bpy.types.Object, bpy.types.Object, list[str]]:
    """Build an armature for a robot skeleton; returns (armature, target empty, warnings).

    Every moving joint becomes a bone named after it whose local Y axis is the joint axis, so
    the joint is a rotation about (or a slide along) the bone's Y and its F-curve is the joint
    value itself. Limits go to Limit Rotation/Location constraints (exact, for hand posing) and
    to the bone's IK settings (lock the other axes). A ``tool`` bone carries the tool frame; an
    empty placed on it is the target of a ready-made chain from the first joint to the tool.

    Raises:
        BridgeError: No moving joint, or an unknown tool effector.
    """
    moving = [i for i, j in enumerate(skeleton.joints) if j.kind in MOVING and j.mimic is None]
    if not moving:
        raise BridgeError(f"robot {name!r} has no moving joint to make bones for")
    try:
        eff = skeleton.effector(tool)
    except Exception as err:  # UnknownNameError lists the valid effectors
        raise BridgeError(str(err)) from None
    W = forward_kinematics(skeleton, np.zeros(skeleton.dof))
    reach = float(np.max(np.linalg.norm(W[:, :3, 3] - W[0, :3, 3], axis=1), initial=0.5))
    bone_length = max(0.02, 0.08 * reach)
    matrices = {}
    for i in moving:
        M = W[i].copy()
        M[:3, :3] = W[i, :3, :3] @ _align_y(skeleton.joints[i].axis)
        matrices[i] = M
    tool_matrix = W[eff.joint] @ eff.offset

    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(arm)
    previous = bpy.context.view_layer.objects.active
    if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        edit = {}
        for i in moving:
            eb = data.edit_bones.new(skeleton.joints[i].name)
            _place_bone(eb, matrices[i], bone_length)
            parent = _moving_ancestor(skeleton, skeleton.joints[i].parent)
            if parent >= 0:
                eb.parent = edit[parent]
            edit[i] = eb
        tb = data.edit_bones.new(TOOL_BONE)
        _place_bone(tb, tool_matrix, bone_length * 0.6)
        tb.parent = edit[_moving_ancestor(skeleton, eff.joint)]
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    for i in moving:
        _set_joint_limits(arm.pose.bones[skeleton.joints[i].name], skeleton.joints[i])
    tool_pb = arm.pose.bones[TOOL_BONE]
    tool_pb.lock_ik_x = tool_pb.lock_ik_y = tool_pb.lock_ik_z = True
    tool_pb.lock_rotation = tool_pb.lock_location = (True, True, True)

    q_home = np.asarray(home_q if home_q is not None else skeleton.preferred_q, dtype=float)
    set_joint_values(arm, skeleton, q_home)
    target = bpy.data.objects.new(f"{name}_target", None)
    target.empty_display_type, target.empty_display_size = "ARROWS", bone_length
    bpy.context.scene.collection.objects.link(target)
    home_tool = forward_kinematics(skeleton, q_home)[eff.joint] @ eff.offset
    target.matrix_world = _to_matrix(home_tool)

    chain = arm.articulate.chains.add()
    chain.name, chain.tip_bone, chain.use_tail = name, TOOL_BONE, False
    chain.root_bone = skeleton.joints[moving[0]].name
    chain.target, chain.solver, chain.use_rotation = target, "dls", True
    chain.tolerance, chain.iterations = 1e-5, 200
    info = {
        "name": name,
        "joints": [
            {"name": skeleton.joints[i].name, "kind": skeleton.joints[i].kind.value,
             "lower": _finite(skeleton.joints[i].lower), "upper": _finite(skeleton.joints[i].upper),
             "velocity": _finite(skeleton.joints[i].velocity)}
            for i in moving
        ],
        "tool": tool,
        "home": q_home.tolist(),
    }
    info.update(metadata or {})
    arm["articulate_robot"] = json.dumps(info)
    warnings = _add_geometry(arm, skeleton, W, moving, joint_of_link or {}, visuals, urdf_dir, package_dirs)
    bpy.context.view_layer.objects.active = previous or arm
    return arm, target, warnings


def _place_bone(eb: bpy.types.EditBone, M: np.ndarray, length: float) -> None:
    """Give an edit bone the frame ``M`` (head at its origin, Y along the bone) and a length."""
    # A new edit bone has zero length, and Blender ignores a matrix assigned to such a bone.
    eb.head = M[:3, 3].tolist()
    eb.tail = (M[:3, 3] + length * M[:3, 1]).tolist()
    eb.matrix = _to_matrix(M)
    eb.length = length


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _to_matrix(M: np.ndarray):
    from mathutils import Matrix

    return Matrix(np.asarray(M, dtype=float).tolist())


def _set_joint_limits(pb: bpy.types.PoseBone, joint) -> None:
    """Single-axis motion along or about local Y, exact limits as constraints and IK settings."""
    pb.rotation_mode = HINGE_ORDER
    pb.lock_scale = (True, True, True)
    pb.lock_ik_x = pb.lock_ik_z = True
    finite = math.isfinite(joint.lower) and math.isfinite(joint.upper)
    if joint.kind is JointKind.PRISMATIC:
        pb.lock_rotation = (True, True, True)
        pb.lock_location = (True, False, True)
        pb.lock_ik_y = True
        con = pb.constraints.new("LIMIT_LOCATION")
        con.owner_space = "LOCAL"
        con.use_min_x = con.use_max_x = con.use_min_z = con.use_max_z = True
        if finite:
            con.use_min_y = con.use_max_y = True
            con.min_y, con.max_y = joint.lower, joint.upper
        return
    pb.lock_rotation = (True, False, True)
    pb.lock_location = (True, True, True)
    con = pb.constraints.new("LIMIT_ROTATION")
    con.owner_space = "LOCAL"
    con.use_limit_x = con.use_limit_z = True
    if finite and joint.upper - joint.lower < 2 * math.pi - 1e-9:
        con.use_limit_y = True
        con.min_y, con.max_y = joint.lower, joint.upper
        # Blender's IK limits must bracket 0; the constraint above holds the exact range.
        pb.use_ik_limit_y = True
        pb.ik_min_y = min(max(joint.lower, -math.pi), 0.0)
        pb.ik_max_y = max(min(joint.upper, math.pi), 0.0)


def set_joint_values(arm: bpy.types.Object, skeleton: Skeleton, q: np.ndarray) -> None:
    """Pose a robot rig at configuration ``q`` (dof,) [rad or m]."""
    for i, joint in enumerate(skeleton.joints):
        if joint.kind not in MOVING or joint.mimic is not None:
            continue
        value = float(q[skeleton.q_index[i]])
        pb = arm.pose.bones[joint.name]
        if joint.kind is JointKind.PRISMATIC:
            pb.location = (0.0, value, 0.0)
        else:
            pb.rotation_euler = (0.0, value, 0.0)


def _material(name: str, rgb: tuple[float, float, float]) -> bpy.types.Material:
    mat = bpy.data.materials.get(name) or bpy.data.materials.new(name)
    mat.diffuse_color = (*rgb, 1.0)
    return mat


def _primitive(name: str, kind: str, size: Sequence[float]) -> bpy.types.Mesh:
    """A box, a cylinder along local Z, or a sphere, centred on the origin [m]."""
    mesh = bpy.data.meshes.new(name)
    if kind == "box":
        sx, sy, sz = (s / 2 for s in size)
        verts = [(x, y, z) for x in (-sx, sx) for y in (-sy, sy) for z in (-sz, sz)]
        faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    elif kind == "cylinder":
        r, length, n = size[0], size[1], 20
        a = np.linspace(0, 2 * np.pi, n, endpoint=False)
        ring = [(r * math.cos(t), r * math.sin(t)) for t in a]
        verts = [(x, y, -length / 2) for x, y in ring] + [(x, y, length / 2) for x, y in ring]
        faces = [(k, (k + 1) % n, n + (k + 1) % n, n + k) for k in range(n)]
        faces += [tuple(range(n))[::-1], tuple(range(n, 2 * n))]
    else:
        verts, _edges, faces = sphere_mesh_data(size[0])
    mesh.from_pydata(verts, [], faces)
    return mesh


def _import_mesh(path: Path) -> list[bpy.types.Object] | None:
    """Objects imported by Blender's own importer for this file type, or None if none applies."""
    ext = path.suffix.lower()
    ops = {".stl": ("wm", "stl_import"), ".obj": ("wm", "obj_import"), ".dae": ("wm", "collada_import")}
    if ext not in ops:
        return None
    module, op_name = ops[ext]
    op = getattr(getattr(bpy.ops, module), op_name)
    try:
        op.get_rna_type()  # raises KeyError where the importer is gone (Collada in Blender 5.0)
    except KeyError:
        return None
    before = set(bpy.data.objects)
    op(filepath=str(path))
    return [o for o in bpy.data.objects if o not in before]


def _add_geometry(arm, skeleton, W, moving, joint_of_link, visuals, urdf_dir, package_dirs) -> list[str]:
    """Link geometry parented to bones; simple link shapes where files are missing."""
    warnings: list[str] = []
    missing: list[str] = []
    link_mat = _material("RobotLink", (0.75, 0.75, 0.78))
    index = {j.name: i for i, j in enumerate(skeleton.joints)}
    for vis_i, vis in enumerate(visuals):
        joint_name = joint_of_link.get(vis.link)
        j = index.get(joint_name, -1) if joint_name else -1
        owner = _moving_ancestor(skeleton, j) if j >= 0 else -1
        bone = skeleton.joints[owner].name if owner >= 0 else None
        link_world = W[j] if j >= 0 else np.eye(4)
        world = link_world @ vis.origin
        objs = None
        if vis.kind == "mesh":
            path = resolve_mesh(vis.filename, urdf_dir, package_dirs)
            if path is None:
                missing.append(vis.filename)
                continue
            objs = _import_mesh(path)
            if objs is None:
                warnings.append(f"no importer for {path.name} in this Blender; link {vis.link!r} drawn simply")
                missing.append(vis.filename)
                continue
            scale = np.diag([*vis.scale, 1.0])
            for o in objs:
                o.matrix_world = _to_matrix(world @ scale) @ o.matrix_world
                _parent_keep(o, arm, bone)
        else:
            mesh = _primitive(f"{vis.link}.visual", vis.kind, vis.size)
            obj = bpy.data.objects.new(f"{vis.link}.visual{vis_i}", mesh)
            obj.data.materials.append(link_mat)
            bpy.context.scene.collection.objects.link(obj)
            obj.matrix_world = _to_matrix(world)
            _parent_keep(obj, arm, bone)
    if missing:
        warnings.insert(0, f"{len(missing)} mesh file(s) not found, simple link shapes drawn instead: "
                        + ", ".join(sorted(set(missing))[:8]) + (" ..." if len(set(missing)) > 8 else ""))
    if not visuals or missing:
        _simple_links(arm, skeleton, W, moving, link_mat)
    return warnings


def _parent_keep(obj: bpy.types.Object, arm: bpy.types.Object, bone: str | None) -> None:
    """Parent to a bone of ``arm`` (or to ``arm``) without moving the object (rig at rest)."""
    world = obj.matrix_world.copy()
    obj.parent = arm
    if bone:
        obj.parent_type, obj.parent_bone = "BONE", bone
    bpy.context.view_layer.update()
    obj.matrix_world = world


def _simple_links(arm, skeleton, W, moving, material) -> None:
    """A cylinder from each moving joint to the next one, and a ball on every joint."""
    reach = float(np.max(np.linalg.norm(W[:, :3, 3] - W[0, :3, 3], axis=1), initial=0.5))
    radius = max(0.01, 0.035 * reach)
    for i in moving:
        name = skeleton.joints[i].name
        children = [k for k in moving if _moving_ancestor(skeleton, skeleton.joints[k].parent) == i]
        ends = [W[k, :3, 3] for k in children] or [
            (W[e.joint] @ e.offset)[:3, 3] for e in skeleton.effectors
            if _moving_ancestor(skeleton, e.joint) == i
        ]
        ball = bpy.data.objects.new(f"{name}.joint", _primitive(f"{name}.joint", "sphere", (radius * 1.3,)))
        ball.data.materials.append(material)
        bpy.context.scene.collection.objects.link(ball)
        ball.matrix_world = _to_matrix(W[i])
        _parent_keep(ball, arm, name)
        for k, end in enumerate(ends):
            start = W[i, :3, 3]
            d = end - start
            length = float(np.linalg.norm(d))
            if length < 1e-6:
                continue
            M = np.eye(4)
            z = d / length
            M[:3, :3] = _align_y(z) @ np.array([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]])  # local Z along d
            M[:3, 3] = start + d / 2
            link = bpy.data.objects.new(f"{name}.link{k}", _primitive(f"{name}.link", "cylinder", (radius, length)))
            link.data.materials.append(material)
            bpy.context.scene.collection.objects.link(link)
            link.matrix_world = _to_matrix(M)
            _parent_keep(link, arm, name)


def robot_info(arm: bpy.types.Object) -> dict:
    """The robot description stored on a rig built by :func:`build_robot_rig`.

    Raises:
        BridgeError: The armature is not a robot rig.
    """
    text = arm.get("articulate_robot") if arm is not None else None
    if not text:
        name = arm.name if arm is not None else "(none)"
        raise BridgeError(f"{name!r} is not an Articulate robot rig; add one with Add Robot or Import URDF")
    return json.loads(text)


def joint_channel(joint: dict):
    """(data path, index) of the F-curve holding a robot joint's value."""
    from ..compat import bone_data_path

    prop = "location" if joint["kind"] == "prismatic" else "rotation_euler"
    return bone_data_path(joint["name"], prop), 1


def read_joint_values(arm: bpy.types.Object, frames: np.ndarray) -> np.ndarray:
    """(N, J) joint values of a robot rig at ``frames``, evaluated from its keys (or its pose)."""
    from ..compat import find_fcurve

    joints = robot_info(arm)["joints"]
    out = np.empty((len(frames), len(joints)))
    for k, joint in enumerate(joints):
        path, index = joint_channel(joint)
        fc = find_fcurve(arm, path, index)
        if fc is None:
            pb = arm.pose.bones[joint["name"]]
            out[:, k] = pb.location[1] if joint["kind"] == "prismatic" else pb.rotation_euler[1]
        else:
            out[:, k] = [fc.evaluate(float(f)) for f in frames]
    return out


def write_joint_values(arm: bpy.types.Object, frames: np.ndarray, values: np.ndarray) -> int:
    """Key (N, J) joint values on a robot rig at ``frames`` in bulk; returns the keys written."""
    from .. import compat

    joints = robot_info(arm)["joints"]
    channels = [compat.Channel(*joint_channel(j), j["name"]) for j in joints]
    compat.ensure_action(arm)
    compat.write_channels(arm, channels, frames, values)
    return int(values.size)
