# SPDX-License-Identifier: GPL-3.0-or-later
"""Link meshes: Collada and STL built from the core's arrays, OBJ, PLY and glTF through Blender's importers, colours."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import bpy
import numpy as np

from ...ik_core.errors import MeshError
from ...ik_core.formats.collada import ColladaMesh, merge_meshes, read_collada
from ...ik_core.formats.stl import read_stl

DEFAULT_PAINT = ("RobotLink", (0.75, 0.75, 0.78, 1.0))  # links whose files and URDF give no colour
# Blender's importers (bpy.ops.<module>.<name>, present in 4.2 to 5.0) and their options. A URDF's OBJ
# and PLY coordinates are its link frame as written (RViz and the simulators read them raw): no axis
# conversion, where Blender would otherwise turn Y-up to Z-up. glTF is Y-up by its specification: its
# importer turns it Z-up, as RViz 2 (ros2/rviz#1482) and Drake do.
_RAW_AXES = {"forward_axis": "Y", "up_axis": "Z"}
IMPORTERS = {
    ".obj": ("wm", "obj_import", _RAW_AXES),
    ".ply": ("wm", "ply_import", _RAW_AXES),
    ".glb": ("import_scene", "gltf", {}),
    ".gltf": ("import_scene", "gltf", {}),
}
MESH_SUFFIXES = (".dae", ".stl", *IMPORTERS)


def colour_material(name: str, rgba: Sequence[float]) -> bpy.types.Material:
    """A material of this colour, for the viewport (Solid, Workbench) and for renders.

    A material of that name with the same colour is reused, so robots share their paints;
    another colour under the same name gets a new material (Blender numbers its name).
    """
    rgba = tuple(float(c) for c in rgba)
    existing = bpy.data.materials.get(name)
    if existing is not None and np.allclose(tuple(existing.diffuse_color), rgba, atol=1e-4):
        return existing
    mat = bpy.data.materials.new(name)
    mat.diffuse_color = rgba
    if bpy.app.version < (5, 0, 0):  # 5.0 materials always have nodes (the flag is deprecated there)
        mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF") if mat.node_tree is not None else None
    if bsdf is not None:
        bsdf.inputs["Base Color"].default_value = rgba
    return mat


def mesh_from_arrays(name: str, mesh: ColladaMesh, paint: tuple[str, Sequence[float]] = DEFAULT_PAINT
                     ) -> bpy.types.Mesh:
    """A Blender mesh of ``mesh``'s triangles, its corner normals and one material slot per material.

    Materials without a colour of their own take ``paint`` (material name, RGBA).
    Vertices, corners and faces are written in bulk (``foreach_set``), so a 30,000-triangle
    link costs milliseconds, not the seconds of ``from_pydata`` on Python lists.
    """
    data = bpy.data.meshes.new(name)
    T = len(mesh.triangles)
    data.vertices.add(len(mesh.positions))
    data.loops.add(3 * T)
    data.polygons.add(T)
    data.vertices.foreach_set("co", mesh.positions.astype(np.float32).ravel())
    data.polygons.foreach_set("loop_start", np.arange(0, 3 * T, 3, dtype=np.int32))
    data.polygons.foreach_set("vertices", mesh.triangles.astype(np.int32).ravel())
    data.polygons.foreach_set("material_index", mesh.material_index.astype(np.int32))
    data.polygons.foreach_set("use_smooth", np.ones(T, dtype=bool))  # the corner normals decide the shading
    data.update(calc_edges=True)
    data.normals_split_custom_set(mesh.normals.reshape(-1, 3).astype(np.float32))
    for material in mesh.materials:
        data.materials.append(colour_material(material.name, material.color) if material.color
                              else colour_material(*paint))
    return data


def _flattened(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """The mesh objects an importer made in ``scene``, unparented where they stand; its other objects removed.

    A glTF file is a tree of nodes (empties, cameras, lights, skins): the link is its meshes,
    each placed by the tree above it, and nothing else.
    """
    scene.view_layers[0].update()  # the tree's world matrices
    objects = list(scene.collection.all_objects)
    meshes = [obj for obj in objects if obj.type == "MESH"]
    worlds = [obj.matrix_world.copy() for obj in meshes]
    for obj, world in zip(meshes, worlds):
        obj.parent = None
        obj.matrix_world = world
        for modifier in [m for m in obj.modifiers if m.type == "ARMATURE"]:
            obj.modifiers.remove(modifier)  # a skin's: its armature goes
    for obj in objects:
        if obj.type != "MESH":
            bpy.data.objects.remove(obj)
    return meshes


def import_mesh_file(path: Path, name: str, paint: tuple[str, Sequence[float]] = DEFAULT_PAINT
                     ) -> list[bpy.types.Object] | None:
    """Objects for one mesh file, in the file's frame [m], linked to the scene; None when unsupported.

    Collada files are read by :func:`~ik_core.formats.collada.read_collada` into one object
    (one material slot per material of the file), in every Blender version: Blender 5.0 has no
    Collada importer. STL files are read by :func:`~ik_core.formats.stl.read_stl`, written
    through the data API: Blender's STL operator updates the whole scene after each file, which
    made a robot's import quadratic in its mesh files. OBJ, PLY and glTF go through Blender's own
    importers; a glTF's node tree is flattened to its meshes, each where the tree put it.
    As RViz does, the file's own colours win; ``paint`` (material name, RGBA: the URDF's colour)
    paints what has none.

    Raises:
        MeshError: An unreadable .dae or .stl file (the message names the file, and the element), or
            a file Blender's importer refused (its message).
    """
    ext = path.suffix.lower()
    if ext in (".dae", ".stl"):
        mesh = merge_meshes(read_collada(path), name) if ext == ".dae" else read_stl(path, name)
        if not len(mesh.triangles):
            return []
        obj = bpy.data.objects.new(name, mesh_from_arrays(name, mesh, paint))
        bpy.context.scene.collection.objects.link(obj)
        return [obj]
    if ext not in IMPORTERS:
        return None
    module, operator, options = IMPORTERS[ext]
    op = getattr(getattr(bpy.ops, module), operator)
    try:
        op.get_rna_type()  # raises KeyError where an importer is missing from this Blender (or its add-on is off)
    except KeyError:
        return None
    # The importer runs in a scene of its own: Blender updates the importing scene after every
    # operator, and the robot's scene, rig and links growing file by file made that quadratic.
    scene = bpy.data.scenes.new("articulate.mesh_import")
    try:
        with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
            try:
                op(filepath=str(path), **options)
            except RuntimeError as err:  # the importer's own error report (a damaged file)
                for obj in list(scene.collection.all_objects):  # what it made before it stopped
                    bpy.data.objects.remove(obj)
                raise MeshError(f"{path}: Blender's importer could not read it: "
                                f"{str(err).removeprefix('Error: ').strip()}") from None
        objects = _flattened(scene)
        for obj in objects:  # new objects: only the import's scene holds them
            for collection in list(obj.users_collection):
                collection.objects.unlink(obj)
            bpy.context.scene.collection.objects.link(obj)
    finally:
        bpy.data.scenes.remove(scene)
    material = colour_material(*paint)
    for obj in objects:
        obj.name = name  # as for .dae files: the link and the file, Blender numbering the parts of a file
        if obj.data is not None and obj.data.users == 1:
            obj.data.name = name
        if obj.type == "MESH" and not any(slot.material for slot in obj.material_slots):
            obj.data.materials.clear()
            obj.data.materials.append(material)
    return objects
