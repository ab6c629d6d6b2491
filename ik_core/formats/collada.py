# SPDX-License-Identifier: GPL-3.0-or-later
"""Collada (.dae) triangle meshes read with the standard library: geometry, node transforms, unit, colours.

Blender 5.0 has no Collada importer, and the official UR, Panda and iiwa URDFs draw their links
with .dae files, so robot previews read them here. Only what a preview needs is read: the
polygon primitives of ``<library_geometries>`` (triangulated), the node hierarchy of the
scene (``<matrix>``, ``<translate>``, ``<rotate>``, ``<scale>``, ``<instance_geometry>``,
``<instance_controller>``, ``<instance_node>``), ``<asset><unit>`` and ``<up_axis>``, and the
diffuse colour of each bound material. Textures, lines, animation and skinning weights are
ignored. Polygons are split into fans, which is exact for the convex faces exporters write.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ColladaError
from ..model.rotations import axis_angle_to_matrix

__all__ = ["ColladaMaterial", "ColladaMesh", "merge_meshes", "read_collada"]

POLYGON_TAGS = ("triangles", "polylist", "polygons", "trifans", "tristrips")
UP_AXES = ("X_UP", "Y_UP", "Z_UP")
# Each up axis turned onto +Z (the URDF and Blender convention), as Blender's Collada importer does.
_UP_TO_Z = {
    "X_UP": np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
    "Y_UP": np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]),
    "Z_UP": np.eye(3),
}
_SHADERS = ("constant", "lambert", "phong", "blinn")
_MAX_NODE_DEPTH = 256  # instance_node may point back up the tree; deeper than this is a cycle
# Nodes instancing others several times multiply: 2 instances per level over 40 levels would be
# 10^12 meshes from a few kilobytes. A robot link's file places a handful of geometries.
MAX_INSTANCES = 10_000
# Corners placed over all instances (each costs about 100 bytes of output): about 1 GB at most.
MAX_PLACED_CORNERS = 10_000_000


@dataclass(frozen=True)
class ColladaMaterial:
    """A material a mesh's triangles are bound to.

    Attributes:
        name: The material's name (its ``name``, else its id, else the primitive's symbol).
        color: Diffuse RGBA in [0, 1], or None when the effect has no colour (a texture or no
            effect at all).
    """

    name: str
    color: tuple[float, float, float, float] | None = None


@dataclass(frozen=True, eq=False)
class ColladaMesh:
    """The triangles of one geometry instance, in the file's root frame.

    Attributes:
        name: The instancing node's name, else the geometry's.
        positions: (V, 3) every position of the geometry's source, placed by the node
            transforms, in metres with +Z up.
        triangles: (T, 3) indices into ``positions``, counter-clockwise seen from outside.
        normals: (T, 3, 3) unit normal at each corner of each triangle (from the file, or the
            face normal where the file has none).
        material_index: (T,) index into ``materials`` per triangle.
        materials: The materials the triangles use.

    Raises:
        ColladaError: Arrays of inconsistent shapes or out-of-range indices.
    """

    name: str
    positions: np.ndarray
    triangles: np.ndarray
    normals: np.ndarray
    material_index: np.ndarray
    materials: tuple[ColladaMaterial, ...]

    def __post_init__(self) -> None:
        V, T = len(self.positions), len(self.triangles)
        problems = []
        if self.positions.shape != (V, 3):
            problems.append(f"positions has shape {self.positions.shape}, expected (V, 3)")
        if self.triangles.shape != (T, 3):
            problems.append(f"triangles has shape {self.triangles.shape}, expected (T, 3)")
        elif T and (self.triangles.min() < 0 or self.triangles.max() >= V):
            problems.append(f"triangle indices must lie in [0, {V})")
        if self.normals.shape != (T, 3, 3):
            problems.append(f"normals has shape {self.normals.shape}, expected ({T}, 3, 3)")
        if self.material_index.shape != (T,):
            problems.append(f"material_index has shape {self.material_index.shape}, expected ({T},)")
        elif T and (self.material_index.min() < 0 or self.material_index.max() >= len(self.materials)):
            problems.append(f"material indices must lie in [0, {len(self.materials)})")
        if problems:
            raise ColladaError(f"mesh {self.name!r}: " + "; ".join(problems))


@dataclass
class _Geometry:
    """One ``<geometry>`` in its own frame: positions, triangles, corner normals, material symbols."""

    name: str
    positions: np.ndarray  # (V, 3)
    triangles: np.ndarray  # (T, 3)
    normals: np.ndarray | None  # (T, 3, 3), None where the file gives none
    symbol_index: np.ndarray  # (T,)
    symbols: list[str]


def read_collada(source: str | os.PathLike) -> list[ColladaMesh]:
    """The triangle meshes of a Collada document, one per geometry instance of its scene.

    Positions are expressed in the root frame of the document's scene (every node transform
    applied), scaled to metres by ``<asset><unit meter>`` and turned so that the document's
    ``<up_axis>`` (Y_UP when absent, as the specification says) becomes +Z. A document without
    a visual scene gives each geometry once, untransformed. Geometry without polygons (lines,
    splines) gives no mesh.

    Args:
        source: A file path, or the XML text itself (recognised by its leading '<').

    Returns:
        The meshes, in scene order (empty when the document has no polygons).

    Raises:
        ColladaError: Unreadable file or XML, a document that is not Collada, or a malformed
            element; the message names the file and the element.
    """
    prefix, root = _parse(source)
    try:
        # Finite numbers can still overflow once multiplied (1e200 x 1e200): placed positions are
        # checked to be finite and normals fall back to +Z, so the warnings carry nothing more.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return _Document(root).meshes()
    except ColladaError as err:
        raise ColladaError(f"{prefix}{err}") from None


def merge_meshes(meshes: Sequence[ColladaMesh], name: str = "") -> ColladaMesh:
    """One mesh holding all of ``meshes``; materials with the same name and colour are shared.

    Args:
        meshes: Meshes in one frame (as :func:`read_collada` returns them).
        name: The merged mesh's name (default: the first mesh's).

    Returns:
        A mesh whose vertices and triangles are the inputs' in order.
    """
    materials: list[ColladaMaterial] = []
    positions, triangles, normals, material_index = [], [], [], []
    offset = 0
    for mesh in meshes:
        remap = []
        for material in mesh.materials:
            if material not in materials:
                materials.append(material)
            remap.append(materials.index(material))
        positions.append(mesh.positions)
        triangles.append(mesh.triangles + offset)
        normals.append(mesh.normals)
        material_index.append(np.asarray(remap, dtype=np.int64)[mesh.material_index]
                              if len(remap) else np.zeros(0, dtype=np.int64))
        offset += len(mesh.positions)
    if not meshes:
        return ColladaMesh(name, np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64), np.zeros((0, 3, 3)),
                           np.zeros(0, dtype=np.int64), ())
    return ColladaMesh(name or meshes[0].name, np.concatenate(positions), np.concatenate(triangles),
                       np.concatenate(normals), np.concatenate(material_index), tuple(materials))


def _parse(source: str | os.PathLike) -> tuple[str, ET.Element]:
    """The error-message prefix ("" for XML text, else the path) and the root, namespaces removed."""
    if isinstance(source, str) and source.lstrip().startswith("<"):
        prefix, data = "", source.lstrip().encode()
    else:
        try:
            path = os.fsdecode(os.fspath(source))
        except TypeError:
            raise ColladaError(
                f"source must be a file path or Collada XML text, got {type(source).__name__}"
            ) from None
        prefix = f"{path}: "
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as err:
            raise ColladaError(f"cannot read Collada file {path!r}: {err.strerror or err}") from None
    try:
        root = ET.fromstring(data)
    except ET.ParseError as err:
        raise ColladaError(f"{prefix}XML parse error at line {err.position[0]}, column {err.position[1]}") from None
    for elem in root.iter():
        if isinstance(elem.tag, str) and elem.tag.startswith("{"):
            elem.tag = elem.tag.split("}", 1)[1]  # COLLADA 1.4 and 1.5 differ only in namespace
    if root.tag != "COLLADA":
        raise ColladaError(f"{prefix}the root element is <{root.tag}>, expected <COLLADA>")
    return prefix, root


def _numbers(elem: ET.Element, dtype: type, where: str) -> np.ndarray:
    text = elem.text or ""
    try:
        return np.array(text.split(), dtype=dtype)
    except (ValueError, OverflowError):  # OverflowError: an integer beyond 64 bits
        kind = "integers (64-bit)" if dtype is np.int64 else "numbers"
        raise ColladaError(f"{where}: <{elem.tag}> holds text that is not {kind}") from None


def _count(values: np.ndarray) -> str:
    """``"5"``, or ``"16, not all finite"``: how many numbers an element holds, for messages."""
    return f"{values.size}" if np.all(np.isfinite(values)) else f"{values.size}, not all finite"


def _fan(counts: np.ndarray) -> np.ndarray:
    """(T, 3) corner indices splitting consecutive polygons of ``counts`` corners into fans."""
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.cumsum(counts) - counts  # also right for no polygon at all
    n_tris = np.maximum(counts - 2, 0)
    first = np.repeat(starts, n_tris)
    k = np.arange(int(n_tris.sum())) - np.repeat(np.cumsum(n_tris) - n_tris, n_tris) + 1
    return np.column_stack([first, first + k, first + k + 1])


def _strip(n: int) -> np.ndarray:
    """(n - 2, 3) corner indices of a triangle strip of ``n`` corners, every triangle wound alike."""
    i = np.arange(max(n - 2, 0))
    odd = i % 2 == 1
    return np.column_stack([np.where(odd, i + 1, i), np.where(odd, i, i + 1), i + 2])


def _face_normals(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(T, 3) unit normals of the triangles (+Z for degenerate ones)."""
    p = positions[triangles]
    # Sides scaled to their largest coordinate first: the cross product of sides near 1e200
    # would overflow, and the direction is all that is kept.
    with np.errstate(over="ignore", invalid="ignore"):
        a, b = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]
        size = np.maximum(np.abs(a).max(axis=1, keepdims=True), np.abs(b).max(axis=1, keepdims=True))
        size = np.where(np.isfinite(size) & (size > 0), size, 1.0)
        return _unit(np.cross(a / size, b / size))


def _unit(v: np.ndarray) -> np.ndarray:
    """``v`` scaled to unit length along its last axis; +Z where that has no direction (zero or not finite)."""
    with np.errstate(over="ignore", invalid="ignore"):
        length = np.linalg.norm(v, axis=-1, keepdims=True)
        ok = np.isfinite(length) & (length > 1e-300)
        return np.where(ok, v / np.where(ok, length, 1.0), [0.0, 0.0, 1.0])


class _Document:
    """A parsed Collada document: its elements by id and the readers that follow references."""

    def __init__(self, root: ET.Element) -> None:
        self.root = root
        self.ids = {e.get("id"): e for e in root.iter() if e.get("id")}
        self.geometries: dict[ET.Element, _Geometry | None] = {}
        self.walked = 0  # nodes visited, instances included
        asset = root.find("asset")
        unit = asset.find("unit") if asset is not None else None
        try:
            self.meter = float(unit.get("meter", "1")) if unit is not None else 1.0
        except ValueError:
            raise ColladaError(f"<unit meter='{unit.get('meter')}'> is not a number") from None
        if not np.isfinite(self.meter) or self.meter <= 0:
            raise ColladaError(f"<unit meter='{unit.get('meter')}'> must be a positive number")
        up_elem = asset.find("up_axis") if asset is not None else None
        self.up = (up_elem.text or "").strip() if up_elem is not None else "Y_UP"
        if self.up not in UP_AXES:
            raise ColladaError(f"<up_axis>{self.up}</up_axis> is unknown; valid: {', '.join(UP_AXES)}")

    def ref(self, url: str | None, tag: str | tuple[str, ...], where: str) -> ET.Element:
        """The element a ``#id`` URL points to, checked to be a ``tag``."""
        tags = (tag,) if isinstance(tag, str) else tag
        elem = self.ids.get((url or "")[1:]) if (url or "").startswith("#") else None
        if elem is None or elem.tag not in tags:
            raise ColladaError(f"{where}: {url!r} names no <{'/'.join(tags)}> of the document")
        return elem

    # --- scene -----------------------------------------------------------------------------
    def meshes(self) -> list[ColladaMesh]:
        root_frame = np.eye(4)
        root_frame[:3, :3] = _UP_TO_Z[self.up] * self.meter
        scene = self._visual_scene()
        instances: list[tuple[ET.Element, str, np.ndarray, dict[str, str]]] = []
        if scene is None:
            for geom in self.root.iter("geometry"):
                instances.append((geom, "", np.eye(4), {}))
        else:
            for node in scene.findall("node"):
                self._walk(node, np.eye(4), instances, 0)
        out = []
        corners = 0
        for geom, node_name, M, bindings in instances:
            geometry = self._geometry(geom)
            if geometry is not None and len(geometry.triangles):
                corners += 3 * len(geometry.triangles)
                if corners > MAX_PLACED_CORNERS:
                    raise ColladaError(f"the scene places more than {MAX_PLACED_CORNERS} triangle corners "
                                       f"({len(instances)} geometry instances); a preview mesh needs far fewer")
                out.append(self._placed(geometry, node_name, root_frame @ M, bindings))
        return out

    def _visual_scene(self) -> ET.Element | None:
        instance = self.root.find("scene/instance_visual_scene")
        if instance is not None:
            return self.ref(instance.get("url"), "visual_scene", "<scene><instance_visual_scene>")
        return self.root.find("library_visual_scenes/visual_scene")

    def _walk(self, node: ET.Element, parent: np.ndarray, out: list, depth: int) -> None:
        where = f"node {node.get('name') or node.get('id') or '(unnamed)'!r}"
        if depth > _MAX_NODE_DEPTH:
            raise ColladaError(f"{where}: nodes nested deeper than {_MAX_NODE_DEPTH} (an <instance_node> cycle?)")
        self.walked += 1
        if self.walked > MAX_INSTANCES:
            raise ColladaError(f"{where}: the scene instantiates more than {MAX_INSTANCES} nodes "
                               "(<instance_node> repeated at every level?)")
        M = parent @ self._local(node, where)
        name = node.get("name") or node.get("id") or ""
        for child in node:
            if child.tag == "instance_geometry":
                geom = self.ref(child.get("url"), "geometry", f"{where} <instance_geometry>")
                out.append((geom, name, M, self._bindings(child)))
            elif child.tag == "instance_controller":
                controller = self.ref(child.get("url"), "controller", f"{where} <instance_controller>")
                skin = controller.find("skin")
                if skin is None:  # morph controllers: the base geometry would need the weights
                    continue
                cwhere = f"controller {controller.get('id')!r} <skin>"
                geom = self.ref(skin.get("source"), "geometry", cwhere)
                bind = skin.find("bind_shape_matrix")
                B = np.eye(4) if bind is None else _numbers(bind, float, cwhere)
                if B.size != 16 or not np.all(np.isfinite(B)):
                    raise ColladaError(f"{cwhere}: <bind_shape_matrix> needs 16 finite numbers, got {_count(B)}")
                out.append((geom, name, M @ B.reshape(4, 4), self._bindings(child)))
            elif child.tag == "instance_node":
                target = self.ref(child.get("url"), "node", f"{where} <instance_node>")
                self._walk(target, M, out, depth + 1)
            elif child.tag == "node":
                self._walk(child, M, out, depth + 1)

    @staticmethod
    def _local(node: ET.Element, where: str) -> np.ndarray:
        """(4, 4) the node's transform elements composed in document order."""
        M = np.eye(4)
        for t in node:
            if t.tag not in ("matrix", "translate", "rotate", "scale", "lookat", "skew"):
                continue
            values = _numbers(t, float, where)
            size = {"matrix": 16, "translate": 3, "rotate": 4, "scale": 3}.get(t.tag)
            if size is None:
                raise ColladaError(f"{where}: <{t.tag}> transforms are not supported; "
                                   "supported: matrix, translate, rotate, scale")
            if values.size != size or not np.all(np.isfinite(values)):
                raise ColladaError(f"{where}: <{t.tag}> needs {size} finite numbers, got {_count(values)}")
            T = np.eye(4)
            if t.tag == "matrix":
                T = values.reshape(4, 4)
            elif t.tag == "translate":
                T[:3, 3] = values
            elif t.tag == "scale":
                T[:3, :3] = np.diag(values)
            else:
                T[:3, :3] = _axis_angle(values[:3], np.radians(values[3]), where)
            M = M @ T
        return M

    def _bindings(self, instance: ET.Element) -> dict[str, str]:
        """Material symbol -> material id, from ``<bind_material>``."""
        return {im.get("symbol", ""): (im.get("target") or "")[1:]
                for im in instance.iterfind("bind_material/technique_common/instance_material")}

    # --- geometry --------------------------------------------------------------------------
    def _placed(self, g: _Geometry, node_name: str, M: np.ndarray, bindings: dict[str, str]) -> ColladaMesh:
        """The geometry moved into the root frame by ``M``, with its materials resolved."""
        A = M[:3, :3]
        positions = g.positions @ A.T + M[:3, 3]
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(positions))):
            raise ColladaError(f"node {node_name!r}: its transforms place geometry {g.name!r} beyond the range of "
                               "floating-point numbers")
        triangles = g.triangles
        if g.normals is None:
            normals = np.repeat(_face_normals(positions, triangles)[:, None, :], 3, axis=1)
        else:
            try:
                normal_map = np.linalg.inv(A).T  # normals follow the inverse transpose
            except np.linalg.LinAlgError:
                raise ColladaError(f"node {node_name!r}: its transform is singular") from None
            normals = _unit(g.normals @ normal_map.T)
        if np.linalg.det(A) < 0:  # a mirroring transform turns faces inside out: wind them back
            triangles = triangles[:, [0, 2, 1]]
            normals = normals[:, [0, 2, 1]]
        materials = tuple(self._material(symbol, bindings) for symbol in g.symbols)
        return ColladaMesh(node_name or g.name, positions, triangles, normals, g.symbol_index, materials)

    def _geometry(self, geom: ET.Element) -> _Geometry | None:
        if geom not in self.geometries:
            self.geometries[geom] = self._read_geometry(geom)
        return self.geometries[geom]

    def _read_geometry(self, geom: ET.Element) -> _Geometry | None:
        name = geom.get("name") or geom.get("id") or ""
        where = f"geometry {geom.get('id') or name!r}"
        mesh = geom.find("mesh")
        if mesh is None:  # convex_mesh, spline, brep: nothing a preview draws
            return None
        vertices = mesh.find("vertices")
        if vertices is None:
            raise ColladaError(f"{where}: <mesh> has no <vertices> element")
        vertex_inputs = {i.get("semantic"): i.get("source") for i in vertices.findall("input")}
        if "POSITION" not in vertex_inputs:
            raise ColladaError(f"{where}: <vertices> has no POSITION input")
        positions = self._source(vertex_inputs["POSITION"], 3, where)
        vertex_normals = self._source(vertex_inputs["NORMAL"], 3, where) if "NORMAL" in vertex_inputs else None
        if vertex_normals is not None and len(vertex_normals) != len(positions):
            raise ColladaError(f"{where}: <vertices> NORMAL has {len(vertex_normals)} entries for "
                               f"{len(positions)} positions")
        tris, normals, symbol_index, symbols = [], [], [], []
        any_normals = False
        for prim in mesh:
            if prim.tag not in POLYGON_TAGS:
                continue
            pwhere = f"{where} <{prim.tag}>"
            corner_v, corner_n, corners = self._primitive(prim, vertices.get("id"), pwhere)
            if corner_v.size and (corner_v.min() < 0 or corner_v.max() >= len(positions)):
                raise ColladaError(f"{pwhere}: a VERTEX index lies outside [0, {len(positions)})")
            tri_v = corner_v[corners]
            if corner_n is not None:
                source = self._source(corner_n[0], 3, pwhere)
                idx = corner_n[1]
                if idx.size and (idx.min() < 0 or idx.max() >= len(source)):
                    raise ColladaError(f"{pwhere}: a NORMAL index lies outside [0, {len(source)})")
                tri_n = source[idx[corners]]
                any_normals = True
            elif vertex_normals is not None:
                tri_n = vertex_normals[tri_v]
                any_normals = True
            else:
                tri_n = None
            symbol = prim.get("material", "")
            if symbol not in symbols:
                symbols.append(symbol)
            tris.append(tri_v)
            normals.append(tri_n)
            symbol_index.append(np.full(len(tri_v), symbols.index(symbol), dtype=np.int64))
        triangles = np.concatenate(tris) if tris else np.zeros((0, 3), dtype=np.int64)
        corner_normals = None
        if any_normals:  # primitives without normals get their face normals
            corner_normals = np.concatenate([
                n if n is not None else np.repeat(_face_normals(positions, t)[:, None, :], 3, axis=1)
                for t, n in zip(tris, normals)
            ])
        index = np.concatenate(symbol_index) if symbol_index else np.zeros(0, dtype=np.int64)
        return _Geometry(name, positions, triangles, corner_normals, index, symbols)

    def _primitive(self, prim: ET.Element, vertices_id: str | None, where: str):
        """(vertex index per corner, (NORMAL source, its index per corner) or None, (T, 3) corners)."""
        inputs = prim.findall("input")
        offsets = {}
        for inp in inputs:
            try:
                offset = int(inp.get("offset", "0"))
            except ValueError:
                raise ColladaError(f"{where}: <input offset='{inp.get('offset')}'> is not an integer") from None
            # Offsets number the index columns of a corner; each input adds at most one column.
            if not 0 <= offset < len(inputs):
                raise ColladaError(f"{where}: <input offset='{inp.get('offset')}'> must lie in [0, {len(inputs)}) "
                                   f"for {len(inputs)} input(s)")
            offsets.setdefault(inp.get("semantic"), (offset, inp.get("source")))
        if "VERTEX" not in offsets:
            raise ColladaError(f"{where}: no VERTEX input")
        if vertices_id and offsets["VERTEX"][1] != f"#{vertices_id}":
            raise ColladaError(f"{where}: VERTEX input {offsets['VERTEX'][1]!r} is not the mesh's <vertices>")
        stride = 1 + max(offset for offset, _ in offsets.values())
        polys = prim.findall("p")
        polys += [ph.find("p") for ph in prim.findall("ph") if ph.find("p") is not None]  # holes are dropped
        lists = [_numbers(p, np.int64, where) for p in polys]
        for values in lists:
            if values.size % stride:
                raise ColladaError(f"{where}: a <p> holds {values.size} indices, not a multiple of the "
                                   f"{stride} inputs per corner")
        idx = np.concatenate(lists).reshape(-1, stride) if lists else np.zeros((0, stride), dtype=np.int64)
        if prim.tag == "triangles":
            if len(idx) % 3:
                raise ColladaError(f"{where}: {len(idx)} corners is not a whole number of triangles")
            corners = np.arange(len(idx)).reshape(-1, 3)
        elif prim.tag == "polylist":
            vcount = prim.find("vcount")
            counts = _numbers(vcount, np.int64, where) if vcount is not None else np.zeros(0, dtype=np.int64)
            # Each count is checked before summing: huge counts would wrap the int64 sum round.
            if counts.size and (counts.min() < 0 or counts.max() > len(idx)):
                raise ColladaError(f"{where}: <vcount> holds {counts.min() if counts.min() < 0 else counts.max()} "
                                   f"corners for a polygon; <p> holds {len(idx)} in all")
            if counts.sum() != len(idx):
                raise ColladaError(f"{where}: <vcount> adds up to {counts.sum()} corners, <p> holds {len(idx)}")
            corners = _fan(counts)
        elif prim.tag == "tristrips":
            corners, start = [], 0
            for values in lists:
                corners.append(_strip(values.size // stride) + start)
                start += values.size // stride
            corners = np.concatenate(corners) if corners else np.zeros((0, 3), dtype=np.int64)
        else:  # polygons and trifans: one fan per <p>
            corners = _fan(np.array([values.size // stride for values in lists], dtype=np.int64))
        corner_v = idx[:, offsets["VERTEX"][0]]
        normal = offsets.get("NORMAL")
        corner_n = None if normal is None else (normal[1], idx[:, normal[0]])
        return corner_v, corner_n, corners.reshape(-1, 3).astype(np.int64)

    def _source(self, url: str | None, width: int, where: str) -> np.ndarray:
        """(count, width) the values an ``<accessor>`` of a ``<source>`` reads."""
        source = self.ref(url, "source", where)
        swhere = f"source {source.get('id')!r}"
        accessor = source.find("technique_common/accessor")
        if accessor is None:
            raise ColladaError(f"{swhere}: no <technique_common><accessor>")
        array = self.ref(accessor.get("source"), "float_array", f"{swhere} <accessor>")
        values = _numbers(array, float, swhere)
        try:
            count = int(accessor.get("count", "0"))
            stride = int(accessor.get("stride", "1"))
            offset = int(accessor.get("offset", "0"))
        except ValueError:
            raise ColladaError(f"{swhere}: <accessor> count, stride and offset must be integers") from None
        params = accessor.findall("param")
        # A stride longer than the whole array reads nothing real (and 2^70 would overflow numpy's shapes).
        if stride < max(len(params), 1) or stride > max(values.size, len(params), width):
            raise ColladaError(f"{swhere}: <accessor> stride {stride} must be at least its {len(params)} <param>(s) "
                               f"and 1, and at most the array's {values.size} values")
        columns = [k for k, p in enumerate(params) if p.get("name")] if params else list(range(stride))
        if len(columns) < width:
            raise ColladaError(f"{swhere}: <accessor> reads {len(columns)} named value(s) with stride "
                               f"{stride}, {width} are needed")
        end = offset + count * stride
        if count < 0 or offset < 0 or end > values.size:
            raise ColladaError(f"{swhere}: <accessor> reads {count} x {stride} values from offset {offset}, "
                               f"the array holds {values.size}")
        data = values[offset:end].reshape(count, stride)[:, columns[:width]]
        if not np.all(np.isfinite(data)):
            raise ColladaError(f"{swhere}: holds NaN or infinite values")
        return data

    # --- materials -------------------------------------------------------------------------
    def _material(self, symbol: str, bindings: dict[str, str]) -> ColladaMaterial:
        material = self.ids.get(bindings.get(symbol, symbol))  # unbound symbols often are the material id
        if material is None or material.tag != "material":
            return ColladaMaterial(symbol or "material", None)
        name = material.get("name") or material.get("id") or symbol
        instance = material.find("instance_effect")
        effect = self.ids.get((instance.get("url") or "")[1:]) if instance is not None else None
        if effect is None or effect.tag != "effect":
            return ColladaMaterial(name, None)
        return ColladaMaterial(name, _effect_color(effect))


def _effect_color(effect: ET.Element) -> tuple[float, float, float, float] | None:
    """The diffuse colour of an effect's common profile (the emission of a constant shader)."""
    for technique in effect.iterfind("profile_COMMON/technique"):
        for shader in technique:
            if shader.tag not in _SHADERS:
                continue
            color = shader.find("emission/color" if shader.tag == "constant" else "diffuse/color")
            if color is None:
                return None
            try:
                values = np.array((color.text or "").split(), dtype=float)
            except ValueError:
                return None
            if values.size not in (3, 4) or not np.all(np.isfinite(values)):
                return None
            rgba = np.clip(np.append(values, 1.0)[:4], 0.0, 1.0)
            return (float(rgba[0]), float(rgba[1]), float(rgba[2]), float(rgba[3]))
    return None


def _axis_angle(axis: Iterable[float], angle: float, where: str) -> np.ndarray:
    """(3, 3) rotation by ``angle`` [rad] about ``axis``; a zero axis with a non-zero angle is an error."""
    a = np.asarray(list(axis), dtype=float)
    if np.linalg.norm(a) < 1e-12 and abs(angle) >= 1e-12:
        raise ColladaError(f"{where}: <rotate> has a zero axis")
    return axis_angle_to_matrix(a, angle)  # a zero axis (with no angle) gives the identity
