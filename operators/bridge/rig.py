# SPDX-License-Identifier: GPL-3.0-or-later
"""Armatures and their chains as ``ik_core`` skeletons, with the rig's own joint limits."""

from __future__ import annotations

from collections.abc import Sequence

import bpy
import numpy as np

from ...ik_core import Effector, Joint, JointKind, Skeleton
from ...ik_core.errors import name_hint
from ...ik_core.limits import EulerLimit
from ...ik_core.limits.swing_twist import SwingTwistLimit
from .errors import BridgeError

AXES = ("x", "y", "z")


def matrix_to_array(matrix) -> np.ndarray:
    """(4, 4) numpy copy of a ``mathutils.Matrix`` (row-major, as printed by Blender)."""
    return np.array(matrix, dtype=float)


def linked_problem(obj: bpy.types.Object | None) -> str:
    """Why ``obj`` cannot be changed for good: linked from a library, read-only ("" when it can).

    Blender lets a script change linked data in memory, but saving drops the change: an
    operator refuses instead. A library override keeps only overridable properties, which the
    add-on's settings are not (Blender refuses to add a chain to one), so it is refused too.
    """
    if obj is None:
        return ""
    kind = obj.type.lower() if obj.type != "EMPTY" else "object"
    if obj.override_library is not None:
        source = obj.override_library.reference
        lib = source.library.filepath if source is not None and source.library is not None else "a library"
        return (f"{kind} {obj.name!r} is a library override of {lib!r}, which does not keep Articulate's chains "
                "and keys; make it local to edit it")
    linked = obj.library or (obj.data.library if obj.data is not None else None)
    if linked is None:
        return ""
    return f"{kind} {obj.name!r} is linked from {linked.filepath!r} and read-only; make it local or override it"


def check_armature(obj: bpy.types.Object | None, *, editable: bool = True) -> float:
    """Check that ``obj`` is an armature the IK can pose; returns its uniform world scale.

    Raises:
        BridgeError: Not an armature, linked (read-only) data, or a non-uniform scale.
    """
    if obj is None:
        raise BridgeError("no armature: select an armature object or name one")
    if obj.type != "ARMATURE":
        raise BridgeError(f"object {obj.name!r} is a {obj.type.lower()}, not an armature")
    if editable and (problem := linked_problem(obj)):
        raise BridgeError(problem)
    M = matrix_to_array(obj.matrix_world)[:3, :3]
    scale = np.linalg.norm(M, axis=0)
    if not np.all(np.isfinite(scale)) or scale.min() <= 1e-12:
        raise BridgeError(f"armature {obj.name!r} has a zero or invalid scale")
    if scale.max() - scale.min() > 1e-6 * scale.max():
        raise BridgeError(
            f"armature {obj.name!r} is scaled non-uniformly ({', '.join(f'{s:.4g}' for s in scale)}); "
            "apply the scale (Ctrl+A > Scale) or use a uniform scale"
        )
    return float(scale.mean())


def pose_bone_chain(arm_obj: bpy.types.Object, tip: str, length: int = 0, root: str = "") -> list[bpy.types.PoseBone]:
    """Pose bones from the chain's root down to ``tip``.

    Args:
        arm_obj: The armature object.
        tip: Name of the tip bone.
        length: Bones in the chain when ``root`` is empty; 0 means up to the top of the
            hierarchy (Blender's IK ``chain_count`` semantics).
        root: Name of the first bone of the chain, which must be ``tip`` or one of its parents.

    Raises:
        BridgeError: A missing bone (the message suggests the nearest names), or a root that is not an
            ancestor of the tip.
    """
    bones = arm_obj.pose.bones
    for name, what in ((tip, "tip"), (root, "root")):
        if name and bones.get(name) is None:
            raise BridgeError(f"armature {arm_obj.name!r} has no {what} bone {name!r}; "
                              + name_hint(name, (b.name for b in bones), "bone"))
    if not tip:
        raise BridgeError("the chain has no tip bone; pick the last bone of the chain")
    chain = [bones[tip]]
    if root:
        while chain[-1].name != root:
            if chain[-1].parent is None:
                raise BridgeError(f"root bone {root!r} is not a parent of tip bone {tip!r}")
            chain.append(chain[-1].parent)
    else:
        while chain[-1].parent is not None and (length <= 0 or len(chain) < length):
            chain.append(chain[-1].parent)
    return chain[::-1]


def chain_bones(arm_obj: bpy.types.Object, chain) -> list[bpy.types.PoseBone]:
    """The pose bones of an ``ARTICULATE_PG_chain``, root first."""
    return pose_bone_chain(arm_obj, chain.tip_bone, chain.chain_length, chain.root_bone)


def _prefix(name: str) -> str:
    """A generated rig's role prefix of a bone name ("ORG", "DEF", "MCH"; "" for a plain name)."""
    head, dash, _rest = name.partition("-")
    return head if dash and head.isupper() else ""


def foot_bone(arm_obj: bpy.types.Object, tip: bpy.types.PoseBone, name: str = "") -> bpy.types.PoseBone | None:
    """The foot of a leg chain ending at ``tip``: the bone whose tail is the ball of the foot.

    ``name`` picks it; empty finds it: a child of ``tip`` whose head lies at ``tip``'s tail
    (within a tenth of its length) and that reaches further forward than down (a foot, not the
    next segment of a split shin such as Rigify's ``DEF-shin.L.001``); of several, one with
    the tip's role prefix (``ORG-``, ``DEF-``, ``MCH-``), then the longest reach forward.
    Plain rigs (``foot.L``), Rigify's (``ORG-foot.L`` under ``ORG-shin.L``) and BVH skeletons
    (CMU's ``LeftAnkle`` under ``LeftKnee``, its tail the ``LeftToe`` joint) all match.

    Returns:
        The foot's pose bone, or None when no child fits (the chain is planted by its tip alone).

    Raises:
        BridgeError: A named foot that is missing, is not a child of ``tip``, or does not inherit
            its rotation (its keys could not keep the ball where it is planted).
    """
    if name:
        pb = arm_obj.pose.bones.get(name)
        if pb is None:
            raise BridgeError(f"armature {arm_obj.name!r} has no foot bone {name!r}; "
                              + name_hint(name, (b.name for b in arm_obj.pose.bones), "bone"))
        if pb.parent != tip:
            children = ", ".join(repr(c.name) for c in tip.children)
            raise BridgeError(f"foot bone {name!r} is not a child of the chain's tip bone {tip.name!r}; "
                              + (f"pick one of {children} or clear Foot Bone" if children else
                                 f"{tip.name!r} has no child bone: clear Foot Bone"))
        if not pb.bone.use_inherit_rotation:
            raise BridgeError(f"foot bone {name!r} does not inherit its parent's rotation; turn on Inherit "
                              "Rotation or clear Foot Bone")
        return pb
    tail = np.array(tip.bone.tail_local)
    best, rank = None, None
    for child in tip.children:
        b = child.bone
        v = np.array(b.tail_local) - np.array(b.head_local)
        forward = float(np.hypot(v[0], v[1]))
        if (np.linalg.norm(np.array(b.head_local) - tail) > 0.1 * tip.bone.length or forward <= abs(v[2])
                or not b.use_inherit_rotation):
            continue
        r = (_prefix(child.name) == _prefix(tip.name), forward)
        if rank is None or r > rank:
            best, rank = child, r
    return best


def bone_limit(pb: bpy.types.PoseBone) -> SwingTwistLimit | EulerLimit | None:
    """The rotation limit of a pose bone: its IK limits intersected with Limit Rotation constraints.

    Blender's IK settings (``use_ik_limit_*``, ``ik_min_*``, ``ik_max_*``, ``lock_ik_*``) and
    every enabled Limit Rotation constraint in local space are combined per axis and read as
    Blender's IK reads them: twist about the bone's Y axis and swing about X and Z per side
    (:class:`SwingTwistLimit`). Ranges that do not contain the rest pose (possible only through
    Limit Rotation constraints, e.g. a robot joint) are Euler ranges instead. Returns None when
    nothing limits the bone.
    """
    lower = np.full(3, -np.pi)
    upper = np.full(3, np.pi)
    locked = np.array([getattr(pb, f"lock_ik_{a}") for a in AXES], dtype=bool)
    limited = locked.copy()
    for n, a in enumerate(AXES):
        if getattr(pb, f"use_ik_limit_{a}"):
            lower[n] = max(lower[n], getattr(pb, f"ik_min_{a}"))
            upper[n] = min(upper[n], getattr(pb, f"ik_max_{a}"))
            limited[n] = True
    for con in pb.constraints:
        if con.type != "LIMIT_ROTATION" or con.mute or con.influence <= 0 or con.owner_space != "LOCAL":
            continue
        for n, a in enumerate(AXES):
            if getattr(con, f"use_limit_{a}"):
                lower[n] = max(lower[n], getattr(con, f"min_{a}"))
                upper[n] = min(upper[n], getattr(con, f"max_{a}"))
                limited[n] = True
    if not limited.any():
        return None
    if np.any(lower > upper):
        n = int(np.argmax(lower > upper))
        raise BridgeError(
            f"bone {pb.name!r}: its IK limits and Limit Rotation constraints leave no room on axis "
            f"{AXES[n].upper()} (min {np.degrees(lower[n]):.1f} > max {np.degrees(upper[n]):.1f} degrees): no "
            f"rotation keeps them all; widen or turn off one of them (the IK limit in the Bone Limits panel, or the "
            f"constraint's Limit {AXES[n].upper()})"
        )
    if np.all(lower <= 0.0) and np.all(upper >= 0.0):
        return SwingTwistLimit(tuple(lower), tuple(upper), tuple(locked))
    order = pb.rotation_mode if len(pb.rotation_mode) == 3 else "XYZ"
    return EulerLimit(tuple(lower), tuple(upper), tuple(locked), order)


def _rest_relative(bone: bpy.types.Bone) -> np.ndarray:
    """(4, 4) rest transform of ``bone`` in its parent's frame (armature space for a root)."""
    local = matrix_to_array(bone.matrix_local)
    if bone.parent is None:
        return local
    return np.linalg.inv(matrix_to_array(bone.parent.matrix_local)) @ local


def chain_skeleton(
    arm_obj: bpy.types.Object,
    bones: Sequence[bpy.types.PoseBone],
    *,
    use_tail: bool = True,
    limits: bool = True,
    hinge_middle: bool = False,
) -> Skeleton:
    """A skeleton for a chain of pose bones, in the chain's base frame.

    The base frame is the frame the root bone's rest pose is expressed in: its parent bone's
    posed frame (armature space for a root bone). Targets must be given in that frame (see
    :func:`..sampling.base_matrix`). Each bone is a BALL joint whose variables are the rotation
    vector of its pose rotation; a bone with exactly one unlocked IK axis is a REVOLUTE hinge
    about that local axis; a bone whose three IK axes are locked is FIXED at its current rotation.
    The effector ``"tip"`` sits on the tip bone's tail (or head with ``use_tail`` off).
    With ``hinge_middle`` (the two-bone solver) the second of two bones is a hinge about its
    local X axis, limited by its X range.

    Raises:
        BridgeError: A zero-length bone, or limits leaving no feasible rotation.
    """
    joints = []
    for k, pb in enumerate(bones):
        if hinge_middle and k == 1:
            if len(bones) != 2:
                raise BridgeError(f"the two-bone solver needs a chain of exactly 2 bones, this one has {len(bones)}")
            _check_length(pb)
            limit = bone_limit(pb) if limits else None
            lo, hi = (limit.lower[0], limit.upper[0]) if limit is not None else (-np.pi, np.pi)
            joints.append(Joint(pb.name, JointKind.REVOLUTE, parent=0, origin=_rest_relative(pb.bone) @ _moved(pb),
                                axis=(1.0, 0.0, 0.0), lower=lo, upper=hi, stiffness=_stiffness(pb)))
        else:
            joints.append(_bone_joint(pb, k - 1, limits))
    tip = np.eye(4)
    if use_tail:
        tip[1, 3] = bones[-1].bone.length
    return Skeleton(joints, [Effector("tip", len(joints) - 1, tip)], name=f"{arm_obj.name}:{bones[-1].name}")


def tree_skeleton(
    arm_obj: bpy.types.Object,
    bones: Sequence[bpy.types.PoseBone],
    tips: Sequence[tuple[str, bpy.types.PoseBone, bool]],
    *,
    limits: bool = True,
) -> Skeleton:
    """A skeleton for a tree of pose bones (chains sharing bones), in the frame of the root's parent.

    Args:
        arm_obj: The armature object.
        bones: The tree's pose bones, the root first and every bone after its parent.
        tips: Per effector, its name, the bone it sits on and whether on that bone's tail
            (else its head).
        limits: Apply the bones' IK limits.

    Each bone is a joint as in :func:`chain_skeleton` (BALL, a hinge with one free IK axis,
    FIXED with all three locked), its parent the joint of its parent bone.

    Raises:
        BridgeError: A zero-length bone, a bone whose parent is not in the tree (other than the
            root), or limits leaving no feasible rotation.
    """
    index = {pb.name: k for k, pb in enumerate(bones)}
    joints = []
    for k, pb in enumerate(bones):
        parent = -1 if k == 0 else index.get(pb.parent.name if pb.parent is not None else "", -2)
        if parent == -2 or parent >= k:
            raise BridgeError(f"bone {pb.name!r} does not hang from the tree rooted at {bones[0].name!r}")
        joints.append(_bone_joint(pb, parent, limits))
    effectors = []
    for name, pb, use_tail in tips:
        offset = np.eye(4)
        if use_tail:
            offset[1, 3] = pb.bone.length
        effectors.append(Effector(name, index[pb.name], offset))
    return Skeleton(joints, effectors, name=f"{arm_obj.name}:{bones[0].name}+")


def _check_length(pb: bpy.types.PoseBone) -> None:
    if pb.bone.length <= 1e-9:
        raise BridgeError(f"bone {pb.name!r} has zero length; IK needs bones with a length")


def _moved(pb: bpy.types.PoseBone) -> np.ndarray:
    """(4, 4) the bone's pose translation (kept fixed by the solve)."""
    translate = np.eye(4)
    translate[:3, 3] = tuple(pb.location)
    return translate


def _stiffness(pb: bpy.types.PoseBone) -> float:
    return min(float(np.mean([getattr(pb, f"ik_stiffness_{a}") for a in AXES])), 0.99)


def _bone_joint(pb: bpy.types.PoseBone, parent: int, limits: bool) -> Joint:
    """The joint of one bone: BALL (limited), a REVOLUTE hinge if one IK axis is free, FIXED if none is.

    The root (``parent`` -1) is placed by its armature-space rest matrix: the base frame
    already undoes its parent's rest pose (see sampling.base_matrix).
    """
    _check_length(pb)
    origin = (matrix_to_array(pb.bone.matrix_local) if parent < 0 else _rest_relative(pb.bone)) @ _moved(pb)
    limit = bone_limit(pb) if limits else None
    if limit is not None and sum(not lk for lk in limit.locked) == 1:
        # Two locked axes: a hinge about the free one, exact and cheaper than a limited ball.
        n = limit.locked.index(False)
        lo, hi = limit.lower[n], limit.upper[n]
        if hi - lo >= 2 * np.pi - 1e-9:
            lo, hi = -np.inf, np.inf
        return Joint(pb.name, JointKind.REVOLUTE, parent=parent, origin=origin, axis=np.eye(3)[n],
                     lower=lo, upper=hi, stiffness=_stiffness(pb))
    if limit is not None and all(limit.locked):
        current = np.eye(4)
        current[:3, :3] = matrix_to_array(pb.matrix_basis)[:3, :3]
        current[:3, :3] /= np.linalg.norm(current[:3, :3], axis=0)
        return Joint(pb.name, JointKind.FIXED, parent=parent, origin=origin @ current)
    return Joint(pb.name, JointKind.BALL, parent=parent, origin=origin, limit=limit, stiffness=_stiffness(pb))


def write_ik_limits(pb: bpy.types.PoseBone, limit: EulerLimit | None) -> None:
    """Write a limit to the bone's Blender IK settings so Blender's own IK respects it too."""
    for n, a in enumerate(AXES):
        if limit is None:
            setattr(pb, f"use_ik_limit_{a}", False)
            continue
        setattr(pb, f"lock_ik_{a}", bool(limit.locked[n]))
        free = limit.upper[n] - limit.lower[n] >= 2 * np.pi - 1e-9
        setattr(pb, f"use_ik_limit_{a}", not free and not limit.locked[n])
        if not free:
            setattr(pb, f"ik_min_{a}", max(float(limit.lower[n]), -np.pi))
            setattr(pb, f"ik_max_{a}", min(float(limit.upper[n]), np.pi))
