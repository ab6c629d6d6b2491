# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the robot presets: exact agreement with the official URDFs and the published DH tables."""

from __future__ import annotations

import ast
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from data_files import data_file

from ik_core.errors import SkeletonError, UnknownNameError
from ik_core.formats.urdf import load_urdf
from ik_core.model.kinematics import effector_poses, forward_kinematics
from ik_core.robots.presets import PRESETS_FOLDER, list_presets, load_preset, preset_info

PI, TWO_PI = math.pi, 2 * math.pi
REQUIRED = {"ur5", "ur5e", "ur10e", "panda", "lbr_iiwa_14_r820", "kinova_gen3_7dof"}
# preset name -> (URDF file, tip link)
FROM_URDF = {
    "ur5": ("ur5.urdf", "tool0"),
    "panda": ("panda.urdf", "panda_link8"),
    "lbr_iiwa_14_r820": ("lbr_iiwa_14_r820.urdf", "tool0"),
}


def dh(theta: np.ndarray, d: float, a: float, alpha: float) -> np.ndarray:
    """(..., 4, 4) standard DH link transform, written independently of ik_core."""
    c, s = np.cos(theta), np.sin(theta)
    ca, sa = math.cos(alpha), math.sin(alpha)
    T = np.zeros((*np.shape(theta), 4, 4))
    T[..., 0, :] = np.stack([c, -s * ca, s * sa, a * c], -1)
    T[..., 1, :] = np.stack([s, c * ca, -c * sa, a * s], -1)
    T[..., 2, 1], T[..., 2, 2], T[..., 2, 3], T[..., 3, 3] = sa, ca, d, 1.0
    return T


def random_q(skeleton, n: int, seed: int) -> np.ndarray:
    lo = np.where(np.isfinite(skeleton.lower), skeleton.lower, -PI)
    hi = np.where(np.isfinite(skeleton.upper), skeleton.upper, PI)
    return np.random.default_rng(seed).uniform(lo, hi, (n, skeleton.dof))


def test_required_presets_are_listed():
    """All six required robots ship as presets in the data folder next to ik_core."""
    assert REQUIRED <= set(list_presets())
    assert PRESETS_FOLDER == Path(__file__).resolve().parents[3] / "presets" / "robots"


@pytest.mark.parametrize("name", sorted(FROM_URDF))
def test_urdf_presets_match_the_official_urdf(name):
    """Presets copied from a URDF reproduce its FK (every joint frame and the tool) to 1e-9 m."""
    path = data_file("robots", FROM_URDF[name][0])
    tip = FROM_URDF[name][1]
    urdf, preset = load_urdf(path, tip_links=tip), load_preset(name)
    assert preset.joint_names == urdf.joint_names
    assert preset.moving_joint_names == urdf.moving_joint_names
    np.testing.assert_array_equal(preset.lower, urdf.lower)
    np.testing.assert_array_equal(preset.upper, urdf.upper)
    np.testing.assert_array_equal(preset.velocity, urdf.velocity)
    q = random_q(preset, 500, seed=1)
    np.testing.assert_allclose(forward_kinematics(preset, q), forward_kinematics(urdf, q), rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        effector_poses(preset, q, "tool"), effector_poses(urdf, q, tip), rtol=0, atol=1e-9
    )


UR_E = {
    # Universal Robots' published DH parameters (d1, a2, a3, d4, d5, d6) [m].
    "ur5e": (0.1625, -0.425, -0.3922, 0.1333, 0.0997, 0.0996),
    "ur10e": (0.1807, -0.6127, -0.57155, 0.17415, 0.11985, 0.11655),
}


@pytest.mark.parametrize("name", sorted(UR_E))
def test_ur_e_presets_match_published_dh(name):
    """UR5e / UR10e: base_link -> tool0 equals Rz(pi) times the published DH chain to 1e-12 m."""
    d1, a2, a3, d4, d5, d6 = UR_E[name]
    rows = [(d1, 0, PI / 2), (0, a2, 0), (0, a3, 0), (d4, 0, PI / 2), (d5, 0, -PI / 2), (d6, 0, 0)]
    skeleton = load_preset(name)
    q = random_q(skeleton, 300, seed=2)
    T = np.broadcast_to(np.diag([-1.0, -1.0, 1.0, 1.0]), (len(q), 4, 4))
    for i, (d, a, alpha) in enumerate(rows):
        T = T @ dh(q[:, i], d, a, alpha)
    np.testing.assert_allclose(effector_poses(skeleton, q, "tool"), T, rtol=0, atol=1e-12)


def test_ur_e_limits_follow_the_datasheets_and_ros_description():
    """Elbow +/-pi, other joints +/-2 pi; UR5e pi rad/s everywhere, UR10e 2pi/3 on base and shoulder."""
    lim = np.array([TWO_PI, TWO_PI, PI, TWO_PI, TWO_PI, TWO_PI])
    for name, vel in (("ur5e", [PI] * 6), ("ur10e", [TWO_PI / 3] * 2 + [PI] * 4)):
        skeleton = load_preset(name)
        np.testing.assert_allclose(skeleton.upper, lim, rtol=0, atol=1e-15)
        np.testing.assert_allclose(skeleton.lower, -lim, rtol=0, atol=1e-15)
        np.testing.assert_allclose(skeleton.velocity, vel, rtol=0, atol=1e-15)


def test_gen3_preset_matches_user_guide_dh_table():
    """Kinova Gen3: FK equals the user guide's classic DH table (base row, 7 joints) to 1e-12 m."""
    skeleton = load_preset("kinova_gen3_7dof")
    q = random_q(skeleton, 300, seed=3)
    d = [-(0.1564 + 0.1284), -(0.0054 + 0.0064), -(0.2104 + 0.2104), -(0.0064 + 0.0064),
         -(0.2084 + 0.1059), 0.0, -(0.1059 + 0.0615)]
    alpha = [PI / 2] * 6 + [PI]
    offset = [0.0] + [PI] * 6
    T = np.broadcast_to(dh(np.zeros(()), 0.0, 0.0, PI), (len(q), 4, 4))
    for i in range(7):
        T = T @ dh(q[:, i] + offset[i], d[i], 0.0, alpha[i])
    np.testing.assert_allclose(effector_poses(skeleton, q, "tool"), T, rtol=0, atol=1e-12)
    assert np.isinf(skeleton.lower[[0, 2, 4, 6]]).all()


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_every_preset_is_complete_and_consistent(name):
    """Each preset cites a source, names a tool, keeps home inside the limits and serialises to JSON."""
    info = preset_info(name)
    skeleton = load_preset(name)
    for key in ("display_name", "manufacturer", "source"):
        assert isinstance(info[key], str) and len(info[key]) >= 3
    assert info["name"] == name and info["dof"] == skeleton.dof
    assert info["joint_names"] == list(skeleton.moving_joint_names)
    assert skeleton.effector_names == ("tool",)
    assert np.all(np.isfinite(skeleton.velocity)) and np.all(skeleton.velocity > 0)
    assert skeleton.within_limits(skeleton.preferred_q)
    np.testing.assert_array_equal(info["home_q"], skeleton.preferred_q)
    assert json.loads(json.dumps(info, allow_nan=False)) == info
    assert len(info["acceleration"]) == skeleton.dof


def test_panda_acceleration_limits_are_reported():
    """The Panda preset carries its per-joint acceleration limits; presets without them give None."""
    assert preset_info("panda")["acceleration"] == [15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0]
    assert preset_info("ur5e")["acceleration"] == [None] * 6


def test_names_are_case_insensitive_and_unknown_names_list_the_valid_ones():
    """'UR5' loads ur5; a typo raises UnknownNameError naming every preset."""
    assert load_preset("UR5").name == "ur5"
    with pytest.raises(UnknownNameError) as err:
        load_preset("ur55")
    assert "ur55" in str(err.value) and all(n in str(err.value) for n in REQUIRED)
    with pytest.raises(UnknownNameError):
        preset_info("nope")


def write_preset(folder: Path, data: dict, stem: str = "arm") -> None:
    (folder / f"{stem}.json").write_text(json.dumps(data))


def test_explicit_folder_and_malformed_files(tmp_path):
    """A folder argument is honoured; malformed files raise SkeletonError naming file and entry."""
    assert list_presets(tmp_path / "missing") == []
    data = json.loads((PRESETS_FOLDER / "ur5e.json").read_text())
    data["name"] = "arm"
    write_preset(tmp_path, data)
    assert list_presets(tmp_path) == ["arm"]
    assert load_preset("arm", tmp_path).dof == 6

    bad = json.loads(json.dumps(data))
    bad["joints"][1]["type"] = "ball"
    write_preset(tmp_path, bad)
    with pytest.raises(SkeletonError, match=r"joints\[1\].*'ball'.*revolute, continuous"):
        load_preset("arm", tmp_path)

    bad = json.loads(json.dumps(data))
    del bad["home"]["elbow_joint"]
    write_preset(tmp_path, bad)
    with pytest.raises(SkeletonError, match="home"):
        load_preset("arm", tmp_path)

    bad = json.loads(json.dumps(data))
    bad["joints"][2]["xyz"] = [0, "x", 0]
    write_preset(tmp_path, bad)
    with pytest.raises(SkeletonError, match=r"arm\.json.*xyz\[1\]"):
        load_preset("arm", tmp_path)

    bad = json.loads(json.dumps(data))
    bad["joints"][3]["lower"] = 4.0
    bad["joints"][3]["upper"] = 3.0
    write_preset(tmp_path, bad)
    with pytest.raises(SkeletonError, match="exceeds upper"):
        load_preset("arm", tmp_path)

    (tmp_path / "arm.json").write_text("{ not json")
    with pytest.raises(SkeletonError, match="invalid JSON at line 1"):
        load_preset("arm", tmp_path)


def test_copied_folder_loads_identically(tmp_path):
    """Copying the preset folder elsewhere gives the same skeletons (no hidden dependency)."""
    shutil.copytree(PRESETS_FOLDER, tmp_path / "robots")
    q = random_q(load_preset("panda"), 5, seed=4)
    np.testing.assert_array_equal(
        effector_poses(load_preset("panda", tmp_path / "robots"), q, "tool"),
        effector_poses(load_preset("panda"), q, "tool"),
    )


def test_robots_module_imports_nothing_outside_ik_core():
    """ik_core.robots.presets imports neither bpy nor the presets package (only stdlib, numpy, ik_core)."""
    source = (Path(__file__).resolve().parents[3] / "ik_core" / "robots" / "presets.py").read_text()
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots.add(node.module.split(".")[0])
    assert roots <= {"__future__", "copy", "json", "math", "os", "pathlib", "typing", "numpy"}


def test_preset_visuals_are_bundled_and_name_preset_links() -> None:
    """Presets with a "visuals" URDF draw links they have; its meshes are bundled next to it."""
    from ik_core.formats.urdf_visuals import parse_visuals, resolve_mesh
    from ik_core.robots.model import RobotModel
    from ik_core.robots.presets import preset_visuals

    drawn = {}
    for name in list_presets():
        path = preset_visuals(name)
        if path is None:
            continue
        visuals = parse_visuals(path)
        links = set(RobotModel.from_preset(name).urdf.links)
        assert visuals and {v.link for v in visuals} <= links, name
        for v in visuals:
            if v.kind == "mesh":
                assert resolve_mesh(v.filename, path.parent) is not None, (name, v.filename)
        assert (path.parent / "LICENSE").is_file()
        drawn[name] = {v.kind for v in visuals}
    assert drawn["ur5"] == drawn["lbr_iiwa_14_r820"] == drawn["panda"] == {"mesh"}


def test_preset_naming_a_missing_visuals_file_is_refused(tmp_path: Path) -> None:
    from ik_core.robots.presets import preset_visuals

    data = json.loads((PRESETS_FOLDER / "ur5.json").read_text())
    data["visuals"] = "meshes/none.urdf"
    (tmp_path / "ur5.json").write_text(json.dumps(data))
    with pytest.raises(SkeletonError, match="visuals.*'meshes/none.urdf', which is not a file"):
        preset_visuals("ur5", tmp_path)
    del data["visuals"]
    (tmp_path / "ur5.json").write_text(json.dumps(data))
    assert preset_visuals("ur5", tmp_path) is None
