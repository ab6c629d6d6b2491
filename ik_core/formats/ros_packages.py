# SPDX-License-Identifier: GPL-3.0-or-later
"""ROS packages without ROS: the folders ``package://pkg/...`` and xacro's ``$(find pkg)`` point to.

Three places are searched, in this order: the folders the user gives (the import's Package
Folder), the folders of ROS's ``ROS_PACKAGE_PATH`` (when set), and the folders around the robot
description itself (its folder and their parents: a description inside its package, beside its
sibling packages in a workspace, or unpacked with them one folder down).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import URDFError

# Folders around a description searched one folder down too (its own and three parents): listing
# a folder costs more than looking one name up, and a parent further up may be a home folder.
NEARBY_LEVELS = 4


def package_roots(package_dirs: Sequence[str | os.PathLike] = ()) -> list[Path]:
    """The folders given, then those of ``ROS_PACKAGE_PATH``: where packages are looked for first."""
    roots = [Path(d) for d in package_dirs if os.fspath(d)]
    return roots + [Path(d) for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if d]


def nearby_folders(description_dir: str | os.PathLike | None) -> list[Path]:
    """A description's folder and its parents up to :data:`NEARBY_LEVELS` (none for a description given as text)."""
    if not description_dir:
        return []
    base = Path(description_dir)
    return [base, *base.parents][:NEARBY_LEVELS]


def find_package(
    name: str, description_dir: str | os.PathLike | None, package_dirs: Sequence[str | os.PathLike] = ()
) -> Path:
    """The folder of ROS package ``name``, as xacro's ``$(find name)`` gives it.

    Looked for, first found wins: under each folder of :func:`package_roots` (``<dir>/name``, or
    the folder itself when it is named ``name``); among the description's folder and all its
    parents (one named ``name``, or one holding a ``name`` folder: the description's own package
    and its siblings in a workspace); one folder down from the :func:`nearby_folders`
    (``src/<group>/name``).

    Args:
        name: The package name.
        description_dir: Folder of the file being expanded, or None.
        package_dirs: Folders given by the user (the Package Folder), searched first.

    Returns:
        The package's folder.

    Raises:
        URDFError: No such folder anywhere; the message says where it looked and how to point to it.
    """
    if not name or name in (".", "..") or "/" in name or os.sep in name:
        raise URDFError(f"$(find {name}): {name!r} is not a ROS package name")
    roots = package_roots(package_dirs)
    base = Path(description_dir) if description_dir else None
    around = [base, *base.parents] if base is not None else []

    def candidates():
        for root in roots:
            yield root / name
            if root.name == name:
                yield root
        for folder in around:
            if folder.name == name:
                yield folder
            yield folder / name
        for folder in nearby_folders(description_dir):
            if folder.is_dir():
                yield from sorted(folder.glob(f"*/{name}"))

    found = next((c for c in candidates() if c.is_dir()), None)
    if found is not None:
        return found
    given = ", ".join(str(r) for r in roots) or "none"
    near = f"the folders around {base}" if base is not None else "no folder around the description (given as text)"
    raise URDFError(
        f"$(find {name}): no ROS package folder named {name!r}; looked in the Package Folder and ROS_PACKAGE_PATH "
        f"({given}) and {near}: set the Package Folder to the folder holding {name!r} (or to {name!r} itself)"
    )
