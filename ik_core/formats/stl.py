# SPDX-License-Identifier: GPL-3.0-or-later
"""STL meshes (binary and ASCII), read with numpy into the triangle meshes the link geometry is built from."""

from __future__ import annotations

import os
import re

import numpy as np

from ..errors import MeshError
from .collada import ColladaMaterial, ColladaMesh

_BINARY_TRIANGLE = np.dtype([("normal", "<f4", 3), ("corners", "<f4", (3, 3)), ("attribute", "<u2")])
_VERTEX = re.compile(rb"vertex\s+(\S+)\s+(\S+)\s+(\S+)")


def read_stl(source: str | os.PathLike, name: str = "") -> ColladaMesh:
    """The triangles of an STL file, in the file's own coordinates (no unit or axis change).

    Binary files are recognised by their size (84 bytes + 50 per triangle, whatever their header
    says: some begin with ``solid``), the others read as ASCII ``vertex`` lines. Corners at the same
    position share a vertex; each corner's normal is its triangle's (the file's facet normals are
    often zero or wrong, so they are recomputed, as Blender's importer does). Time and memory are
    linear in the file's size (plus a sort to share vertices).

    Args:
        source: Path of the ``.stl`` file.
        name: The mesh's name; defaults to the file's stem.

    Returns:
        A mesh of one material without a colour (V, 3 positions; T, 3 triangles; T, 3, 3 normals).

    Raises:
        MeshError: The file is missing, unreadable, truncated, has no triangle, or holds a
            coordinate that is not a finite number; the message names the file.
    """
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise MeshError(f"cannot read STL file {path!r}: {err.strerror or err}") from None
    count = int.from_bytes(data[80:84], "little") if len(data) >= 84 else -1
    if count >= 0 and len(data) == 84 + 50 * count:
        corners = np.frombuffer(data, _BINARY_TRIANGLE, count, 84)["corners"].astype(np.float64)
    elif data.lstrip()[:5].lower() == b"solid":
        try:
            corners = np.array(_VERTEX.findall(data), dtype=bytes).astype(np.float64).reshape(-1, 3)
        except ValueError:
            raise MeshError(f"STL file {path!r}: a vertex coordinate is not a number") from None
        if len(corners) % 3:
            raise MeshError(f"STL file {path!r}: {len(corners)} vertices do not make whole triangles")
        corners = corners.reshape(-1, 3, 3)
    else:
        raise MeshError(f"STL file {path!r} is neither ASCII (starting with 'solid') nor binary "
                        f"({len(data)} bytes, where its header announces {max(count, 0)} triangles)")
    if not len(corners):
        raise MeshError(f"STL file {path!r} holds no triangle")
    if not np.all(np.isfinite(corners)):
        raise MeshError(f"STL file {path!r}: a vertex coordinate is not a finite number")
    positions, index = np.unique(corners.reshape(-1, 3), axis=0, return_inverse=True)
    triangles = index.reshape(-1, 3)
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    n = np.cross(b - a, c - a)
    length = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.where(length > 0, n / np.where(length > 0, length, 1.0), [0.0, 0.0, 1.0])
    normals = np.repeat(n[:, None, :], 3, axis=1)
    stem = name or os.path.splitext(os.path.basename(path))[0]
    return ColladaMesh(stem, positions, triangles, normals, np.zeros(len(triangles), dtype=np.int64),
                       (ColladaMaterial(stem),))
