# SPDX-License-Identifier: GPL-3.0-or-later
"""Visual geometry of URDF links (boxes, cylinders, spheres, meshes), their colours, and mesh path resolution."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from ..errors import URDFError
from ..model.euler import make_transform, rpy_to_matrix
from .ros_packages import nearby_folders, package_roots
from .urdf import read_urdf_xml

KINDS = ("box", "cylinder", "sphere", "mesh")


@dataclass(frozen=True)
class Visual:
    """One ``<visual>`` of a link.

    Attributes:
        link: Name of the link it belongs to.
        kind: "box", "cylinder", "sphere" or "mesh".
        origin: (4, 4) pose of the geometry in the link frame.
        size: Box (x, y, z) [m]; cylinder (radius, length) [m] along local Z; sphere (radius,).
        filename: Mesh file name as written in the URDF (``package://...`` or a path).
        scale: (3,) mesh scale.
        material: Name of the visual's ``<material>`` ("" when it has none).
        color: RGBA in [0, 1] of that material (written inline, or on the robot's top-level
            material of that name), or None when the URDF gives no colour.
    """

    link: str
    kind: str
    origin: np.ndarray
    size: tuple[float, ...] = ()
    filename: str = ""
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    material: str = ""
    color: tuple[float, float, float, float] | None = None


def _floats(text: str | None, n: int, where: str, default: tuple[float, ...] | None = None) -> tuple[float, ...]:
    if text is None:
        if default is None:
            raise URDFError(f"{where}: missing value")
        return default
    try:
        values = tuple(float(v) for v in text.split())
    except ValueError:
        raise URDFError(f"{where}: {text!r} is not {n} number(s)") from None
    if len(values) != n or not all(np.isfinite(values)):
        raise URDFError(f"{where}: {text!r} needs {n} finite number(s)")
    return values


def _rgba(material: ET.Element | None, where: str) -> tuple[float, float, float, float] | None:
    color = material.find("color") if material is not None else None
    if color is None:
        return None
    rgba = _floats(color.get("rgba"), 4, f"{where} <color rgba>")
    return tuple(float(min(max(c, 0.0), 1.0)) for c in rgba)  # type: ignore[return-value]


def parse_visuals(source: str | os.PathLike) -> list[Visual]:
    """Every link visual of a URDF file (or XML string), with its material colour.

    Args:
        source: A URDF file path, or the XML text itself.

    Returns:
        The visuals in file order.

    Raises:
        URDFError: Unreadable XML, a xacro file, or a malformed visual or material, naming
            the link and element.
    """
    prefix, root = read_urdf_xml(source)
    try:
        return _visuals(root)
    except URDFError as err:
        raise URDFError(f"{prefix}{err}") from None


def _visuals(root: ET.Element) -> list[Visual]:
    named = {m.get("name"): _rgba(m, f"material {m.get('name')!r}") for m in root.findall("material")}
    visuals = []
    for link in root.findall("link"):
        name = link.get("name", "?")
        for k, vis in enumerate(link.findall("visual")):
            where = f"link {name!r} visual {k}"
            origin_el = vis.find("origin")
            attrs = origin_el.attrib if origin_el is not None else {}
            xyz = _floats(attrs.get("xyz"), 3, f"{where} <origin xyz>", (0.0, 0.0, 0.0))
            rpy = _floats(attrs.get("rpy"), 3, f"{where} <origin rpy>", (0.0, 0.0, 0.0))
            origin = make_transform(rpy_to_matrix(np.array(rpy)), np.array(xyz))
            material_el = vis.find("material")
            material = material_el.get("name", "") if material_el is not None else ""
            color = _rgba(material_el, f"{where} <material>")
            if color is None:
                color = named.get(material)
            paint = {"material": material, "color": color}
            geom = vis.find("geometry")
            shape = next(iter(geom), None) if geom is not None else None
            if shape is None or shape.tag not in KINDS:
                tag = None if shape is None else shape.tag
                raise URDFError(f"{where}: <geometry> needs one of {', '.join(KINDS)}, got {tag!r}")
            if shape.tag == "box":
                size = _floats(shape.get("size"), 3, f"{where} <box size>")
                visuals.append(Visual(name, "box", origin, size, **paint))
            elif shape.tag == "cylinder":
                r = _floats(shape.get("radius"), 1, f"{where} <cylinder radius>")
                length = _floats(shape.get("length"), 1, f"{where} <cylinder length>")
                visuals.append(Visual(name, "cylinder", origin, r + length, **paint))
            elif shape.tag == "sphere":
                radius = _floats(shape.get("radius"), 1, f"{where} <sphere>")
                visuals.append(Visual(name, "sphere", origin, radius, **paint))
            else:
                filename = shape.get("filename")
                if not filename:
                    raise URDFError(f"{where}: <mesh> needs a filename")
                scale = _floats(shape.get("scale"), 3, f"{where} <mesh scale>", (1.0, 1.0, 1.0))
                visuals.append(Visual(name, "mesh", origin, (), filename, scale, **paint))  # type: ignore[arg-type]
    return visuals


# Gazebo's environment variables listing the folders its model:// URIs resolve in (Gazebo Sim, its
# Ignition name, Gazebo classic).
GAZEBO_PATHS = ("GZ_SIM_RESOURCE_PATH", "IGN_GAZEBO_RESOURCE_PATH", "GAZEBO_MODEL_PATH")


def resolve_mesh(
    filename: str, urdf_dir: str | os.PathLike | None, package_dirs: list[str] | tuple = ()
) -> Path | None:
    """The file a URDF mesh reference points to, or None when it cannot be found.

    ``package://pkg/rest`` is looked up as ``<dir>/pkg/rest`` and ``<dir>/rest`` under each of
    ``package_dirs``, then the folders of ROS's ``ROS_PACKAGE_PATH`` (when set), then the URDF's
    own folder and its parents, each also one folder down (``<dir>/*/pkg/rest``: a description
    unpacked with its meshes beside it, such as ``robots/meshes/ur_description``). Gazebo's
    ``model://model/rest`` is looked up the same way, with the folders of Gazebo's resource
    paths (``GZ_SIM_RESOURCE_PATH``, ``IGN_GAZEBO_RESOURCE_PATH``, ``GAZEBO_MODEL_PATH``) after
    the package folders. ``file://`` URIs (percent-encoded, as ``file:///my%20robot/arm.stl``)
    and plain paths are taken relative to the URDF's folder.

    Args:
        filename: The mesh reference as written in the URDF.
        urdf_dir: Folder of the URDF file, or None for a URDF given as text.
        package_dirs: Folders to resolve ``package://`` references against.

    Returns:
        The existing file, or None.
    """
    base = Path(urdf_dir) if urdf_dir else None
    scheme = next((s for s in ("package://", "model://") if filename.startswith(s)), None)
    if scheme is None:
        path = Path(unquote(filename[len("file://") :]) if filename.startswith("file://") else filename)
        path = path if path.is_absolute() or base is None else base / path
        return path if path.is_file() else None
    pkg, _, sub = filename[len(scheme) :].partition("/")
    roots = package_roots(package_dirs)
    if scheme == "model://":
        roots += [Path(d) for name in GAZEBO_PATHS for d in os.environ.get(name, "").split(os.pathsep) if d]
    nearby = nearby_folders(base)

    def candidates():
        for root in roots + nearby:
            yield root / pkg / sub
            yield root / sub
        # Only when every direct place misses: listing folders (a parent may be a home folder) costs more.
        for root in nearby:
            if pkg and root.is_dir():
                yield from (found / sub for found in sorted(root.glob(f"*/{pkg}")))

    return next((c for c in candidates() if c.is_file()), None)
