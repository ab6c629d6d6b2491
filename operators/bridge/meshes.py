# SPDX-License-Identifier: GPL-3.0-or-later
"""Link meshes: Collada and STL files built from the core's arrays, OBJ through Blender's importer, colours."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import bpy
import numpy as np

from ...ik_core.formats.collada import ColladaMesh, merge_meshes, read_collada
from ...ik_core.formats.stl import read_stl

DEFAULT_PAINT = ("RobotLink", (0.75, 0.75, 0.78, 1.0))  # links whose files and URDF give no colour
IMPORTERS = {".obj": "obj_import"}  # bpy.ops.wm.<name>, present in 4.2 to 5.0
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


def import_mesh_file(path: Path, name: str, paint: tuple[str, Sequence[float]] = DEFAULT_PAINT
                     ) -> list[bpy.types.Object] | None:
    """Objects for one mesh file, in the file's frame [m], linked to the scene; None when unsupported.

    Collada files are read by :func:`~ik_core.formats.collada.read_collada` into one object
    (one material slot per material of the file), in every Blender version: Blender 5.0 has no
    Collada importer. STL files are read by :func:`~ik_core.formats.stl.read_stl`, written
    through the data API: Blender's STL operator updates the whole scene after each file, which
    made a robot's import quadratic in its mesh files. OBJ goes through Blender's own importer.
    As RViz does, the file's own colours win; ``paint`` (material name, RGBA: the URDF's colour)
    paints what has none.

    Raises:
        MeshError: An unreadable .dae or .stl file (the message names the file, and the element).
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
    op = getattr(bpy.ops.wm, IMPORTERS[ext])
    try:
        op.get_rna_type()  # raises KeyError where an importer is missing from this Blender
    except KeyError:
        return None
    # The importer runs in a scene of its own: Blender updates the importing scene after every
    # operator, and the robot's scene, rig and links growing file by file made that quadratic.
    scene = bpy.data.scenes.new("articulate.mesh_import")
    try:
        with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
            # A URDF's mesh coordinates are its link frame as written (RViz and the simulators read
            # them raw): no axis conversion. Blender's OBJ importer would otherwise turn Y-up to Z-up.
            op(filepath=str(path), forward_axis="Y", up_axis="Z")
        objects = list(scene.collection.all_objects)
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
