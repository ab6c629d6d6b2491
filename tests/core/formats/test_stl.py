# SPDX-License-Identifier: GPL-3.0-or-later
"""STL meshes: binary and ASCII read alike, shared corners merged, normals from the winding, bad files refused."""

import struct

import numpy as np
import pytest

from ik_core.errors import MeshError
from ik_core.formats.stl import read_stl

TETRAHEDRON = np.array([(0.0, 0.0, 0.0), (0.05, 0.0, 0.0), (0.0, 0.02, 0.0), (0.0, 0.0, 0.08)])
FACES = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]  # counter-clockwise seen from outside


def write_ascii(path, faces=FACES, verts=TETRAHEDRON):
    lines = ["solid t"]
    for f in faces:
        lines += ["  facet normal 0 0 0", "    outer loop",
                  *(f"      vertex {float(verts[i][0])!r} {float(verts[i][1])!r} {float(verts[i][2])!r}" for i in f),
                  "    endloop", "  endfacet"]
    path.write_text("\n".join(lines + ["endsolid t"]) + "\n")
    return path


def write_binary(path, faces=FACES, verts=TETRAHEDRON, header=b"solid but binary"):
    out = bytearray(header.ljust(80, b" ")) + struct.pack("<I", len(faces))
    for f in faces:
        out += struct.pack("<12fH", 0, 0, 0, *verts[f[0]], *verts[f[1]], *verts[f[2]], 0)
    path.write_bytes(bytes(out))
    return path


def corners(mesh):
    return mesh.positions[mesh.triangles]


@pytest.mark.parametrize("writer", [write_ascii, write_binary])
def test_tetrahedron_reads_as_written(tmp_path, writer):
    """Four shared vertices, four triangles at the written corners, outward unit normals at every corner."""
    mesh = read_stl(writer(tmp_path / "t.stl"))
    assert mesh.name == "t" and mesh.positions.shape == (4, 3) and mesh.triangles.shape == (4, 3)
    np.testing.assert_allclose(corners(mesh), TETRAHEDRON[np.array(FACES)], atol=1e-7)
    centroid = TETRAHEDRON.mean(axis=0)
    for tri, n in zip(corners(mesh), mesh.normals):
        assert np.allclose(n, n[0]) and np.isclose(np.linalg.norm(n[0]), 1.0)
        assert np.dot(n[0], tri.mean(axis=0) - centroid) > 0


def test_binary_with_a_solid_header_and_ascii_agree(tmp_path):
    """A binary file whose header starts with 'solid' is still binary (its size says so)."""
    a, b = read_stl(write_ascii(tmp_path / "a.stl")), read_stl(write_binary(tmp_path / "b.stl"))
    np.testing.assert_allclose(corners(a), corners(b), atol=1e-7)


def test_degenerate_triangle_gets_a_unit_normal(tmp_path):
    """A triangle of zero area (exporters leave some) reads, with a unit normal, not NaN."""
    mesh = read_stl(write_ascii(tmp_path / "d.stl", faces=[(0, 1, 1), *FACES]))
    assert np.all(np.isfinite(mesh.normals)) and np.allclose(np.linalg.norm(mesh.normals, axis=-1), 1.0)


@pytest.mark.parametrize(("content", "match"), [
    (b"", "neither ASCII"),
    (b"\x00" * 80 + struct.pack("<I", 3) + b"\x00" * 60, "announces 3 triangles"),
    (b"solid x\nendsolid x\n", "no triangle"),
    (b"solid x\nfacet normal 0 0 0\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nendloop\nendfacet\nendsolid\n",
     "whole triangles"),
    (b"solid x\nouter loop\nvertex 0 0 nan\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendsolid\n", "finite"),
    (b"solid x\nouter loop\nvertex 0 0 zero\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendsolid\n", "not a number"),
])
def test_bad_files_are_refused_naming_the_file(tmp_path, content, match):
    path = tmp_path / "bad.stl"
    path.write_bytes(content)
    with pytest.raises(MeshError, match=match) as err:
        read_stl(path)
    assert "bad.stl" in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(MeshError, match="cannot read STL file"):
        read_stl(tmp_path / "nothing.stl")
