# SPDX-License-Identifier: GPL-3.0-or-later
"""The bridge: the only code that converts between Blender data and ``ik_core``'s numpy arrays.

- :mod:`.rig`: armatures and chains to skeletons, with the rig's joint limits.
- :mod:`.sampling`: world matrices of objects and bones over frames.
- :mod:`.scope`: frame stepping that evaluates only what the sampled objects depend on.
- :mod:`.keys`: solved rotations to pose-bone channels and bulk keys.
- :mod:`.matching`: controls placed by evaluation; properties held while sampling.
- :mod:`.body_controls`: solved poses onto control rigs, IK/FK switches.
- :mod:`.ground`: the height of a collection's meshes under points, by ray casts.
- :mod:`.lowering`: an object or bone lowered in world space, keyed on its location.
- :mod:`.build`: armatures created from numpy arrays.
- :mod:`.meshes`: robot link meshes (Collada from the core's arrays, STL/OBJ by Blender's importers), colours.
"""

from .build import create_armature
from .errors import BridgeError
from .ground import GroundMeshes
from .keys import (
    bone_rotation_channels,
    channel_rotations,
    local_scales,
    pose_rotations,
    rotation_channel_values,
    rotation_part,
    set_pose_rotations,
    set_pose_scales,
    world_to_basis,
    write_bone_poses,
    write_bone_rotations,
    write_bone_scales,
    write_object_poses,
)
from .lowering import check_lowerable, lower_location
from .rig import (
    bone_limit,
    chain_bones,
    chain_skeleton,
    check_armature,
    foot_bone,
    matrix_to_array,
    pose_bone_chain,
    tree_skeleton,
    write_ik_limits,
)
from .sampling import (
    ChainSamples,
    ChainSource,
    TipSource,
    base_matrix,
    sample_bones,
    sample_chains,
    sample_local_rotations,
    sample_targets,
    sample_tips,
    target_matrix,
)
from .scope import evaluating_only

__all__ = [
    "BridgeError",
    "GroundMeshes",
    "ChainSamples",
    "ChainSource",
    "TipSource",
    "base_matrix",
    "bone_limit",
    "bone_rotation_channels",
    "channel_rotations",
    "chain_bones",
    "chain_skeleton",
    "check_lowerable",
    "check_armature",
    "create_armature",
    "evaluating_only",
    "foot_bone",
    "local_scales",
    "lower_location",
    "matrix_to_array",
    "pose_bone_chain",
    "pose_rotations",
    "rotation_channel_values",
    "rotation_part",
    "sample_bones",
    "sample_local_rotations",
    "sample_chains",
    "sample_targets",
    "sample_tips",
    "set_pose_rotations",
    "set_pose_scales",
    "target_matrix",
    "tree_skeleton",
    "world_to_basis",
    "write_bone_poses",
    "write_bone_rotations",
    "write_bone_scales",
    "write_ik_limits",
    "write_object_poses",
]
