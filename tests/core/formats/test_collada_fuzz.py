# SPDX-License-Identifier: GPL-3.0-or-later
"""Fuzzing the Collada reader: any input gives meshes or a ColladaError naming the file, with bounded work."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from fuzz_inputs import FUZZ, file_inputs, read_or_refuse
from hypothesis import given
from hypothesis import strategies as st

from ik_core.errors import ColladaError
from ik_core.formats.collada import MAX_INSTANCES, read_collada

# Every element the reader follows, once: units and up axis, a material with a colour, a polylist
# with normals, triangles, a triangle strip, a skin controller, a library node and nested nodes
# with each kind of transform.
SEED = """<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
 <asset><unit meter="0.01"/><up_axis>Y_UP</up_axis></asset>
 <library_effects><effect id="red-fx"><profile_COMMON><technique sid="c"><phong><diffuse>
  <color>1 0 0 1</color></diffuse></phong></technique></profile_COMMON></effect></library_effects>
 <library_materials><material id="red" name="Red"><instance_effect url="#red-fx"/></material></library_materials>
 <library_geometries><geometry id="g" name="quad"><mesh>
  <source id="g-pos"><float_array id="g-pos-a" count="12">0 0 0 1 0 0 1 1 0 0 1 0</float_array>
   <technique_common><accessor source="#g-pos-a" count="4" stride="3"><param name="X" type="float"/>
   <param name="Y" type="float"/><param name="Z" type="float"/></accessor></technique_common></source>
  <source id="g-n"><float_array id="g-n-a" count="3">0 0 1</float_array>
   <technique_common><accessor source="#g-n-a" count="1" stride="3"/></technique_common></source>
  <vertices id="g-v"><input semantic="POSITION" source="#g-pos"/></vertices>
  <polylist material="m" count="1"><input semantic="VERTEX" source="#g-v" offset="0"/>
   <input semantic="NORMAL" source="#g-n" offset="1"/><vcount>4</vcount><p>0 0 1 0 2 0 3 0</p></polylist>
  <triangles material="m" count="1"><input semantic="VERTEX" source="#g-v" offset="0"/><p>0 1 2</p></triangles>
  <tristrips count="1"><input semantic="VERTEX" source="#g-v" offset="0"/><p>0 1 3 2</p></tristrips>
 </mesh></geometry></library_geometries>
 <library_controllers><controller id="c"><skin source="#g">
  <bind_shape_matrix>1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1</bind_shape_matrix></skin></controller></library_controllers>
 <library_nodes><node id="lib" name="lib"><translate>0 0 1</translate><instance_geometry url="#g"/></node>
 </library_nodes>
 <library_visual_scenes><visual_scene id="s">
  <node id="a" name="a"><matrix>1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1</matrix><rotate>0 0 1 90</rotate><scale>1 2 1</scale>
   <instance_geometry url="#g"><bind_material><technique_common><instance_material symbol="m" target="#red"/>
   </technique_common></bind_material></instance_geometry>
   <node id="b" name="b"><instance_controller url="#c"/><instance_node url="#lib"/></node>
  </node>
 </visual_scene></library_visual_scenes>
 <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("collada_fuzz")


def test_the_seed_reads(folder: Path) -> None:
    """The seed is valid: three instances (node, controller, library node), each of 2 + 1 + 2 triangles."""
    meshes = read_or_refuse(read_collada, folder / "seed.dae", SEED.encode())
    assert [len(m.triangles) for m in meshes] == [5, 5, 5]
    assert meshes[0].materials[0].color == (1.0, 0.0, 0.0, 1.0)


@FUZZ
@given(data=file_inputs(SEED))
def test_any_bytes_read_or_raise_collada_error_naming_the_file(folder: Path, data: bytes) -> None:
    """Mutated, truncated, random or non-UTF-8 input: valid finite meshes, or ColladaError with the file's name."""
    result = read_or_refuse(read_collada, folder / "fuzzed.dae", data)
    if isinstance(result, list):
        for mesh in result:  # ColladaMesh validates shapes and indices itself; finiteness is checked here
            assert np.all(np.isfinite(mesh.positions)) and np.all(np.isfinite(mesh.normals))
    else:
        assert isinstance(result, ColladaError)


@pytest.mark.parametrize(("old", "new", "match"), [
    ("1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1</bind_shape_matrix>", "1 2 3 4 5</bind_shape_matrix>",
     r"controller 'c' <skin>: <bind_shape_matrix> needs 16 finite numbers, got 5"),
    ("1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1</bind_shape_matrix>", "1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 nan</bind_shape_matrix>",
     r"controller 'c' <skin>: <bind_shape_matrix> needs 16 finite numbers, got 16, not all finite"),
    ('semantic="NORMAL" source="#g-n" offset="1"', 'semantic="NORMAL" source="#g-n" offset="99999999999"',
     r"geometry 'g' <polylist>: <input offset='99999999999'> must lie in \[0, 2\)"),
    ('semantic="NORMAL" source="#g-n" offset="1"', 'semantic="NORMAL" source="#g-n" offset="-1"',
     r"geometry 'g' <polylist>: <input offset='-1'> must lie in \[0, 2\)"),
    ("<vcount>4</vcount>", "<vcount>9223372036854775807 9223372036854775807 4</vcount>",
     r"geometry 'g' <polylist>: <vcount> holds 9223372036854775807 corners for a polygon; <p> holds 4 in all"),
    ("<p>0 1 2</p>", "<p>0 1 99999999999999999999999</p>",
     r"geometry 'g' <triangles>: <p> holds text that is not integers"),
    ('count="4" stride="3"', 'count="4" stride="999999999999999999"',
     r"source 'g-pos': <accessor> stride 999999999999999999 must be at least its 3 <param>\(s\) and 1, and at most "
     r"the array's 12 values"),
    ('count="4" stride="3"', 'count="0" stride="1180591620717411303424"', r"source 'g-pos': <accessor> stride "),
    ("<scale>1 2 1</scale>", "<scale>1e300 2 1</scale><scale>1e300 1 1</scale>",
     r"node 'a': its transforms place geometry 'quad' beyond the range"),
])
def test_malformed_elements_are_named(folder: Path, old: str, new: str, match: str) -> None:
    """Each crash the fuzzing found is now a ColladaError naming the file and the element."""
    assert old in SEED
    path = folder / "bad.dae"
    path.write_text(SEED.replace(old, new, 1))
    with pytest.raises(ColladaError, match=rf"bad\.dae: {match}"):
        read_collada(path)


def test_geometry_without_id_and_no_scene_reads(folder: Path) -> None:
    """Without a scene, geometries are read as they are, also one without an id (it was a KeyError)."""
    text = SEED.replace('<geometry id="g" name="quad">', '<geometry name="quad">').replace(
        '<scene><instance_visual_scene url="#s"/></scene>', "")
    text = text[: text.index("<library_controllers>")] + "</COLLADA>\n"
    (mesh,) = read_or_refuse(read_collada, folder / "no_id.dae", text.encode())
    assert mesh.name == "quad" and len(mesh.triangles) == 5


@pytest.mark.parametrize("levels", [20, 200])
def test_instance_fan_out_is_bounded(folder: Path, levels: int) -> None:
    """Nodes instancing the level below twice, 20 or 200 levels deep (2^20 or 2^200 instances), are
    refused after MAX_INSTANCES nodes, in well under a second."""
    library = "".join(f'<node id="n{i}"><instance_node url="#n{i + 1}"/><instance_node url="#n{i + 1}"/></node>'
                      for i in range(levels))
    library += f'<node id="n{levels}"><instance_geometry url="#g"/></node>'
    text = SEED.replace("<library_nodes>", "<library_nodes>" + library).replace(
        '<instance_node url="#lib"/>', '<instance_node url="#n0"/>')
    path = folder / "fan.dae"
    path.write_text(text)
    start = time.perf_counter()
    with pytest.raises(ColladaError, match=rf"fan\.dae: node .*more than {MAX_INSTANCES} nodes"):
        read_collada(path)
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_deeply_nested_xml_is_refused_by_name(folder: Path, depth: int) -> None:
    """Nodes nested 10^4 or 10^5 deep: a ColladaError about the nesting, not a RecursionError."""
    text = SEED.replace("<node id=\"b\" name=\"b\">", "<node>" * depth + "<node id=\"b\" name=\"b\">").replace(
        "</node>\n  </node>", "</node>" + "</node>" * depth + "\n  </node>")
    path = folder / "deep.dae"
    path.write_text(text)
    with pytest.raises(ColladaError, match=r"deep\.dae: node .*nested deeper than"):
        read_collada(path)


@FUZZ
@given(size=st.integers(0, 40), fill=st.sampled_from(["1", "nan", "inf", "1e400", "-0"]))
def test_bind_shape_matrix_of_any_size(folder: Path, size: int, fill: str) -> None:
    """A bind shape matrix reads only with 16 finite numbers; every other size or value is named."""
    path = folder / "bind.dae"
    path.write_text(SEED.replace("1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1</bind_shape_matrix>",
                                 " ".join([fill] * size) + "</bind_shape_matrix>"))
    if size == 16 and fill in ("1", "-0"):  # 16 equal numbers: a singular matrix, which normals cannot follow
        with pytest.raises(ColladaError, match=r"bind\.dae: node 'b': its transform is singular"):
            read_collada(path)
    else:
        with pytest.raises(ColladaError, match=r"bind\.dae: controller 'c' <skin>: <bind_shape_matrix> needs 16"):
            read_collada(path)


def test_empty_polygon_lists_give_no_triangles(folder: Path) -> None:
    """A polylist with empty <vcount> and <p> (a fan of no polygon) adds no triangle; it used to raise ValueError."""
    path = folder / "empty_polylist.dae"
    path.write_text(SEED.replace("<vcount>4</vcount><p>0 0 1 0 2 0 3 0</p>", "<vcount></vcount><p></p>"))
    assert [len(m.triangles) for m in read_collada(path)] == [3, 3, 3]


SMALL = st.integers(-2, 9)
HUGE = st.integers(-(2**70), 2**70)


@FUZZ
@given(count=st.just(4) | SMALL | HUGE, stride=st.just(3) | SMALL | HUGE, offset=st.just(0) | SMALL | HUGE,
       normal_offset=st.sampled_from([0, 1]) | SMALL | HUGE, vcount=st.just([4]) | st.lists(SMALL, max_size=5),
       corners=st.just([0, 0, 1, 0, 2, 0, 3, 0]) | st.lists(SMALL, max_size=12),
       strip=st.just([0, 1, 3, 2]) | st.lists(SMALL, max_size=6))
def test_any_counts_and_indices_read_or_are_named(folder: Path, count: int, stride: int, offset: int,
                                                  normal_offset: int, vcount: list[int], corners: list[int],
                                                  strip: list[int]) -> None:
    """Accessor counts, strides and offsets, input offsets, vcounts and indices of any value (up to 2^70):
    finite meshes, or a ColladaError naming the file; never a numpy error."""
    text = (SEED.replace('count="4" stride="3"', f'count="{count}" stride="{stride}" offset="{offset}"')
            .replace('source="#g-n" offset="1"', f'source="#g-n" offset="{normal_offset}"')
            .replace("<vcount>4</vcount><p>0 0 1 0 2 0 3 0</p>",
                     f"<vcount>{' '.join(map(str, vcount))}</vcount><p>{' '.join(map(str, corners))}</p>")
            .replace("<p>0 1 3 2</p>", f"<p>{' '.join(map(str, strip))}</p>"))
    result = read_or_refuse(read_collada, folder / "counts.dae", text.encode())
    if isinstance(result, list):
        assert all(np.all(np.isfinite(m.positions)) and len(m.triangles) >= 1 for m in result)
