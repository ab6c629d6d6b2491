# SPDX-License-Identifier: GPL-3.0-or-later
"""Robot skeletons (presets or URDF) as armatures: one bone per moving joint, limits, tool, geometry."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import bpy
import numpy as np

from ...ik_core import ArticulateError, JointKind, Skeleton, effector_poses, forward_kinematics
from ...ik_core.errors import MeshError
from ...ik_core.formats.urdf_visuals import Visual, resolve_mesh
from ...ik_core.formats.xacro_files import description_source
from ...ik_core.robots.model import RobotModel
from .build import sphere_mesh_data
from .errors import BridgeError
from .keys import keyed_values
from .meshes import DEFAULT_PAINT, colour_material, import_mesh_file
from .stored import (  # noqa: F401 (robot_model: read here by callers too)
    INFO_KEY,
    MODEL_KEY,
    branch_joints,
    check_bones,
    model_source,
    raw_info,
    read_model,
    robot_info,
    robot_model,
)

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


# Blender cuts a bone's name to this many bytes (UTF-8), on 4.2 to 5.0: a longer joint name is shortened
# (RobotModel.within_bytes) so that its bone carries the whole of the name the rig knows it by.
MAX_BONE_NAME_BYTES = 63


def bone_named(model: RobotModel) -> tuple[RobotModel, list[str]]:
    """The model whose moving joints can each be a bone of the same name, and the warning of the names cut (or none)."""
    named = model.within_bytes(MAX_BONE_NAME_BYTES)
    if named is model:
        return model, []
    pairs = [f"{urdf!r} -> {bone!r}" for bone, urdf in named.urdf_names.items() if urdf != bone]
    shown = "; ".join(pairs[:3]) + (f"; and {len(pairs) - 3} more" if len(pairs) > 3 else "")
    return named, [f"{len(pairs)} joint name(s) longer than the {MAX_BONE_NAME_BYTES} bytes Blender keeps of a "
                   f"bone's name: their bones are named {shown}. Trajectory files are read and written with "
                   "the URDF's names"]


def robot_collection(arm: bpy.types.Object) -> bpy.types.Collection:
    """The collection holding a robot rig (its own since rigs got one; the scene's for older rigs)."""
    return arm.users_collection[0] if arm.users_collection else bpy.context.scene.collection


def build_robot_rig(
    model: RobotModel,
    name: str,
    *,
    tools: Sequence[str] | None = None,
    home_q: Sequence[float] | None = None,
    visuals: Sequence[Visual] = (),
    urdf_dir: str | None = None,
    package_dirs: Sequence[str] = (),
    metadata: dict | None = None,
) -> tuple[bpy.types.Object, list[bpy.types.Object], list[str]]:
    """Build an armature for a whole robot tree; returns (armature, one target per chain, warnings).

    Every moving joint becomes a bone named after it, parented as in the URDF, whose local Y
    axis is the joint axis, so the joint is a rotation about (or a slide along) the bone's Y
    and its F-curve is the joint value itself. Limits go to Limit Rotation/Location
    constraints (exact, for hand posing) and to the bone's IK settings. Each tool link (by
    default :meth:`RobotModel.default_tools`) gets a tool bone, a target empty on it and a
    chain from the robot's root. The model itself is stored on the armature
    (:func:`robot_model`): bakes, checks and exports solve on it, not on the bones. The
    armature, its targets and its link geometry go into a new collection named after the
    robot, linked to the scene.

    A mimic joint gets a bone too, driven from its source bone (``multiplier * source +
    offset``); a robot without a moving joint (one link, or fixed joints only) gets an
    armature without bones, its geometry parented to the armature, and no chain.

    A moving joint whose name is longer than a bone's may be (:data:`MAX_BONE_NAME_BYTES`) gets a
    shortened name (see :func:`bone_named`) in the stored model too, with a warning.

    Raises:
        BridgeError: An unknown tool link (the message lists the valid ones).
    """
    model, renamed = bone_named(model)
    skeleton = model.skeleton
    moving = [i for i, j in enumerate(skeleton.joints) if j.kind in MOVING and j.mimic is None]
    bones = [i for i, j in enumerate(skeleton.joints) if j.kind in MOVING]  # mimic joints too
    tool_links = list(tools) if tools is not None else model.default_tools()
    valid = model.links_below()
    for link in tool_links:
        if link not in valid:
            raise BridgeError(f"tool link {link!r} is not below the robot's root through a moving joint; "
                              f"valid tool links: {', '.join(valid) or 'none, ' + str(model.no_tools_reason())}")
    W = forward_kinematics(skeleton, np.zeros(skeleton.dof))
    rest = rest_frames(skeleton)
    bone_length = _bone_length(W)
    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    collection = bpy.data.collections.new(name)
    bpy.context.scene.collection.children.link(collection)
    collection.objects.link(arm)
    previous = bpy.context.view_layer.objects.active
    with _edit_mode(arm):
        edit = {}
        for i in bones:
            joint = skeleton.joints[i]
            eb = data.edit_bones.new(joint.name)
            M = rest[i].copy()
            M[:3, :3] = M[:3, :3] @ _align_y(joint.axis)
            _place_bone(eb, M, bone_length)
            parent = _moving_ancestor(skeleton, skeleton.joints[i].parent)
            if parent >= 0:
                eb.parent = edit[parent]
            edit[i] = eb
    q_home = np.asarray(home_q if home_q is not None else skeleton.preferred_q, dtype=float)
    info = {
        "name": model.name,
        "joints": [_joint_info(model, joint) for joint in model.joint_order],
        "home": q_home.tolist(),
    }
    info.update(metadata or {})
    arm[INFO_KEY] = json.dumps(info)
    arm[MODEL_KEY] = model.to_json()
    # Geometry is placed at the rest pose W and keeps its place relative to its bone, so it is
    # parented while the rig is still at rest, before the limit constraints: a joint whose range
    # leaves out 0 (the Panda's fourth) would otherwise be held off its rest as the parenting is
    # taken, and every link below it drawn turned by that much. The home pose then moves it.
    # Mimic bones are driven first: at q = 0 they stand at their offset, as W has them.
    for i in bones:
        if skeleton.joints[i].mimic is not None:
            _drive_mimic(arm, skeleton.joints[i], skeleton.joints[skeleton.mimic_source[i]])
    warnings = _add_geometry(arm, skeleton, W, bones, _joint_of_link(model), visuals, urdf_dir, package_dirs)
    for i in moving:
        _set_joint_limits(arm.pose.bones[skeleton.joints[i].name], skeleton.joints[i])
    set_joint_values(arm, skeleton, q_home)
    targets = add_robot_chains(arm, model, tool_links)
    bpy.context.view_layer.objects.active = previous or arm
    return arm, targets, renamed + warnings



def rest_frames(skeleton: Skeleton) -> np.ndarray:
    """(J, 4, 4) every joint's frame with every joint value 0, mimic joints included: where bones rest.

    Equal to the forward kinematics at q = 0 but below a mimic joint with an offset, which
    q = 0 turns by that offset (its bone's driver does that on top of the rest).
    """
    rest = np.empty((len(skeleton.joints), 4, 4))
    for i, joint in enumerate(skeleton.joints):
        rest[i] = (rest[joint.parent] if joint.parent >= 0 else np.eye(4)) @ joint.origin
    return rest


def _joint_channel(joint) -> tuple[str, int]:
    """The pose-bone channel holding a joint's value: location or rotation about local Y."""
    return ("location", 1) if joint.kind is JointKind.PRISMATIC else ("rotation_euler", 1)


def mimic_expression(multiplier: float, offset: float) -> str:
    """The driver expression ``multiplier * source + offset`` that Blender's simple-expression evaluator runs.

    Plain arithmetic on numbers and one variable evaluates without Python (so in files opened
    with scripts disallowed too). Numbers are written by ``repr`` of a Python float, which that
    evaluator reads back exactly: ``-2.0``, ``1e-05``, ``1e+16`` (a numpy scalar's repr under
    numpy 2, ``np.float64(...)``, would be a Python expression).

    Raises:
        BridgeError: A multiplier or offset that is not a finite number.
    """
    multiplier, offset = float(multiplier), float(offset)
    if not (math.isfinite(multiplier) and math.isfinite(offset)):
        raise BridgeError(f"mimic multiplier {multiplier!r} and offset {offset!r} must be finite numbers")
    return f"{multiplier!r} * source + {offset!r}"


def _drive_mimic(arm: bpy.types.Object, joint, source) -> None:
    """Lock a mimic joint's bone but for its Y channel, driven as ``multiplier * source + offset``."""
    from ..compat import bone_data_path

    pb = arm.pose.bones[joint.name]
    pb.rotation_mode = HINGE_ORDER
    pb.lock_scale = pb.lock_rotation = pb.lock_location = (True, True, True)
    pb.lock_ik_x = pb.lock_ik_y = pb.lock_ik_z = True
    fcurve = pb.driver_add(*_joint_channel(joint))
    # The driver's value is the joint value itself: Blender 5.0 gives a new driver curve two
    # Bezier keys (0, 0) and (1, 1) that map values below about 1e-3 to 0 (a finger's first
    # millimetre), 4.x an identity Generator modifier. Without keys or modifiers the value passes as is.
    fcurve.keyframe_points.clear()
    for modifier in list(fcurve.modifiers):
        fcurve.modifiers.remove(modifier)
    driver = fcurve.driver
    driver.type = "SCRIPTED"
    var = driver.variables.new()
    var.name, var.type = "source", "SINGLE_PROP"
    var.targets[0].id = arm
    src_channel, src_index = _joint_channel(source)
    var.targets[0].data_path = f"{bone_data_path(source.name, src_channel)}[{src_index}]"
    driver.expression = mimic_expression(joint.mimic.multiplier, joint.mimic.offset)


def _joint_info(model: RobotModel, name: str) -> dict:
    joint = model.urdf.joint(name)
    info = {"name": name, "kind": joint.type, "lower": _finite(joint.lower), "upper": _finite(joint.upper),
            "velocity": _finite(joint.velocity), "acceleration": model.acceleration.get(name)}
    if model.urdf_name(name) != name:  # a shortened bone name: files know the joint by the URDF's
        info["urdf_name"] = model.urdf_name(name)
    return info


def _joint_of_link(model: RobotModel) -> dict[str, str]:
    return {j.child: j.name for j in model.urdf.joints}


def _bone_length(W: np.ndarray) -> float:
    reach = float(np.max(np.linalg.norm(W[:, :3, 3] - W[0, :3, 3], axis=1), initial=0.5))
    return max(0.02, 0.08 * reach)


class _edit_mode:
    """Edit mode on ``arm`` for the ``with`` block; object mode and the active object restored after."""

    def __init__(self, arm: bpy.types.Object) -> None:
        self.arm = arm

    def __enter__(self) -> None:
        self.previous = bpy.context.view_layer.objects.active
        if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
            bpy.ops.object.mode_set(mode="OBJECT")
        bpy.context.view_layer.objects.active = self.arm
        bpy.ops.object.mode_set(mode="EDIT")

    def __exit__(self, *_exc) -> None:
        bpy.ops.object.mode_set(mode="OBJECT")
        bpy.context.view_layer.objects.active = self.previous or self.arm


def add_robot_chain(arm: bpy.types.Object, model: RobotModel, tool_link: str, base_link: str = "") -> bpy.types.Object:
    """Add a chain from ``base_link`` (default: the root) to ``tool_link``, with a tool bone and a target.

    The target empty starts on the tool at the rig's current pose. Returns the target.

    Raises:
        BridgeError: A tool link that is not below the base; the message lists the valid ones.
    """
    return add_robot_chains(arm, model, [tool_link], base_link)[0]


def add_robot_chains(arm: bpy.types.Object, model: RobotModel, tool_links: Sequence[str], base_link: str = ""
                     ) -> list[bpy.types.Object]:
    """Add a chain per tool link (see :func:`add_robot_chain`), their tool bones in one visit to edit mode.

    Every tool link is checked before anything is added. Returns the targets, one per tool link.

    Raises:
        BridgeError: A tool link that is not below the base; the message lists the valid ones.
    """
    skeleton = model.skeleton
    plans = []
    for tool_link in tool_links:
        try:
            chain_skeleton = model.chain_skeleton(tool_link, base_link or None)
        except ArticulateError as err:
            raise BridgeError(str(err)) from None
        moving_names = [n for n in chain_skeleton.moving_joint_names if n in arm.pose.bones]
        if not moving_names:
            raise BridgeError(f"no bone moves tool link {tool_link!r}")
        tool_joint = skeleton.effector(tool_link).joint
        plans.append((tool_link, moving_names, tool_joint, _moving_ancestor(skeleton, tool_joint)))
    if not plans:
        return []
    W = forward_kinematics(skeleton, np.zeros(skeleton.dof))
    rest = rest_frames(skeleton)
    taken = set(arm.data.bones.keys())
    bone_names = []
    with _edit_mode(arm):
        for tool_link, _moving, tool_joint, owner in plans:
            tb = arm.data.edit_bones.new(TOOL_BONE if TOOL_BONE not in taken else f"{TOOL_BONE}.{tool_link}")
            _place_bone(tb, rest[tool_joint] @ skeleton.effector(tool_link).offset, _bone_length(W) * 0.6)
            tb.parent = arm.data.edit_bones[skeleton.joints[owner].name]
            taken.add(tb.name)
            bone_names.append(tb.name)
    targets, now = [], forward_kinematics(skeleton, current_joint_values(arm, skeleton))
    for (tool_link, moving_names, tool_joint, _owner), bone_name in zip(plans, bone_names):
        tool_pb = arm.pose.bones[bone_name]
        tool_pb.lock_ik_x = tool_pb.lock_ik_y = tool_pb.lock_ik_z = True
        tool_pb.lock_rotation = tool_pb.lock_location = (True, True, True)
        pose = now[tool_joint] @ skeleton.effector(tool_link).offset
        target = new_target(arm, model, tool_link, bone_name == TOOL_BONE, pose, _bone_length(W))
        chain = arm.articulate.chains.add()
        chain.name = arm.name if bone_name == TOOL_BONE else tool_link
        chain.tip_bone, chain.use_tail = bone_name, False
        chain.root_bone = moving_names[0]
        chain.tool_link, chain.base_link = tool_link, base_link
        chain.target, chain.use_rotation = target, True
        chain.tolerance, chain.iterations = 1e-5, 200
        arm.articulate.active_chain = len(arm.articulate.chains) - 1
        targets.append(target)
    return targets


def new_target(arm: bpy.types.Object, model: RobotModel, tool_link: str, first: bool,
               pose: np.ndarray | None = None, size: float | None = None) -> bpy.types.Object:
    """A target empty on ``tool_link`` at the rig's current pose, in the rig's collection.

    Named ``<rig>_target`` for the rig's first chain (``first``), ``<rig>_<link>_target`` after.
    ``pose`` (the tool's, (4, 4) in the rig's frame at its current pose) and ``size`` (the
    empty's) are computed when not given.
    """
    skeleton = model.skeleton
    if size is None:
        size = _bone_length(forward_kinematics(skeleton, np.zeros(skeleton.dof)))
    if pose is None:
        pose = effector_poses(skeleton, current_joint_values(arm, skeleton), tool_link)
    target = bpy.data.objects.new(f"{arm.name}_target" if first else f"{arm.name}_{tool_link}_target", None)
    target.empty_display_type, target.empty_display_size = "ARROWS", size
    robot_collection(arm).objects.link(target)
    target.matrix_world = arm.matrix_world @ _to_matrix(pose)
    return target


def repair_robot(arm: bpy.types.Object) -> list[str]:
    """Repair what can be repaired of a robot rig's stored data; returns what was done (empty: nothing was damaged).

    A damaged stored model is read again from the rig's preset or URDF file; a damaged robot
    description is rebuilt from the model (keeping what it said of its source); a stale branch
    list is cleared; a chain whose target was deleted gets a new one on its tool. Everything is
    checked before anything is written.

    Raises:
        BridgeError: Damage only adding the robot again repairs (deleted joint bones, a model with nothing
            to read it from), named.
    """
    done: list[str] = []
    old = raw_info(arm) or {}
    model_text = None
    try:
        model = read_model(arm)
    except BridgeError:
        source = model_source(old)
        if not source:
            raise
        kind, _, where = source.partition(" ")
        if kind == "preset":
            model = RobotModel.from_preset(where)
        else:  # a xacro file is expanded again with the arguments and Package Folder it was imported with
            args, dirs = old.get("xacro_args"), old.get("package_dirs")
            model = RobotModel.from_urdf(description_source(
                where, args if isinstance(args, dict) else None, dirs if isinstance(dirs, list) else ()))
        model = bone_named(model)[0]  # the names its bones were given
        model_text = model.to_json()
        done.append(f"stored model read again from its {source}")
    info_text = None
    if model is not None:
        check_bones(arm, model.skeleton.moving_joint_names, "its kinematic model")
        try:
            robot_info(arm)
        except BridgeError:
            info = {k: v for k, v in old.items() if k not in ("name", "joints", "home")}
            info.update(name=model.name, joints=[_joint_info(model, j) for j in model.joint_order],
                        home=list(map(float, model.skeleton.preferred_q)))
            info_text = json.dumps(info)
            done.append("robot description rebuilt from the stored model")
    names = [j["name"] for j in json.loads(info_text)["joints"]] if info_text else [
        j["name"] for j in robot_info(arm)["joints"]]
    data = arm.articulate
    stale = []
    for branch in data.branches:
        try:
            branch_joints(arm, branch, names)
        except BridgeError:
            stale.append(branch.name)
    orphans = [c for c in data.chains if c.tool_link and c.target is None] if model is not None else []
    # Everything was checked: write.
    if model_text is not None:
        arm[MODEL_KEY] = model_text
    if info_text is not None:
        arm[INFO_KEY] = info_text
    if stale or not 0 <= data.active_branch < max(len(data.branches), 1):
        data.branches.clear()
        data.active_branch = 0
        done.append("stale IK branch list cleared (Find IK Branches lists them again)")
    for chain in orphans:
        first = next(iter(data.chains)) == chain
        chain.target = new_target(arm, model, chain.tool_link, first)
        done.append(f"chain {chain.name!r} has a new target {chain.target.name!r} on its tool")
    return done


def current_joint_values(arm: bpy.types.Object, skeleton: Skeleton) -> np.ndarray:
    """(dof,) the rig's current pose as ``skeleton``'s configuration [rad or m]; 0 for joints without a bone."""
    q = np.zeros(skeleton.dof)
    for i, joint in enumerate(skeleton.joints):
        pb = arm.pose.bones.get(joint.name)
        if skeleton.q_index[i] < 0 or pb is None:
            continue
        q[skeleton.q_index[i]] = pb.location[1] if joint.kind is JointKind.PRISMATIC else pb.rotation_euler[1]
    return q


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


def _primitive(name: str, kind: str, size: Sequence[float]) -> bpy.types.Mesh:
    """A box, a cylinder along local Z, or a sphere, centred on the origin [m]."""
    mesh = bpy.data.meshes.new(name)
    if kind == "box":
        sx, sy, sz = (s / 2 for s in size)
        verts = [(x, y, z) for x in (-sx, sx) for y in (-sy, sy) for z in (-sz, sz)]
        faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    elif kind == "cylinder":
        r, length, n = size[0], size[1], 24
        a = np.linspace(0, 2 * np.pi, n, endpoint=False)
        ring = [(r * math.cos(t), r * math.sin(t)) for t in a]
        # The caps get vertices of their own, so the smooth sides do not bend their normals.
        verts = [(x, y, z) for z in (-length / 2, length / 2, -length / 2, length / 2) for x, y in ring]
        faces = [(k, (k + 1) % n, n + (k + 1) % n, n + k) for k in range(n)]
        faces += [tuple(range(2 * n, 3 * n))[::-1], tuple(range(3 * n, 4 * n))]
    else:
        verts, _edges, faces = sphere_mesh_data(size[0], rings=12, segments=24)
    mesh.from_pydata(verts, [], faces)
    if kind != "box":
        smooth = [kind == "sphere" or len(face) == 4 for face in faces]
        mesh.polygons.foreach_set("use_smooth", smooth)
    return mesh


def _add_geometry(arm, skeleton, W, moving, joint_of_link, visuals, urdf_dir, package_dirs) -> list[str]:
    """Link geometry parented to bones, coloured; simple link shapes where files are missing."""
    warnings: list[str] = []
    missing: list[str] = []
    placed: list[tuple] = []  # (object, bone or None): parented all at once, at the end
    collection = robot_collection(arm)
    index = {j.name: i for i, j in enumerate(skeleton.joints)}
    for vis_i, vis in enumerate(visuals):
        joint_name = joint_of_link.get(vis.link)
        j = index.get(joint_name, -1) if joint_name else -1
        owner = _moving_ancestor(skeleton, j) if j >= 0 else -1
        bone = skeleton.joints[owner].name if owner >= 0 else None
        link_world = W[j] if j >= 0 else np.eye(4)
        world = link_world @ vis.origin
        paint = (vis.material or DEFAULT_PAINT[0], vis.color) if vis.color else DEFAULT_PAINT
        if vis.kind == "mesh":
            path = resolve_mesh(vis.filename, urdf_dir, package_dirs)
            if path is None:
                missing.append(vis.filename)
                continue
            try:
                objs = import_mesh_file(path, f"{vis.link}.{Path(path).stem}", paint)
            except MeshError as err:
                warnings.append(f"link {vis.link!r} drawn simply: {err}")
                missing.append(vis.filename)
                continue
            if objs is None:
                warnings.append(f"no importer for {path.name} in this Blender; link {vis.link!r} drawn simply")
                missing.append(vis.filename)
                continue
            scale = np.diag([*vis.scale, 1.0])
            for o in objs:
                _move_to(o, collection)
                o.matrix_world = _to_matrix(world @ scale) @ o.matrix_world
                placed.append((o, bone))
        else:
            mesh = _primitive(f"{vis.link}.visual", vis.kind, vis.size)
            obj = bpy.data.objects.new(f"{vis.link}.visual{vis_i}", mesh)
            obj.data.materials.append(colour_material(*paint))
            collection.objects.link(obj)
            obj.matrix_world = _to_matrix(world)
            placed.append((obj, bone))
    if missing:
        warnings.insert(0, f"{len(missing)} mesh file(s) not found or unreadable, simple link shapes drawn "
                        "instead: " + ", ".join(sorted(set(missing))[:8])
                        + (" ..." if len(set(missing)) > 8 else ""))
    if not visuals or missing:
        placed += _simple_links(arm, skeleton, W, moving, colour_material(*DEFAULT_PAINT))
    _parent_keep(placed, arm)
    return warnings


def _move_to(obj: bpy.types.Object, collection: bpy.types.Collection) -> None:
    """Make ``collection`` the only one holding ``obj`` (importers link into the active collection)."""
    for other in list(obj.users_collection):
        if other != collection:
            other.objects.unlink(obj)
    if collection not in obj.users_collection:
        collection.objects.link(obj)


def _parent_keep(placed: Sequence[tuple[bpy.types.Object, str | None]], arm: bpy.types.Object) -> None:
    """Parent objects to bones of ``arm`` (or to ``arm``) without moving them (rig at rest).

    One scene update for them all: an update per object made a robot's import quadratic in its
    links (100 links, 0.6 s of updates).
    """
    worlds = [obj.matrix_world.copy() for obj, _bone in placed]
    for obj, bone in placed:
        obj.parent = arm
        if bone:
            obj.parent_type, obj.parent_bone = "BONE", bone
    bpy.context.view_layer.update()  # the bones' rest (mimic bones at their offsets) read by the setter below
    for (obj, _bone), world in zip(placed, worlds):
        obj.matrix_world = world


def _simple_links(arm, skeleton, W, moving, material) -> list[tuple]:
    """A cylinder from each moving joint to the next one, a ball on every joint: (object, bone) pairs to parent."""
    collection = robot_collection(arm)
    placed = []
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
        collection.objects.link(ball)
        ball.matrix_world = _to_matrix(W[i])
        placed.append((ball, name))
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
            collection.objects.link(link)
            link.matrix_world = _to_matrix(M)
            placed.append((link, name))
    return placed


def joint_channel(joint: dict):
    """(data path, index) of the F-curve holding a robot joint's value."""
    from ..compat import bone_data_path

    prop = "location" if joint["kind"] == "prismatic" else "rotation_euler"
    return bone_data_path(joint["name"], prop), 1


def read_joint_values(arm: bpy.types.Object, frames: np.ndarray) -> np.ndarray:
    """(N, J) joint values of a robot rig at ``frames``, evaluated from its keys (or its pose)."""
    joints = robot_info(arm)["joints"]
    out = np.empty((len(frames), len(joints)))
    for k, joint in enumerate(joints):
        path, index = joint_channel(joint)
        pb = arm.pose.bones[joint["name"]]
        static = pb.location[1] if joint["kind"] == "prismatic" else pb.rotation_euler[1]
        out[:, k] = keyed_values(arm, path, index, frames, static)
    return out


def write_joint_values(
    arm: bpy.types.Object,
    frames: np.ndarray,
    values: np.ndarray,
    names: Sequence[str] | None = None,
    replace: tuple[float, float] | None = None,
) -> int:
    """Key (N, J) joint values on a robot rig at ``frames`` in bulk; returns the keys written.

    Args:
        arm: The robot rig.
        frames: (N,) increasing frames.
        values: (N, J) joint values [rad or m], the keys themselves (no conversion).
        names: The J joints, by name; default every joint of the rig in URDF order.
        replace: Inclusive frame range whose old keys on these joints are replaced.
    """
    from .. import compat

    joints = robot_info(arm)["joints"]
    if names is not None:
        by_name = {j["name"]: j for j in joints}
        joints = [by_name[n] for n in names]
    channels = [compat.Channel(*joint_channel(j), j["name"]) for j in joints]
    compat.ensure_action(arm)
    compat.write_channels(arm, channels, frames, values, replace=replace)
    return int(values.size)
