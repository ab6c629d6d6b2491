# SPDX-License-Identifier: GPL-3.0-or-later
"""ROS 2 bags (MCAP) written for tests with mcap-ros2-support's own writer, and by hand with compressed chunks.

Compressed chunks are written without the compiled ``zstandard`` and ``lz4`` packages: a zstd
frame may hold its data in raw (stored) blocks and an lz4 frame in uncompressed blocks, so both
are built here byte by byte, valid for any reader, and handed to mcap's writer in place of the
packages it would call.
"""

from __future__ import annotations

import contextlib
import struct
import types
from collections.abc import Iterable
from pathlib import Path

from ik_core.bundled import import_bundled
from ik_core.trajectory.mcap_files import SCHEMAS

NS = 1_000_000_000


def stamp(ns: int) -> dict:
    return {"sec": ns // NS, "nanosec": ns % NS}


def joint_state(ns: int, names: list[str], positions: list[float]) -> dict:
    return {"header": {"stamp": stamp(ns), "frame_id": ""}, "name": names, "position": positions,
            "velocity": [], "effort": []}


def joint_trajectory(names: list[str], points: list[tuple[float, list[float]]], velocities=None) -> dict:
    return {"header": {"stamp": stamp(0), "frame_id": ""}, "joint_names": names, "points": [
        {"positions": q, "velocities": velocities[k] if velocities else [], "accelerations": [], "effort": [],
         "time_from_start": stamp(round(t * NS))} for k, (t, q) in enumerate(points)]}


def write_bag(path: Path, messages: Iterable[tuple[str, str, dict, int]], compression: str = "none") -> Path:
    """Write ``(topic, message type, message, log time [ns])`` records into an MCAP file as ROS 2 bags hold them.

    ``compression`` is "none", "zstd" or "lz4" (chunks compressed by hand, see the module docstring).
    """
    writer_module, mcap_writer = import_bundled("mcap_ros2.writer"), import_bundled("mcap.writer")
    kind = {"none": "NONE", "zstd": "ZSTD", "lz4": "LZ4"}[compression]
    with _hand_compression(mcap_writer), path.open("wb") as stream:
        writer = writer_module.Writer(stream, compression=getattr(mcap_writer.CompressionType, kind))
        schemas = {}
        for topic, kind_name, message, log_time in messages:
            if kind_name not in schemas:
                schemas[kind_name] = writer.register_msgdef(kind_name, SCHEMAS[kind_name])
            writer.write_message(topic, schemas[kind_name], message, log_time=log_time)
        writer.finish()
    return path


def zstd_stored(data: bytes) -> bytes:
    """A Zstandard frame holding ``data`` in raw blocks (RFC 8878: single segment, 8-byte content size)."""
    frame = bytearray(b"\x28\xb5\x2f\xfd\xe0") + struct.pack("<Q", len(data))
    blocks = [data[i:i + 65536] for i in range(0, len(data), 65536)] or [b""]
    for k, block in enumerate(blocks):
        header = (k == len(blocks) - 1) | (0 << 1) | (len(block) << 3)  # last flag, type 0 (raw), size
        frame += header.to_bytes(3, "little") + block
    return bytes(frame)


def lz4_stored(data: bytes) -> bytes:
    """An LZ4 frame holding ``data`` in uncompressed blocks (independent blocks, 64 KB maximum)."""
    descriptor = bytes([0x60, 0x40])
    frame = bytearray(b"\x04\x22\x4d\x18") + descriptor + bytes([(_xxh32(descriptor) >> 8) & 0xFF])
    for i in range(0, len(data), 65536):
        block = data[i:i + 65536]
        frame += struct.pack("<I", len(block) | 0x80000000) + block
    return bytes(frame + b"\x00\x00\x00\x00")


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of a short input (under 16 bytes), as the LZ4 frame header checksum uses it."""
    p1, p2, p3, p4, p5, m = 2654435761, 2246822519, 3266489917, 668265263, 374761393, 0xFFFFFFFF
    h = (seed + p5 + len(data)) & m
    i = 0
    while i + 4 <= len(data):
        h = (h + int.from_bytes(data[i:i + 4], "little") * p3) & m
        h = (((h << 17) | (h >> 15)) & m) * p4 & m
        i += 4
    for byte in data[i:]:
        h = (h + byte * p5) & m
        h = (((h << 11) | (h >> 21)) & m) * p1 & m
    h ^= h >> 15
    h = h * p2 & m
    h ^= h >> 13
    h = h * p3 & m
    return h ^ (h >> 16)


@contextlib.contextmanager
def _hand_compression(mcap_writer):
    """mcap's writer compressing with the hand-made frames above instead of the compiled packages."""
    saved = mcap_writer.lz4, mcap_writer.zstandard
    mcap_writer.lz4 = types.SimpleNamespace(frame=types.SimpleNamespace(compress=lz4_stored))
    mcap_writer.zstandard = types.SimpleNamespace(compress=zstd_stored)
    try:
        yield
    finally:
        mcap_writer.lz4, mcap_writer.zstandard = saved
