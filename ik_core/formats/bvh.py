# SPDX-License-Identifier: GPL-3.0-or-later
"""A small pure-Python BVH reader: hierarchy, offsets, channels, motion and batched forward kinematics."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, UnknownNameError
from ..model.skeleton import Effector, Joint, Skeleton

__all__ = ["BVH", "BVHError", "BVHJoint", "Y_UP_TO_Z_UP", "parse_bvh", "read_bvh"]

# BVH files are y-up; Blender's importer with axis_up='Y', axis_forward='-Z' maps (x, y, z) to
# (x, -z, y), a +90 degree turn about x. Left-multiply world transforms by this to get z-up.
Y_UP_TO_Z_UP = np.array(
    [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
)
Y_UP_TO_Z_UP.setflags(write=False)

_CHANNELS = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")


class BVHError(InvalidInputError):
    """A BVH file cannot be read or is malformed; the message names the file, the line and what was expected."""


@dataclass(frozen=True, eq=False)
class BVHJoint:
    """One joint of a BVH hierarchy.

    Attributes:
        name: Joint name as written in the file.
        parent: Index of the parent joint, -1 for the root.
        offset: (3,) rest offset from the parent joint [file units].
        channels: Channel names in file order, e.g. ('Zrotation', 'Yrotation', 'Xrotation').
        end_site: (3,) offset of the joint's End Site, or None when it has none.
    """

    name: str
    parent: int
    offset: np.ndarray
    channels: tuple[str, ...]
    end_site: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class BVH:
    """A parsed BVH take.

    Attributes:
        joints: Joints in file (topological) order.
        frame_time: Seconds per frame.
        motion: (frames, channels) channel values (positions in file units, angles in degrees).
    """

    joints: tuple[BVHJoint, ...]
    frame_time: float
    motion: np.ndarray

    @property
    def names(self) -> tuple[str, ...]:
        """Joint names in order."""
        return tuple(j.name for j in self.joints)

    @property
    def parents(self) -> np.ndarray:
        """(J,) parent index of every joint, -1 for the root."""
        return np.array([j.parent for j in self.joints], dtype=int)

    @property
    def frame_count(self) -> int:
        """Number of motion frames."""
        return int(self.motion.shape[0])

    @property
    def joint_count(self) -> int:
        """Number of joints (End Sites not counted)."""
        return len(self.joints)

    def bones(self) -> list[tuple[str, str | None]]:
        """(name, parent name) pairs, the input of :func:`ik_core.humanoid.detect_roles`."""
        return [(j.name, None if j.parent < 0 else self.joints[j.parent].name) for j in self.joints]

    def index(self, name: str) -> int:
        """Index of a joint by name.

        Raises:
            UnknownNameError: If no joint has that name.
        """
        for i, j in enumerate(self.joints):
            if j.name == name:
                return i
        raise UnknownNameError("BVH joint", name, self.names)

    def _frames(self, frames: slice | Sequence[int] | np.ndarray | None) -> np.ndarray:
        motion = self.motion if frames is None else self.motion[frames]
        return np.atleast_2d(motion)

    def local_transforms(self, frames: slice | Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """Joint transforms relative to their parents.

        Rotation channels compose in file order (``Zrotation Yrotation Xrotation`` gives
        ``Rz @ Ry @ Rx``); position channels replace the matching offset component, as in
        Blender's importer.

        Args:
            frames: Frame selection (slice, indices); all frames by default.

        Returns:
            (F, J, 4, 4) local transforms [file units].
        """
        motion = self._frames(frames)
        n = motion.shape[0]
        out = np.broadcast_to(np.eye(4), (n, len(self.joints), 4, 4)).copy()
        col = 0
        for i, joint in enumerate(self.joints):
            out[:, i, :3, 3] = joint.offset
            R = None
            for ch in joint.channels:
                values = motion[:, col]
                col += 1
                axis = "XYZ".index(ch[0])
                if ch.endswith("position"):
                    out[:, i, axis, 3] = values
                    continue
                Ra = _axis_rotations(axis, np.radians(values))
                R = Ra if R is None else R @ Ra
            if R is not None:
                out[:, i, :3, :3] = R
        return out

    def world_transforms(
        self,
        frames: slice | Sequence[int] | np.ndarray | None = None,
        z_up: bool = False,
        scale: float = 1.0,
    ) -> np.ndarray:
        """World transforms of every joint frame.

        Args:
            frames: Frame selection (slice, indices); all frames by default.
            z_up: Convert from BVH's y-up to z-up (see :data:`Y_UP_TO_Z_UP`).
            scale: Multiplies translations (e.g. 0.01 for a file in centimetres).

        Returns:
            (F, J, 4, 4) world transforms; translations in file units times ``scale``.
        """
        local = self.local_transforms(frames)
        local[..., :3, 3] *= scale
        world = np.empty_like(local)
        for i, joint in enumerate(self.joints):
            p = joint.parent
            world[:, i] = local[:, i] if p < 0 else world[:, p] @ local[:, i]
        return Y_UP_TO_Z_UP @ world if z_up else world

    def world_positions(
        self,
        frames: slice | Sequence[int] | np.ndarray | None = None,
        z_up: bool = False,
        scale: float = 1.0,
    ) -> np.ndarray:
        """(F, J, 3) world joint positions; see :meth:`world_transforms`."""
        return self.world_transforms(frames, z_up, scale)[..., :3, 3]

    def rest_positions(self, z_up: bool = False, scale: float = 1.0) -> np.ndarray:
        """(J, 3) joint positions with every channel at zero except the offsets."""
        pos = np.zeros((len(self.joints), 3))
        for i, joint in enumerate(self.joints):
            pos[i] = joint.offset * scale + (pos[joint.parent] if joint.parent >= 0 else 0.0)
        return pos @ Y_UP_TO_Z_UP[:3, :3].T if z_up else pos

    def to_skeleton(self) -> Skeleton:
        """An :class:`ik_core.model.skeleton.Skeleton` of ball joints at the BVH offsets.

        Root translation channels are not represented (the root sits at its offset); End
        Sites become effectors named ``'<joint>_end'``.

        Returns:
            The skeleton; ``q`` holds one rotation vector per joint.
        """
        joints, effectors = [], []
        for i, j in enumerate(self.joints):
            origin = np.eye(4)
            origin[:3, 3] = j.offset
            joints.append(Joint(j.name, "ball", j.parent, origin))
            if j.end_site is not None:
                off = np.eye(4)
                off[:3, 3] = j.end_site
                effectors.append(Effector(f"{j.name}_end", i, off))
        return Skeleton(joints, effectors, name="bvh")


def _axis_rotations(axis: int, angle: np.ndarray) -> np.ndarray:
    """(F, 3, 3) rotations about coordinate axis ``axis`` (0, 1, 2) by ``angle`` (F,) [rad]."""
    c, s = np.cos(angle), np.sin(angle)
    R = np.zeros((angle.shape[0], 3, 3))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R[:, axis, axis] = 1.0
    R[:, i, i] = c
    R[:, j, j] = c
    R[:, i, j] = -s
    R[:, j, i] = s
    return R


class _Tokens:
    """Whitespace tokens with their line numbers, for error messages."""

    def __init__(self, text: str) -> None:
        lines = text.splitlines()
        self.line_count = len(lines)
        self.items = [(tok, n + 1) for n, line in enumerate(lines) for tok in line.split()]
        self.pos = 0

    def next(self, expected: str = "a token") -> tuple[str, int]:
        if self.pos >= len(self.items):
            raise BVHError(f"line {self.line_count}: unexpected end of file; expected {expected}")
        self.pos += 1
        return self.items[self.pos - 1]

    def peek(self) -> str | None:
        return self.items[self.pos][0] if self.pos < len(self.items) else None

    def expect(self, word: str) -> int:
        tok, line = self.next(repr(word))
        if tok != word:
            raise BVHError(f"line {line}: expected {word!r}, found {tok!r}")
        return line

    def number(self, what: str) -> float:
        """The next token as a finite number (NaN and infinity are refused by name)."""
        tok, line = self.next(what)
        try:
            value = float(tok)
        except ValueError:
            raise BVHError(f"line {line}: expected {what} (a number), found {tok!r}") from None
        if not math.isfinite(value):
            raise BVHError(f"line {line}: expected {what} (a finite number), found {tok!r}")
        return value

    def count(self, what: str, most: int | None = None) -> tuple[int, int]:
        """The next token as a whole number >= 0 (and <= ``most`` when given), and its line."""
        tok, line = self.next(what)
        try:
            value: float = int(tok)  # exact, however many digits
        except ValueError:
            try:
                value = float(tok)  # '2.0' and '1e3' are whole numbers too
            except ValueError:
                raise BVHError(f"line {line}: expected {what} (a whole number), found {tok!r}") from None
        # NaN and infinity fail these tests by name; int() is only reached for finite values.
        if isinstance(value, float) and not math.isfinite(value) or value < 0 or value != int(value):
            raise BVHError(f"line {line}: {what} must be a whole number >= 0, found {tok!r}")
        if most is not None and value > most:
            raise BVHError(f"line {line}: {what} must be at most {most}, found {tok!r}")
        return int(value), line


def _open_joint(toks: _Tokens, name: str, parent: int, joints: list[BVHJoint]) -> None:
    """Read a joint's ``{``, OFFSET and CHANNELS (its children and End Site follow) and append it."""
    toks.expect("{")
    toks.expect("OFFSET")
    offset = np.array([toks.number("an OFFSET value") for _ in range(3)])
    channels: tuple[str, ...] = ()
    if toks.peek() == "CHANNELS":
        toks.next()
        count, _ = toks.count("the channel count", len(_CHANNELS))
        names = []
        for _ in range(count):
            ch, ch_line = toks.next("a channel name")
            if ch not in _CHANNELS:
                raise BVHError(
                    f"line {ch_line}: unknown channel {ch!r}; valid channels: {', '.join(_CHANNELS)}"
                )
            names.append(ch)
        channels = tuple(names)
    joints.append(BVHJoint(name, parent, offset, channels))


def _parse_hierarchy(toks: _Tokens, root: str) -> list[BVHJoint]:
    """The joints below ``ROOT <root>``, in file order.

    Read with an explicit stack of open joints rather than by recursion, so a file nesting
    thousands of joints is read like any other instead of exhausting Python's call stack.
    """
    joints: list[BVHJoint] = []
    _open_joint(toks, root, -1, joints)
    open_joints = [0]
    end_sites: dict[int, np.ndarray] = {}
    while open_joints:
        current = open_joints[-1]
        tok, line = toks.next(f"JOINT, End or '}}' in joint {joints[current].name!r}")
        if tok == "}":
            open_joints.pop()
        elif tok == "JOINT":
            child, _ = toks.next("a joint name")
            _open_joint(toks, child, current, joints)
            open_joints.append(len(joints) - 1)
        elif tok == "End":
            toks.expect("Site")
            toks.expect("{")
            toks.expect("OFFSET")
            end_sites[current] = np.array([toks.number("an End Site OFFSET value") for _ in range(3)])
            toks.expect("}")
        else:
            raise BVHError(
                f"line {line}: expected JOINT, End or '}}' in joint {joints[current].name!r}, found {tok!r}"
            )
    for i, site in end_sites.items():
        j = joints[i]
        joints[i] = BVHJoint(j.name, j.parent, j.offset, j.channels, site)
    return joints


def parse_bvh(text: str) -> BVH:
    """Parse the text of a BVH file.

    Work and memory grow with the length of ``text`` only: counts the file declares are
    checked against what it holds before anything is allocated for them.

    Args:
        text: Whole file contents.

    Returns:
        The parsed take.

    Raises:
        BVHError: On any syntax error, naming the line and what was expected: a missing
            keyword, a value that is not a finite number, a channel or frame count that is
            not a whole number in range, motion rows that do not hold one value per channel.
    """
    toks = _Tokens(text)
    toks.expect("HIERARCHY")
    toks.expect("ROOT")
    name, _ = toks.next("the root name")
    joints = _parse_hierarchy(toks, name)
    toks.expect("MOTION")
    toks.expect("Frames:")
    frames, frames_line = toks.count("the frame count")
    # Each frame is a line of the file: checked before the count is used for anything.
    if frames > toks.line_count:
        raise BVHError(f"line {frames_line}: {frames} frames declared, but the whole file has {toks.line_count} "
                       "lines (one per frame)")
    toks.expect("Frame")
    toks.expect("Time:")
    frame_time = toks.number("the frame time")
    if not frame_time > 0:
        raise BVHError(f"line {toks.items[toks.pos - 1][1]}: frame time must be > 0 seconds, got {frame_time}")
    width = sum(len(j.channels) for j in joints)
    if frames and not width:
        raise BVHError(f"line {frames_line}: {frames} frames declared, but no joint has CHANNELS to animate")
    values = toks.items[toks.pos :]
    if len(values) != frames * width:
        raise BVHError(
            f"line {frames_line}: MOTION holds {len(values)} values; expected {frames} frames x {width} channels "
            f"= {frames * width}"
        )
    motion = np.empty(frames * width)
    for k, (tok, line) in enumerate(values):
        try:
            motion[k] = float(tok)
        except ValueError:
            raise BVHError(f"line {line}: expected a MOTION value (a number), found {tok!r}") from None
        if not math.isfinite(motion[k]):
            raise BVHError(f"line {line}: expected a MOTION value (a finite number), found {tok!r}")
    names = [j.name for j in joints]
    if len(set(names)) != len(names):
        dupes = sorted(n for n, k in Counter(names).items() if k > 1)
        raise BVHError(f"joint names must be unique; repeated: {', '.join(dupes)}")
    return BVH(tuple(joints), float(frame_time), motion.reshape(frames, width))


def read_bvh(path: str | os.PathLike[str]) -> BVH:
    """Read a BVH file from disk.

    Bytes that are not UTF-8 are replaced (joint names are the only text a BVH holds).

    Args:
        path: File path.

    Returns:
        The parsed take.

    Raises:
        BVHError: If the file cannot be read or is malformed (see :func:`parse_bvh`); the
            message starts with the path.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        raise BVHError(f"cannot read BVH file {os.fspath(path)!r}: {exc.strerror or exc}") from None
    try:
        return parse_bvh(text)
    except BVHError as exc:
        raise BVHError(f"{os.fspath(path)}: {exc}") from None
