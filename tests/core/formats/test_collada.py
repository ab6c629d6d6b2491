# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the Collada reader: the UR5's official meshes against an independent parse, and written hard cases."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest
from collada_counts import independent_parse
from data_files import UR5_VISUAL

from ik_core.errors import ColladaError
from ik_core.formats.collada import ColladaMaterial, ColladaMesh, merge_meshes, read_collada

UR5_FILES = ("base", "shoulder", "upperarm", "forearm", "wrist1", "wrist2", "wrist3")
BUNDLED_UR5 = UR5_VISUAL
BUNDLED_IIWA = BUNDLED_UR5.parents[1] / "lbr_iiwa_14_r820" / "visual"


# --- the UR5's official meshes, against a separate regex-and-split parse ------------------------


@pytest.mark.parametrize("name", UR5_FILES)
def test_ur5_meshes_match_an_independent_parse(name: str) -> None:
    """Vertex and triangle counts and bounds of each official UR5 mesh equal a regex parse's."""
    path = BUNDLED_UR5 / f"{name}.dae"
    vertices, triangles, low, high = independent_parse(path.read_text())
    mesh = merge_meshes(read_collada(path))
    assert len(mesh.positions) == vertices
    assert len(mesh.triangles) == triangles
    np.testing.assert_allclose(mesh.positions.min(axis=0), low, atol=1e-9)
    np.testing.assert_allclose(mesh.positions.max(axis=0), high, atol=1e-9)
    # A UR5 link is a few centimetres to half a metre long: metres, not millimetres.
    assert 0.05 < np.max(high - low) < 0.6
    np.testing.assert_allclose(np.linalg.norm(mesh.normals, axis=-1), 1.0, atol=1e-6)
    assert all(m.color is not None for m in mesh.materials)  # every UR5 material has a diffuse colour


@pytest.mark.parametrize("name", ["base_link"] + [f"link_{i}" for i in range(1, 8)])
def test_bundled_iiwa_meshes_match_an_independent_parse(name: str) -> None:
    """The iiwa's meshes (polylists, several materials each) read as a regex parse reads them."""
    path = BUNDLED_IIWA / f"{name}.dae"
    vertices, triangles, low, high = independent_parse(path.read_text())
    meshes = read_collada(path)
    mesh = merge_meshes(meshes)
    assert (len(mesh.positions), len(mesh.triangles)) == (vertices, triangles)
    np.testing.assert_allclose(mesh.positions.min(axis=0), low, atol=1e-9)
    np.testing.assert_allclose(mesh.positions.max(axis=0), high, atol=1e-9)
    assert 0.1 < np.max(high - low) < 0.5  # an iiwa link is 10 to 50 cm: metres
    np.testing.assert_allclose(np.linalg.norm(mesh.normals, axis=-1), 1.0, atol=1e-6)
    assert all(m.color is not None for m in mesh.materials)


# SHA-256 of ros-industrial/universal_robot's ur_description/meshes/ur5/visual/*.dae at commit
# a7a2c5459b9702ba8b07ebf35f0134159e50e680 (presets/robots/meshes/README.md).
UR5_OFFICIAL_SHA256 = {
    "base": "d76755b25c45002b4167cd1a6bb4cf501567627ae0ed9b7e2d94b421d417712d",
    "forearm": "a163079ff71fa2a5cdea9a642a1ec31007b9b6c29ce14d106e7cb088896b4c8b",
    "shoulder": "fce5dd86671eeb56ddc821f138ad5fd45e03a5c7d31bdf59f3b46f193e1c9455",
    "upperarm": "bcfe8208ad1cbeada65166078d6b883413e9aa4e05fa891d1d80d780aecf4fd7",
    "wrist1": "0eeddca348d2e2db0d834298a58a3ea09b7aafe59051f1f552d6114d92de5acd",
    "wrist2": "9be5d84e57e63adeccd9110cc87d0e457cabb13cdd4603016f9a22233f1dc34e",
    "wrist3": "7630f9d288ecbbf24d9def977521e766ccedd6b4e89334253c818a049b462e37",
}


def test_bundled_ur5_meshes_are_the_official_ones() -> None:
    """The meshes bundled for the UR5 preset are byte for byte the official files (their SHA-256)."""
    assert sorted(UR5_OFFICIAL_SHA256) == sorted(UR5_FILES)
    for name in UR5_FILES:
        digest = hashlib.sha256((BUNDLED_UR5 / f"{name}.dae").read_bytes()).hexdigest()
        assert digest == UR5_OFFICIAL_SHA256[name], name


# --- written documents for the hard cases -----------------------------------------------------

CUBE_POSITIONS = "0 0 0 1 0 0 1 1 0 0 1 0 0 0 1 1 0 1 1 1 1 0 1 1"
CUBE = np.array(CUBE_POSITIONS.split(), dtype=float).reshape(-1, 3)
CUBE_QUADS = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]  # outward


def source(sid: str, values: str, stride: int = 3, params: str = "XYZ") -> str:
    count = len(values.split())
    names = "".join(f'<param name="{p}" type="float"/>' if p != "_" else '<param type="float"/>' for p in params)
    return (f'<source id="{sid}"><float_array id="{sid}-array" count="{count}">{values}</float_array>'
            f'<technique_common><accessor source="#{sid}-array" count="{count // stride}" stride="{stride}">'
            f"{names}</accessor></technique_common></source>")


def cube_geometry(gid: str = "cube", primitive: str = "polylist", material: str = "paint", normals: bool = False,
                  positions: str = CUBE_POSITIONS) -> str:
    """A unit cube [0, 1]^3 written with one primitive kind (quads, or their triangles)."""
    inputs = f'<input semantic="VERTEX" source="#{gid}-v" offset="0"/>'
    normal_src = ""
    if normals:  # one normal per face, indexed per corner
        normal_src = source(f"{gid}-n", "0 0 -1 0 0 1 0 -1 0 1 0 0 0 1 0 -1 0 0")
        inputs += f'<input semantic="NORMAL" source="#{gid}-n" offset="1"/>'
    corners = [[(v, f) for v in quad] for f, quad in enumerate(CUBE_QUADS)]

    def p(polys) -> str:
        return " ".join(" ".join(f"{v} {f}" if normals else f"{v}" for v, f in poly) for poly in polys)

    if primitive == "polylist":
        body = (f'<polylist material="{material}" count="6">{inputs}<vcount>{" ".join(["4"] * 6)}</vcount>'
                f"<p>{p(corners)}</p></polylist>")
    elif primitive == "triangles":
        tris = [[c[0], c[k], c[k + 1]] for c in corners for k in (1, 2)]
        body = f'<triangles material="{material}" count="12">{inputs}<p>{p(tris)}</p></triangles>'
    elif primitive in ("polygons", "trifans"):
        body = f'<{primitive} material="{material}" count="6">{inputs}' + "".join(
            f"<p>{p([c])}</p>" for c in corners) + f"</{primitive}>"
    else:  # tristrips: a quad (a, b, c, d) is the strip a, b, d, c
        strips = [[c[0], c[1], c[3], c[2]] for c in corners]
        body = f'<tristrips material="{material}" count="6">{inputs}' + "".join(
            f"<p>{p([s])}</p>" for s in strips) + "</tristrips>"
    return (f'<geometry id="{gid}" name="{gid}"><mesh>{source(f"{gid}-pos", positions)}{normal_src}'
            f'<vertices id="{gid}-v"><input semantic="POSITION" source="#{gid}-pos"/></vertices>'
            f"{body}</mesh></geometry>")


def document(geometries: str, scene: str | None, unit: float = 1.0, up: str | None = "Z_UP",
             extra: str = "") -> str:
    up_elem = f"<up_axis>{up}</up_axis>" if up else ""
    visual = "" if scene is None else (
        f'<library_visual_scenes><visual_scene id="Scene">{scene}</visual_scene></library_visual_scenes>'
        '<scene><instance_visual_scene url="#Scene"/></scene>')
    return (f'<?xml version="1.0"?><COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">'
            f'<asset><unit name="u" meter="{unit}"/>{up_elem}</asset>{extra}'
            f"<library_geometries>{geometries}</library_geometries>{visual}</COLLADA>")


def node(name: str, transforms: str, url: str = "#cube", bind: str = "") -> str:
    return (f'<node id="{name}" name="{name}">{transforms}'
            f'<instance_geometry url="{url}">{bind}</instance_geometry></node>')


def face_normals(mesh: ColladaMesh) -> np.ndarray:
    p = mesh.positions[mesh.triangles]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    return n / np.linalg.norm(n, axis=1, keepdims=True)


def assert_closed_outward_cube(mesh: ColladaMesh, centre: np.ndarray, size: float) -> None:
    """12 triangles covering the cube's area, each facing away from its centre, normals along the faces'."""
    assert mesh.triangles.shape == (12, 3)
    p = mesh.positions[mesh.triangles]
    area = 0.5 * np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
    assert area.sum() == pytest.approx(6 * size**2)
    outward = p.mean(axis=1) - centre
    assert np.all(np.einsum("ij,ij->i", face_normals(mesh), outward) > 0)
    np.testing.assert_allclose(mesh.normals, np.repeat(face_normals(mesh)[:, None], 3, axis=1), atol=1e-9)


@pytest.mark.parametrize("primitive", ["polylist", "triangles", "polygons", "trifans", "tristrips"])
def test_every_polygon_primitive_gives_the_same_outward_cube(primitive: str) -> None:
    """Quads in polylist, polygons, fans and strips are triangulated to the cube, wound outward."""
    meshes = read_collada(document(cube_geometry(primitive=primitive), node("n", "")))
    assert len(meshes) == 1 and len(meshes[0].positions) == 8
    assert_closed_outward_cube(meshes[0], np.full(3, 0.5), 1.0)


def test_normals_in_the_file_are_used_and_missing_ones_computed() -> None:
    """Per-corner normals come from the NORMAL input; without one they are the face normals."""
    with_normals = read_collada(document(cube_geometry(normals=True), node("n", "")))[0]
    without = read_collada(document(cube_geometry(normals=False), node("n", "")))[0]
    np.testing.assert_allclose(with_normals.normals, without.normals, atol=1e-12)
    # The file's normals really are read: a file with flipped normals gives flipped normals.
    flipped = cube_geometry(normals=True).replace("0 0 -1 0 0 1 0 -1 0 1 0 0 0 1 0 -1 0 0",
                                                  "0 0 1 0 0 -1 0 1 0 -1 0 0 0 -1 0 1 0 0")
    np.testing.assert_allclose(read_collada(document(flipped, node("n", "")))[0].normals, -without.normals)


def test_node_transforms_compose_in_document_order() -> None:
    """translate, rotate (degrees), scale and matrix elements apply as T @ R @ S @ M to the geometry."""
    transforms = ('<translate>1 2 3</translate><rotate>0 0 1 90</rotate><scale>2 2 2</scale>'
                  "<matrix>1 0 0 0.5 0 1 0 0 0 0 1 0 0 0 0 1</matrix>")
    mesh = read_collada(document(cube_geometry(), node("n", transforms)))[0]
    local = CUBE + [0.5, 0.0, 0.0]
    Rz = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(mesh.positions, (2 * local) @ Rz.T + [1, 2, 3], atol=1e-12)
    assert_closed_outward_cube(mesh, np.array([1.0, 2.0, 3.0]) + Rz @ [2.0, 1.0, 1.0], 2.0)


def test_nested_nodes_and_instance_node_place_each_instance() -> None:
    """A library node instanced twice, under a moved parent, gives two meshes at their own places."""
    library = ('<library_nodes><node id="part" name="part"><translate>0 0 1</translate>'
               '<instance_geometry url="#cube"/></node></library_nodes>')
    scene = ('<node id="root" name="root"><translate>10 0 0</translate>'
             '<node id="a" name="a"><instance_node url="#part"/></node>'
             '<node id="b" name="b"><translate>0 5 0</translate><instance_node url="#part"/></node></node>')
    meshes = read_collada(document(cube_geometry(), scene, extra=library))
    assert [m.name for m in meshes] == ["part", "part"]
    np.testing.assert_allclose(meshes[0].positions.min(axis=0), [10, 0, 1])
    np.testing.assert_allclose(meshes[1].positions.min(axis=0), [10, 5, 1])


def test_several_geometries_merge_with_their_materials() -> None:
    """Two geometries, two coloured materials: the merged mesh keeps both, indexed per triangle."""
    effects = ('<library_effects>'
               '<effect id="red-fx"><profile_COMMON><technique sid="c"><lambert><diffuse>'
               '<color sid="diffuse">1 0 0 1</color></diffuse></lambert></technique></profile_COMMON></effect>'
               '<effect id="blue-fx"><profile_COMMON><technique sid="c"><constant><emission>'
               '<color>0 0 1</color></emission></constant></technique></profile_COMMON></effect>'
               '</library_effects><library_materials>'
               '<material id="red-mat" name="Red"><instance_effect url="#red-fx"/></material>'
               '<material id="blue-mat" name="Blue"><instance_effect url="#blue-fx"/></material>'
               '</library_materials>')

    def bind(target: str) -> str:
        return (f'<bind_material><technique_common><instance_material symbol="paint" target="#{target}"/>'
                "</technique_common></bind_material>")

    scene = node("one", "", "#a", bind("red-mat")) + node("two", "<translate>3 0 0</translate>", "#b",
                                                          bind("blue-mat"))
    meshes = read_collada(document(cube_geometry("a") + cube_geometry("b", primitive="triangles"), scene,
                                   extra=effects))
    assert [m.materials for m in meshes] == [(ColladaMaterial("Red", (1.0, 0.0, 0.0, 1.0)),),
                                             (ColladaMaterial("Blue", (0.0, 0.0, 1.0, 1.0)),)]
    merged = merge_meshes(meshes, "both")
    assert merged.name == "both" and len(merged.positions) == 16 and len(merged.triangles) == 24
    assert [m.name for m in merged.materials] == ["Red", "Blue"]
    np.testing.assert_array_equal(merged.material_index, [0] * 12 + [1] * 12)
    assert merged.positions[merged.triangles[12:]].min() >= 0.0
    assert merged.positions[merged.triangles[12:]][..., 0].min() == pytest.approx(3.0)  # offsets kept


def test_unbound_material_has_no_colour() -> None:
    """A symbol bound to nothing gives a material without colour (the URDF's colour applies)."""
    mesh = read_collada(document(cube_geometry(material="nothing"), node("n", "")))[0]
    assert mesh.materials[0].name == "nothing" and mesh.materials[0].color is None


@pytest.mark.parametrize("unit", [0.001, 0.0254, 1.0])
def test_unit_scales_positions_to_metres(unit: float) -> None:
    """<unit meter> scales every position (and node translation) to metres."""
    mesh = read_collada(document(cube_geometry(), node("n", "<translate>1000 0 0</translate>"), unit=unit))[0]
    np.testing.assert_allclose(mesh.positions.min(axis=0), [1000 * unit, 0, 0], atol=1e-12)
    np.testing.assert_allclose(mesh.positions.max(axis=0), [1001 * unit, unit, unit], atol=1e-12)
    assert_closed_outward_cube(mesh, np.array([1000.5, 0.5, 0.5]) * unit, unit)


@pytest.mark.parametrize(("up", "expected"), [("Z_UP", (0, 1, 0)), ("Y_UP", (0, 0, 1)), (None, (0, 0, 1)),
                                              ("X_UP", (0, 1, 0))])
def test_up_axis_becomes_z(up: str | None, expected: tuple[int, int, int]) -> None:
    """The document's up axis turns onto +Z (Y_UP when absent, as the specification says)."""
    positions = "0 0 0 0 1 0 1 0 0"  # a triangle whose second corner is on the file's +Y
    geometry = cube_geometry(positions=positions).replace(
        re.search(r"<polylist.*</polylist>", cube_geometry()).group(0),
        '<triangles count="1"><input semantic="VERTEX" source="#cube-v" offset="0"/><p>0 1 2</p></triangles>')
    mesh = read_collada(document(geometry, node("n", ""), up=up))[0]
    np.testing.assert_allclose(mesh.positions[1], expected, atol=1e-12)
    if up == "X_UP":  # the file's +X (its up) is our +Z
        np.testing.assert_allclose(mesh.positions[2], (0, 0, 1), atol=1e-12)
    # Turning is a rotation: the triangle's normal follows its winding.
    np.testing.assert_allclose(mesh.normals[0, 0], face_normals(mesh)[0], atol=1e-12)


def test_mirroring_node_keeps_faces_outward() -> None:
    """A negative scale mirrors the cube; the triangles are re-wound so they still face out."""
    mesh = read_collada(document(cube_geometry(normals=True), node("n", "<scale>-1 1 1</scale>")))[0]
    assert_closed_outward_cube(mesh, np.array([-0.5, 0.5, 0.5]), 1.0)


def test_accessor_stride_and_unnamed_params_are_honoured() -> None:
    """Positions with a fourth, unnamed value per vertex read only X, Y and Z."""
    padded = " ".join(f"{v} 9" if (k % 3) == 2 else v for k, v in enumerate(CUBE_POSITIONS.split()))
    geometry = cube_geometry().replace(source("cube-pos", CUBE_POSITIONS), source("cube-pos", padded, 4, "XYZ_"))
    mesh = read_collada(document(geometry, node("n", "")))[0]
    np.testing.assert_allclose(mesh.positions, CUBE)


def test_document_without_scene_gives_each_geometry_once() -> None:
    mesh = read_collada(document(cube_geometry(), None))
    assert len(mesh) == 1 and len(mesh[0].triangles) == 12


def test_geometry_without_polygons_gives_no_mesh() -> None:
    lines = cube_geometry().replace(re.search(r"<polylist.*</polylist>", cube_geometry()).group(0),
                                    '<lines count="1"><input semantic="VERTEX" source="#cube-v" offset="0"/>'
                                    "<p>0 1</p></lines>")
    assert read_collada(document(lines, node("n", ""))) == []
    assert merge_meshes([]).triangles.shape == (0, 3)


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.replace("<COLLADA", "<NOTCOLLADA").replace("</COLLADA>", "</NOTCOLLADA>"), "expected <COLLADA>"),
    (lambda d: d.replace("</COLLADA>", ""), "XML parse error"),
    (lambda d: d.replace("<p>0 3 2 1", "<p>0 3 2 99"), "VERTEX index lies outside \\[0, 8\\)"),
    (lambda d: d.replace("<vcount>4 4", "<vcount>3 4"), "<vcount> adds up to 23 corners"),
    (lambda d: d.replace('url="#cube"', 'url="#nothing"'), "'#nothing' names no <geometry>"),
    (lambda d: d.replace("Z_UP", "W_UP"), "W_UP.*valid: X_UP, Y_UP, Z_UP"),
    (lambda d: d.replace('meter="1.0"', 'meter="-2"'), "must be a positive number"),
    (lambda d: d.replace("<translate>", "<lookat>").replace("</translate>", "</lookat>"), "<lookat> transforms"),
    (lambda d: d.replace("<translate>1 2 3</translate>", "<translate>1 2</translate>"), "<translate> needs 3"),
    (lambda d: d.replace('count="24">', 'count="24">0 0 x '), "not numbers"),
])
def test_malformed_documents_name_the_problem(change, message: str) -> None:
    good = document(cube_geometry(), node("n", "<translate>1 2 3</translate>"))
    assert read_collada(good)  # the unchanged document reads
    with pytest.raises(ColladaError, match=message):
        read_collada(change(good))


def test_instance_node_cycle_is_refused() -> None:
    library = '<library_nodes><node id="loop"><instance_node url="#loop"/></node></library_nodes>'
    with pytest.raises(ColladaError, match="cycle"):
        read_collada(document(cube_geometry(), '<node id="n"><instance_node url="#loop"/></node>', extra=library))


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.dae"
    with pytest.raises(ColladaError, match="cannot read Collada file .*missing.dae"):
        read_collada(missing)
    broken = tmp_path / "broken.dae"
    broken.write_text(document(cube_geometry(), node("n", "")).replace("<p>0 3 2 1", "<p>0 3 2 99"))
    with pytest.raises(ColladaError, match=r"broken.dae: geometry 'cube'"):
        read_collada(broken)
    with pytest.raises(ColladaError, match="file path or Collada XML text"):
        read_collada(3.5)  # type: ignore[arg-type]


def test_mesh_validates_its_arrays() -> None:
    ok = dict(name="m", positions=np.zeros((3, 3)), triangles=np.array([[0, 1, 2]]), normals=np.zeros((1, 3, 3)),
              material_index=np.zeros(1, dtype=int), materials=(ColladaMaterial("paint"),))
    ColladaMesh(**ok)
    with pytest.raises(ColladaError, match=r"triangle indices must lie in \[0, 3\)"):
        ColladaMesh(**{**ok, "triangles": np.array([[0, 1, 3]])})
    with pytest.raises(ColladaError, match="normals has shape"):
        ColladaMesh(**{**ok, "normals": np.zeros((1, 3))})
    with pytest.raises(ColladaError, match=r"material indices must lie in \[0, 1\)"):
        ColladaMesh(**{**ok, "material_index": np.ones(1, dtype=int)})
