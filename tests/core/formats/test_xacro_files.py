# SPDX-License-Identifier: GPL-3.0-or-later
"""Xacro files expanded by the bundled xacro package: macros, properties, maths, conditions, includes, args, errors."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from xacro_cases import ARM, EXPECTED, NS, TOP, workspace

from ik_core.errors import InvalidInputError, URDFError
from ik_core.formats.urdf import parse_urdf
from ik_core.formats.urdf_visuals import parse_visuals
from ik_core.formats.xacro_files import XacroExpansion, expand_xacro, is_xacro_path, parse_xacro_args
from ik_core.model.kinematics import effector_poses


@pytest.fixture(autouse=True)
def _no_ros_package_path(monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)


def test_tree_expands_to_the_robot_written_by_hand(tmp_path: Path) -> None:
    """Macros with parameters, defaults and blocks, properties, maths, if/unless and both includes give exactly the
    robot written out by hand: the same links, joints, limits, and tool poses at random configurations."""
    model = parse_urdf(expand_xacro(workspace(tmp_path)))
    hand = parse_urdf(EXPECTED)
    assert model.name == "duo"
    assert sorted(model.links) == sorted(hand.links)
    expanded, written = (sorted(m.joints, key=lambda j: j.name) for m in (model, hand))
    assert len(expanded) == len(written)
    for got, want in zip(expanded, written):  # field by field: approx takes no nested tuples
        assert [*got[:4], *got.xyz, *got.rpy, *got.axis, *got[7:]] == pytest.approx(
            [*want[:4], *want.xyz, *want.rpy, *want.axis, *want[7:]])
    tips = ["left_hand", "right_hand", "finger"]
    ours, theirs = model.to_skeleton(tip_links=tips), hand.to_skeleton(tip_links=tips)
    q = np.random.default_rng(3).uniform(-1.0, 1.0, (20, ours.dof)) * [1, 1, 1, 1, 0.04]
    for tip in tips:
        assert np.allclose(effector_poses(ours, q, tip), effector_poses(theirs, q, tip), atol=1e-12)


def test_arguments_override_defaults(tmp_path: Path) -> None:
    """Arguments given replace the defaults: a link name prefix, reach (a number) and the conditional gripper."""
    path = workspace(tmp_path)
    model = parse_urdf(expand_xacro(path, parse_xacro_args("prefix:=duo_ gripper:=false reach:=0.25")))
    assert model.root_link == "duo_torso"
    assert "flange" in model.links and "finger" not in model.links
    assert model.joint("left_elbow").xyz == (0.25, 0.0, 0.0)


def test_a_xacro_path_reads_directly_with_its_defaults(tmp_path: Path) -> None:
    """parse_urdf and parse_visuals take a .urdf.xacro path as they take a URDF, expanded with default arguments."""
    path = workspace(tmp_path)
    assert is_xacro_path(path) and is_xacro_path(str(path).upper()) and not is_xacro_path("<robot/>")
    assert sorted(parse_urdf(path).links) == sorted(parse_urdf(EXPECTED).links)
    (box,) = parse_visuals(path)
    assert (box.link, box.kind, box.size) == ("torso", "box", (0.3, 0.2, 0.6))


def test_expansion_is_a_path_like_naming_its_file(tmp_path: Path) -> None:
    """The expansion keeps its file, arguments and text; messages about the URDF it gives name the xacro file."""
    path = workspace(tmp_path, TOP.replace('effort="5"', 'effort="5" lower="x"').replace(
        'lower="0" upper', 'upper'))
    expansion = expand_xacro(path, {"reach": "0.5"})
    assert isinstance(expansion, XacroExpansion)
    assert (expansion.path, expansion.args) == (str(path), {"reach": "0.5"})
    assert "<robot" in expansion.text
    with pytest.raises(URDFError, match=rf"{path} \(expanded by xacro\): .*finger_joint.*'x'.*\(line \d+\)"):
        parse_urdf(expansion)


def test_find_resolves_through_package_folder_ros_package_path_and_nearby(tmp_path: Path, monkeypatch) -> None:
    """$(find pkg) takes the Package Folder first, then ROS_PACKAGE_PATH, then the folders around the file."""
    path = workspace(tmp_path / "ws")
    elsewhere = tmp_path / "vendor" / "duo_parts" / "urdf"
    elsewhere.mkdir(parents=True)
    (elsewhere / "arm.xacro").write_text(ARM.replace('type="revolute">\n      <parent link="${side}_upper"',
                                                     'type="continuous">\n      <parent link="${side}_upper"'))

    def elbow(**kw) -> str:
        return parse_urdf(expand_xacro(path, **kw)).joint("left_elbow").type

    assert elbow() == "revolute"  # the sibling package in the workspace
    assert elbow(package_dirs=[tmp_path / "vendor"]) == "continuous"  # the folder holding the package
    assert elbow(package_dirs=[tmp_path / "vendor" / "duo_parts"]) == "continuous"  # the package itself
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "vendor"))
    assert elbow() == "continuous"


def test_find_of_the_files_own_package_and_one_folder_down(tmp_path: Path) -> None:
    """$(find) names the description's own package (an ancestor folder), or a package one folder down nearby."""
    top = TOP.replace('filename="common.xacro"', 'filename="$(find duo_description)/urdf/common.xacro"')
    path = workspace(tmp_path / "ws", top)
    group = tmp_path / "ws" / "src" / "group"
    group.mkdir()
    (tmp_path / "ws" / "src" / "duo_parts").rename(group / "duo_parts")
    assert "finger" in parse_urdf(expand_xacro(path)).links


def test_load_yaml(tmp_path: Path) -> None:
    """xacro.load_yaml works with the bundled PyYAML, on a file found through $(find)."""
    path = workspace(tmp_path)
    (path.parent / "sizes.yaml").write_text("torso: {width: 0.8}\n")
    top = TOP.replace('<xacro:include filename="common.xacro"/>',
                      '<xacro:include filename="common.xacro"/>'
                      '<xacro:property name="sizes" value="${xacro.load_yaml(\'$(find duo_description)'
                      '/urdf/sizes.yaml\')}"/>').replace('box size="${torso_w}', 'box size="${sizes.torso.width}')
    path.write_text(top)
    (box,) = parse_visuals(expand_xacro(path))
    assert box.size == (0.8, 0.2, 0.6)


@pytest.mark.parametrize(("edit", "message"), [
    (("${torso_w}", "${torso_width}"), r"duo.urdf.xacro \(xacro\): .*torso_width"),
    (('filename="common.xacro"', 'filename="missing.xacro"'), r"duo.urdf.xacro \(xacro\): .*missing.xacro"),
    (("${-pi/2}", "${-pi/}"), r"duo.urdf.xacro \(xacro\), in macro 'arm': .*-pi/"),
    (('reach="$(arg reach)">\n    <origin xyz="0 ${torso_w', 'reach="$(arg reaches)">\n    <origin xyz="0 ${torso_w'),
     r"duo.urdf.xacro \(xacro\), in macro 'arm': Undefined substitution argument reaches"),
    (("$(find duo_parts)", "$(find no_such_pkg)"), r"\$\(find no_such_pkg\): no ROS package folder named "
                                                    r"'no_such_pkg'.*Package Folder"),
    (("</robot>", '<xacro:leg side="right"/></robot>'), r"duo.urdf.xacro \(xacro\): .*leg"),
    (("</robot>", "</robt>"), r"duo.urdf.xacro \(xacro\): XML parse error at line \d+, column \d+: mismatched tag"),
])
def test_errors_name_the_file(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    """Each kind of broken xacro is a URDFError naming the file (and the XML line where there is one)."""
    top = TOP.replace(*edit)
    assert top != TOP
    with pytest.raises(URDFError, match=message):
        expand_xacro(workspace(tmp_path, top))


def test_errors_inside_an_included_macro_name_the_macro_and_the_include(tmp_path: Path) -> None:
    """A bad expression in an included macro names the included file, the file including it and the macro."""
    path = workspace(tmp_path)
    arm = path.parents[2] / "duo_parts" / "urdf" / "arm.xacro"
    arm.write_text(ARM.replace("${reach} 0 0", "${reach * unknown_gain} 0 0"))
    with pytest.raises(URDFError, match=r"duo.urdf.xacro.*in macro 'arm'.*unknown_gain"):
        expand_xacro(path)


def test_missing_file_and_state_after_an_error(tmp_path: Path) -> None:
    """A missing file is named; an expansion that failed leaves nothing behind for the next one."""
    with pytest.raises(URDFError, match="xacro file .*nope.urdf.xacro.* not found"):
        expand_xacro(tmp_path / "nope.urdf.xacro")
    broken = workspace(tmp_path / "broken", TOP.replace("${torso_w / 2}", "${torso_w / (}"))
    with pytest.raises(URDFError):
        expand_xacro(broken)
    assert parse_urdf(expand_xacro(workspace(tmp_path / "good"))).joint("left_elbow").xyz == (0.4, 0.0, 0.0)


def test_parse_xacro_args() -> None:
    """name:=value items, from one string (shell quoting) or a list; bad ones named."""
    assert parse_xacro_args('prefix:=left_ "name:=my robot" empty:=') == {
        "prefix": "left_", "name": "my robot", "empty": ""}
    assert parse_xacro_args(["a:=1", "b:=x:=y"]) == {"a": "1", "b": "x:=y"}
    assert parse_xacro_args("") == {}
    for bad, message in (("prefix=left", r"'prefix=left' must look like name:=value"),
                         ("1st:=a", r"'1st' is not an argument name"),
                         ("a:=1 a:=2", r"'a' is given twice"),
                         ('a:="open', r"quote")):
        with pytest.raises(InvalidInputError, match=message):
            parse_xacro_args(bad)


def test_xml_text_with_xacro_elements_is_refused_with_the_way_out() -> None:
    """Xacro macros given as text (no file to resolve includes against) are refused, saying what to give instead."""
    with pytest.raises(URDFError, match=r"give the .xacro file itself"):
        parse_urdf(f'<robot name="r" {NS}><xacro:property name="a" value="1"/><link name="b"/></robot>')


def test_the_formats_page_example_expands(tmp_path: Path) -> None:
    """docs/formats.md's xacro example, in the test workspace, expands to the robot it describes."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "formats.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```xml\n(.*?)```", doc, flags=re.S)
    model = parse_urdf(expand_xacro(workspace(tmp_path, example), {"prefix": "duo_"}))
    assert sorted(model.links) == ["duo_torso", "left_hand", "left_upper"]
    assert model.joint("left_shoulder").rpy == pytest.approx((-math.pi / 2, 0.0, 0.0))
