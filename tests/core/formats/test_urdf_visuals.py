# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of URDF link visuals: shapes, origins, material colours and mesh paths."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from data_files import data_file

from ik_core.errors import URDFError
from ik_core.formats.urdf_visuals import parse_visuals, resolve_mesh

PAINTED = """<robot name="painted">
  <material name="Orange"><color rgba="1 0.5 0 1"/></material>
  <link name="base">
    <visual><geometry><box size="0.1 0.2 0.3"/></geometry><material name="Orange"/></visual>
    <visual><origin xyz="0 0 1"/><geometry><sphere radius="0.05"/></geometry>
      <material name="Inline"><color rgba="0 0 1 0.5"/></material></visual>
    <visual><geometry><cylinder radius="0.02" length="0.4"/></geometry></visual>
    <visual><geometry><mesh filename="package://pkg/m/arm.dae" scale="0.001 0.001 0.001"/></geometry>
      <material name="Unknown"/></visual>
  </link>
</robot>"""


def test_material_colours_inline_or_by_name() -> None:
    """A visual's colour is written inline, or found on the top-level material it names; else None."""
    box, sphere, cylinder, mesh = parse_visuals(PAINTED)
    assert (box.material, box.color) == ("Orange", (1.0, 0.5, 0.0, 1.0))
    assert (sphere.material, sphere.color) == ("Inline", (0.0, 0.0, 1.0, 0.5))
    assert (cylinder.material, cylinder.color) == ("", None)
    assert (mesh.material, mesh.color) == ("Unknown", None)
    assert mesh.scale == (0.001, 0.001, 0.001) and mesh.filename == "package://pkg/m/arm.dae"
    np.testing.assert_allclose(sphere.origin[:3, 3], [0, 0, 1])


def test_bad_colour_names_the_visual() -> None:
    with pytest.raises(URDFError, match=r"link 'base' visual 1 <material> <color rgba>.*4 finite"):
        parse_visuals(PAINTED.replace('rgba="0 0 1 0.5"', 'rgba="0 0 1"'))


def test_official_ur5_visuals_are_light_grey_meshes() -> None:
    visuals = parse_visuals(data_file("robots", "ur5.urdf"))
    assert len(visuals) == 7 and all(v.kind == "mesh" and v.filename.endswith(".dae") for v in visuals)
    assert {(v.material, v.color) for v in visuals} == {("LightGrey", (0.7, 0.7, 0.7, 1.0))}


def test_package_paths_resolve_against_package_folders(tmp_path: Path) -> None:
    mesh = tmp_path / "pkgs" / "pkg" / "m" / "arm.dae"
    mesh.parent.mkdir(parents=True)
    mesh.write_text("<COLLADA/>")
    assert resolve_mesh("package://pkg/m/arm.dae", None, [str(tmp_path / "pkgs")]) == mesh
    assert resolve_mesh("package://pkg/m/arm.dae", None, []) is None
    assert resolve_mesh("m/arm.dae", tmp_path / "pkgs" / "pkg") == mesh


def test_xacro_visuals_are_read_from_the_expansion(tmp_path: Path) -> None:
    """The visuals of a .urdf.xacro are those of the URDF it expands to."""
    path = tmp_path / "arm.urdf.xacro"
    path.write_text(PAINTED)
    assert [(v.link, v.kind, v.size, v.color) for v in parse_visuals(path)] == [
        (v.link, v.kind, v.size, v.color) for v in parse_visuals(PAINTED)]


def test_package_paths_resolve_one_folder_down_and_on_ros_package_path(tmp_path: Path, monkeypatch) -> None:
    """A description unpacked beside the URDF (``robots/meshes/<pkg>/...``) resolves without a package folder,
    as does a package on ROS's ``ROS_PACKAGE_PATH``; a missing package still resolves to None."""
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    mesh = tmp_path / "robots" / "meshes" / "arm_description" / "visual" / "link.dae"
    mesh.parent.mkdir(parents=True)
    mesh.write_text("<COLLADA/>")
    assert resolve_mesh("package://arm_description/visual/link.dae", tmp_path / "robots") == mesh
    assert resolve_mesh("package://other_description/visual/link.dae", tmp_path / "robots") is None
    elsewhere = tmp_path / "ws" / "src" / "other_description" / "m.stl"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text("solid")
    assert resolve_mesh("package://other_description/m.stl", tmp_path / "robots") is None
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"/nonexistent{os.pathsep}{tmp_path / 'ws' / 'src'}")
    assert resolve_mesh("package://other_description/m.stl", tmp_path / "robots") == elsewhere


def test_gazebo_model_uris_and_percent_encoded_file_uris_resolve(tmp_path: Path, monkeypatch) -> None:
    """``model://arm/meshes/base.stl`` (Gazebo's) resolves as a package would, and on Gazebo's resource paths;
    ``file://`` URIs are percent-decoded (a folder with a space is written ``%20``)."""
    for name in ("ROS_PACKAGE_PATH", "GZ_SIM_RESOURCE_PATH", "IGN_GAZEBO_RESOURCE_PATH", "GAZEBO_MODEL_PATH"):
        monkeypatch.delenv(name, raising=False)
    mesh = tmp_path / "models" / "arm" / "meshes" / "base.stl"
    mesh.parent.mkdir(parents=True)
    mesh.write_text("solid")
    assert resolve_mesh("model://arm/meshes/base.stl", None, [str(tmp_path / "models")]) == mesh
    assert resolve_mesh("model://arm/meshes/base.stl", tmp_path / "models" / "arm") == mesh  # beside the URDF
    assert resolve_mesh("model://arm/meshes/base.stl", None) is None
    monkeypatch.setenv("GZ_SIM_RESOURCE_PATH", f"{tmp_path / 'nowhere'}{os.pathsep}{tmp_path / 'models'}")
    assert resolve_mesh("model://arm/meshes/base.stl", None) == mesh
    assert resolve_mesh("package://arm/meshes/base.stl", None) is None  # Gazebo's paths are not ROS packages
    spaced = tmp_path / "my robot" / "base.stl"
    spaced.parent.mkdir()
    spaced.write_text("solid")
    assert resolve_mesh(f"file://{str(spaced).replace(' ', '%20')}", None) == spaced
