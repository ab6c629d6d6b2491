# SPDX-License-Identifier: GPL-3.0-or-later
"""An independent reading of Blender-exported .dae files by regexes, to check the Collada reader against."""

from __future__ import annotations

import re

import numpy as np


def independent_parse(text: str) -> tuple[int, int, np.ndarray, np.ndarray]:
    """(vertices, triangles, lower bound, upper bound) of a Blender-exported .dae, read by regexes.

    Relies on the layout those files have (one positions array per geometry, one <matrix> per
    node right before its <instance_geometry>, metres and Z up), which it checks as it goes.
    """
    assert re.search(r'<unit name="meter" meter="1"\s*/>', text) and "<up_axis>Z_UP</up_axis>" in text
    geometries = {}
    for gid, body in re.findall(r'<geometry id="([^"]+)"[^>]*>(.*?)</geometry>', text, re.S):
        arrays = re.findall(r'<float_array id="[^"]*-positions-array" count="(\d+)">([^<]*)</float_array>', body)
        assert len(arrays) == 1
        count, values = int(arrays[0][0]), [float(v) for v in arrays[0][1].split()]
        assert len(values) == count
        triangles = sum(int(n) for n in re.findall(r'<triangles [^>]*count="(\d+)"', body))
        for count, vcount in re.findall(r'<polylist [^>]*count="(\d+)">.*?<vcount>([^<]*)</vcount>', body, re.S):
            sides = [int(v) for v in vcount.split()]
            assert len(sides) == int(count)
            triangles += sum(n - 2 for n in sides)  # a polygon of n sides is n - 2 triangles
        geometries[gid] = (np.reshape(values, (-1, 3)), triangles)
    n_vertices = n_triangles = 0
    lows, highs = [], []
    for matrix, gid in re.findall(r'<matrix sid="transform">([^<]*)</matrix>\s*<instance_geometry url="#([^"]+)"',
                                  text):
        M = np.reshape([float(v) for v in matrix.split()], (4, 4))
        points = geometries[gid][0] @ M[:3, :3].T + M[:3, 3]
        n_vertices += len(points)
        n_triangles += geometries[gid][1]
        lows.append(points.min(axis=0))
        highs.append(points.max(axis=0))
    assert text.count("<instance_geometry") == len(lows)  # every instance was matched with its matrix
    return n_vertices, n_triangles, np.min(lows, axis=0), np.max(highs, axis=0)
