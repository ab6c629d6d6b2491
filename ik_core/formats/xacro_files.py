# SPDX-License-Identifier: GPL-3.0-or-later
"""Xacro robot descriptions (``.urdf.xacro``) expanded into URDF by ROS's own ``xacro`` package.

The ``xacro`` package is pure Python and bundled with the add-on as a wheel (see
:mod:`ik_core.bundled`); it is imported only when a xacro file is expanded, so the rest of
``ik_core`` needs nothing beyond numpy. ``$(find pkg)`` is resolved without ROS, as
``package://`` mesh paths are (:func:`~.ros_packages.find_package`). xacro needs PyYAML for its
substitutions (``$(arg)``, ``$(find)``) and ``load_yaml``: bundled too, built without its C part.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import threading
import xml.parsers.expat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..bundled import import_bundled
from ..errors import InvalidInputError, URDFError
from .ros_packages import find_package

XACRO_SUFFIX = ".xacro"
# A xacro argument name as xacro's <xacro:arg name="..."> takes it.
_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# xacro keeps its state (file stack, arguments, the $(find) function) in module globals: one expansion at a time.
_LOCK = threading.Lock()


@dataclass(frozen=True)
class XacroExpansion:
    """A xacro file expanded into URDF: what :func:`~.urdf.parse_urdf` and the visuals reader take like a path.

    Attributes:
        path: The xacro file (absolute); ``os.fspath`` gives it, so a model read from the
            expansion records the file it came from.
        text: The URDF XML the file expands to.
        args: The xacro arguments it was expanded with (``name -> value``).
        notes: What xacro warned about while expanding (deprecated syntax, includes matching no file).
    """

    path: str
    text: str
    args: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __fspath__(self) -> str:
        return self.path


def is_xacro_path(source: object) -> bool:
    """Whether ``source`` names a xacro file (``.xacro``, ``.urdf.xacro``), whatever the case."""
    if isinstance(source, XacroExpansion):
        return True
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return False  # XML text, not a path
    try:
        return os.fsdecode(os.fspath(source)).lower().endswith(XACRO_SUFFIX)  # type: ignore[arg-type]
    except TypeError:
        return False


def parse_xacro_args(items: str | Iterable[str]) -> dict[str, str]:
    """Xacro arguments as ROS's ``xacro`` command line takes them: ``name:=value``.

    Args:
        items: One string of arguments separated by spaces (shell quoting for values with
            spaces: ``prefix:=left_ "name:=my robot"``), or one ``name:=value`` per item.

    Returns:
        ``name -> value``, in the order given (values are text, as xacro reads them).

    Raises:
        InvalidInputError: An item without ``:=``, a name that is not an identifier, a name
            given twice, or unbalanced quotes; the message names the item.
    """
    if isinstance(items, str):
        try:
            items = shlex.split(items)
        except ValueError as err:
            raise InvalidInputError(f"xacro arguments {items!r}: {err} (quote a value with spaces as "
                                    "\"name:=a value\")") from None
    args: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep:
            raise InvalidInputError(f"xacro argument {item!r} must look like name:=value (for example "
                                    "prefix:=left_)")
        name = name.strip()
        if not _ARG_NAME.fullmatch(name):
            raise InvalidInputError(f"xacro argument {item!r}: {name!r} is not an argument name (letters, "
                                    "digits and '_', not starting with a digit)")
        if name in args:
            raise InvalidInputError(f"xacro argument {name!r} is given twice ({args[name]!r} and {value!r})")
        args[name] = value
    return args


def expand_xacro(
    path: str | os.PathLike,
    args: Mapping[str, str] | None = None,
    package_dirs: Sequence[str | os.PathLike] = (),
) -> XacroExpansion:
    """Expand a xacro file into URDF text with the ``xacro`` package.

    Args:
        path: The xacro file. Includes and ``$(dirname)`` are relative to the file including them.
        args: Values of the file's ``<xacro:arg>`` arguments (``name -> value``); the others
            keep their defaults.
        package_dirs: Folders ``$(find pkg)`` looks in first (the Package Folder), before
            ``ROS_PACKAGE_PATH`` and the folders around ``path`` (see
            :func:`~.ros_packages.find_package`).

    Returns:
        The expansion, with xacro's warnings as notes.

    Raises:
        URDFError: A missing file, or any error of the expansion (invalid XML with its line, an
            undefined property or macro, a bad expression, a missing include, an argument
            without a value, a package ``$(find)`` cannot find), naming the file it happened in,
            the files including it and the macro being expanded.
        DependencyError: The ``xacro`` package is neither installed nor bundled.
    """
    path = os.path.abspath(os.fsdecode(os.fspath(path)))
    if not os.path.isfile(path):
        raise URDFError(f"xacro file {path!r} not found")
    xacro = import_bundled("xacro")
    substitution = import_bundled("xacro.substitution_args")
    values = {str(k): str(v) for k, v in (args or {}).items()}
    folder = os.path.dirname(path)

    def find(package: str) -> str:
        return str(find_package(package, folder, package_dirs))

    warnings = io.StringIO()
    with _LOCK, _find_hook(substitution, find), contextlib.redirect_stderr(warnings):
        try:
            doc = xacro.process_file(path, mappings=dict(values), verbosity=0)  # it adds the defaults
            text = doc.toprettyxml(indent="  ")  # as `xacro file > file.urdf` writes it: same line numbers
        except xml.parsers.expat.ExpatError as err:
            reason = xml.parsers.expat.ErrorString(err.code) if err.code else str(err)
            raise URDFError(f"{_where(xacro, path)}: XML parse error at line {err.lineno}, column "
                            f"{err.offset + 1}: {reason}") from None
        except Exception as err:  # xacro raises XacroException, and lets NameError, TypeError, ... through
            raise URDFError(f"{_where(xacro, path)}: {_reason(err)}") from None
        finally:
            xacro.all_includes.clear()  # grows with every include of every expansion otherwise
    notes = tuple(" ".join(line.split()) for line in warnings.getvalue().splitlines() if line.strip())
    return XacroExpansion(path, text, values, notes)


def description_source(
    path: str | os.PathLike,
    args: Mapping[str, str] | None = None,
    package_dirs: Sequence[str | os.PathLike] = (),
) -> str | XacroExpansion:
    """What the URDF readers take for a robot description file: the path itself, or a xacro file's expansion.

    Args:
        path: A URDF or xacro file.
        args: Xacro arguments (a URDF file takes none).
        package_dirs: Folders ``$(find pkg)`` looks in first.

    Returns:
        ``path`` as a string for a URDF, the :class:`XacroExpansion` for a xacro file.

    Raises:
        URDFError: Xacro arguments for a file that is not xacro, or an error of the expansion.
    """
    path = os.fsdecode(os.fspath(path))
    if is_xacro_path(path):
        return expand_xacro(path, args, package_dirs)
    if args:
        raise URDFError(f"{path}: xacro arguments ({', '.join(args)}) are only for .xacro files; this is a URDF")
    return path


@contextlib.contextmanager
def _find_hook(substitution, find):
    """Route xacro's ``$(find pkg)`` to ``find`` while expanding.

    xacro resolves packages with ROS 2's ament index in ``substitution_args._eval_find``, the
    function its ``$(find)`` substitution calls: swapped for ours, and back afterwards.
    """
    saved = substitution._eval_find
    substitution._eval_find = find
    try:
        yield
    finally:
        substitution._eval_find = saved


def _where(xacro, path: str) -> str:
    """The file an error happened in, the files including it and the macro being expanded, from xacro's stacks."""
    files = [f for f in (xacro.filestack or []) if f] or [path]
    where = f"{files[-1]} (xacro)"
    if len(files) > 1:
        where += ", included from " + " <- ".join(reversed(files[:-1]))
    macros = [m.body.getAttribute("name") for m in (xacro.macrostack or []) if m.body is not None]
    if macros:
        where += ", in macro " + " <- ".join(repr(m) for m in reversed(macros))
    return where


def _reason(err: BaseException) -> str:
    """An expansion error's message without Python's class names."""
    inner = getattr(err, "exc", None)
    if isinstance(inner, URDFError):  # raised by our $(find), wrapped by xacro
        return str(inner)
    text = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", str(err))
    if not text.strip():
        text = type(err).__name__
    elif not isinstance(err, xml.parsers.expat.ExpatError) and type(err).__name__ != "XacroException":
        text = f"{type(err).__name__}: {text}"
    return " ".join(text.split())
