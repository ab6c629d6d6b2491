# SPDX-License-Identifier: GPL-3.0-or-later
"""ROS package folders found without ROS: the Package Folder, ROS_PACKAGE_PATH, the folders around a description."""

from __future__ import annotations

from pathlib import Path

import pytest

from ik_core.errors import URDFError
from ik_core.formats.ros_packages import find_package, nearby_folders, package_roots


@pytest.fixture(autouse=True)
def _no_ros_package_path(monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)


def test_search_order(tmp_path: Path, monkeypatch) -> None:
    """The Package Folder wins over ROS_PACKAGE_PATH, which wins over the folders around the file."""
    here = tmp_path / "ws" / "src" / "robot_description" / "urdf"
    for folder in (here, tmp_path / "ws" / "src" / "parts", tmp_path / "env" / "parts", tmp_path / "given" / "parts"):
        folder.mkdir(parents=True)
    assert find_package("parts", here) == tmp_path / "ws" / "src" / "parts"  # a sibling of an ancestor
    assert find_package("robot_description", here) == here.parent  # the file's own package
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{tmp_path / 'nothing'}:{tmp_path / 'env'}")
    assert find_package("parts", here) == tmp_path / "env" / "parts"
    assert find_package("parts", here, [tmp_path / "given"]) == tmp_path / "given" / "parts"
    assert find_package("parts", None, [tmp_path / "given" / "parts"]) == tmp_path / "given" / "parts"
    assert package_roots([tmp_path / "given", ""]) == [tmp_path / "given", tmp_path / "nothing", tmp_path / "env"]


def test_one_folder_down_only_nearby(tmp_path: Path) -> None:
    """A package grouped one folder down (src/<group>/pkg) is found from the folders near the file only."""
    here = tmp_path / "a" / "b" / "c" / "d" / "e"
    here.mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "group" / "near_pkg").mkdir(parents=True)
    (tmp_path / "group" / "far_pkg").mkdir(parents=True)
    assert nearby_folders(here) == [here, *here.parents][:4] and nearby_folders(None) == []
    assert find_package("near_pkg", here) == tmp_path / "a" / "b" / "c" / "group" / "near_pkg"
    with pytest.raises(URDFError, match="far_pkg"):
        find_package("far_pkg", here)


@pytest.mark.parametrize("name", ["", "..", "a/b"])
def test_not_a_package_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(URDFError, match="is not a ROS package name"):
        find_package(name, tmp_path)


def test_missing_package_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(URDFError, match=rf"no ROS package folder named 'ghost'.*\({tmp_path / 'given'}\).*around "
                                        rf"{tmp_path}.*set the Package Folder"):
        find_package("ghost", tmp_path, [tmp_path / "given"])
