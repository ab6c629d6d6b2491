# SPDX-License-Identifier: GPL-3.0-or-later
"""Fuzzing the BVH reader: any input reads or raises BVHError naming the file, with bounded work."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from data_files import data_file
from fuzz_inputs import FUZZ, file_inputs, read_or_refuse
from hypothesis import given
from hypothesis import strategies as st

from ik_core.formats.bvh import BVH, BVHError, read_bvh

SEED = """HIERARCHY
ROOT Hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation
  JOINT Spine
  {
    OFFSET 0 1 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 0.5 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.04
0 0 0 0 0 0 0 0 0
1 2 3 90 0 0 0 0 90
"""
# The header of a take with one rotating root, for files built around a given MOTION section.
ONE_JOINT = "HIERARCHY\nROOT a\n{\n  OFFSET 0 0 0\n  CHANNELS 1 Xrotation\n}\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bvh_fuzz")


def assert_consistent(bvh: BVH) -> None:
    """What a successful read promises: finite values, one column per channel, parents before children."""
    width = sum(len(j.channels) for j in bvh.joints)
    assert bvh.motion.shape == (bvh.frame_count, width)
    assert np.all(np.isfinite(bvh.motion)) and bvh.frame_time > 0 and np.isfinite(bvh.frame_time)
    assert all(-1 <= j.parent < i for i, j in enumerate(bvh.joints))
    assert all(np.all(np.isfinite(j.offset)) for j in bvh.joints)


def test_the_seeds_read(folder: Path) -> None:
    """The files the mutations start from are valid (else every mutation would be refused trivially)."""
    bvh = read_or_refuse(read_bvh, folder / "seed.bvh", SEED.encode())
    assert isinstance(bvh, BVH) and bvh.frame_count == 2 and bvh.joint_count == 2
    assert read_bvh(data_file("mocap", "cmu_131_01.bvh")).frame_count == 995


@FUZZ
@given(data=file_inputs(SEED))
def test_any_bytes_read_or_raise_bvh_error_naming_the_file(folder: Path, data: bytes) -> None:
    """Mutated, truncated, random or non-UTF-8 input: a consistent take, or BVHError with the file's name."""
    result = read_or_refuse(read_bvh, folder / "fuzzed.bvh", data)
    if isinstance(result, BVH):
        assert_consistent(result)
    else:
        assert isinstance(result, BVHError)


@FUZZ
@given(token=st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400"]),
       where=st.sampled_from(["CHANNELS 6", "CHANNELS 3", "Frames: 2", "Frame Time: 0.04", "OFFSET 0 1 0"]))
def test_non_finite_counts_and_values_are_refused_by_name(folder: Path, token: str, where: str) -> None:
    """NaN or infinity where a count, a frame time or an offset is expected: BVHError quoting the token."""
    head, _, _ = where.rpartition(" ")
    path = folder / "non_finite.bvh"
    path.write_text(SEED.replace(where, f"{head} {token}", 1))
    with pytest.raises(BVHError, match=rf"non_finite\.bvh: line \d+: .*{token!r}"):
        read_bvh(path)


@pytest.mark.parametrize("frames", ["1000000000000", "1e12", "99999999999999999999999999", "1" + "0" * 400])
@pytest.mark.parametrize("channels", ["  CHANNELS 1 Xrotation\n", ""])
def test_huge_frame_counts_are_refused_before_allocating(tmp_path: Path, frames: str, channels: str) -> None:
    """A 1 kB file claiming 10^12 frames (with or without channels) is refused at once, naming the count."""
    path = tmp_path / "huge.bvh"
    path.write_text(ONE_JOINT.replace("  CHANNELS 1 Xrotation\n", channels)
                    + f"MOTION\nFrames: {frames}\nFrame Time: 0.04\n0\n")
    line, lines = (8, 10) if channels else (7, 9)
    start = time.perf_counter()
    with pytest.raises(BVHError, match=rf"huge\.bvh: line {line}: \d+ frames declared, but the whole file has "
                                       rf"{lines} lines"):
        read_bvh(path)
    assert time.perf_counter() - start < 0.5


def test_frames_without_channels_are_refused(tmp_path: Path) -> None:
    """Frames declared by a hierarchy without a single channel hold nothing: refused, naming the line."""
    path = tmp_path / "still.bvh"
    path.write_text(ONE_JOINT.replace("  CHANNELS 1 Xrotation\n", "") + "MOTION\nFrames: 2\nFrame Time: 0.04\n\n\n")
    with pytest.raises(BVHError, match=r"still\.bvh: line 7: 2 frames declared, but no joint has CHANNELS"):
        read_bvh(path)


@pytest.mark.parametrize("depth", [3000, 20000])
def test_deeply_nested_joints_read_without_recursion(tmp_path: Path, depth: int) -> None:
    """Thousands of nested joints read as a chain (no RecursionError), each the child of the one before."""
    joints = "".join(f"JOINT j{i}\n{{\nOFFSET 0 1 0\nCHANNELS 1 Zrotation\n" for i in range(depth))
    text = ONE_JOINT[:-2] + joints + "End Site\n{\nOFFSET 0 1 0\n}\n" + "}\n" * (depth + 1)
    text += f"MOTION\nFrames: 1\nFrame Time: 0.04\n{' '.join(['1'] * (depth + 1))}\n"
    path = tmp_path / "deep.bvh"
    path.write_text(text)
    bvh = read_bvh(path)
    assert bvh.joint_count == depth + 1
    np.testing.assert_array_equal(bvh.parents, np.arange(-1, depth))
    assert bvh.joints[-1].end_site is not None and bvh.joints[-2].end_site is None
    assert_consistent(bvh)


def test_deep_file_cut_short_names_the_end(tmp_path: Path) -> None:
    """A deep file truncated inside its hierarchy: BVHError naming the last line and the open joint."""
    joints = "".join(f"JOINT j{i}\n{{\nOFFSET 0 1 0\n" for i in range(5000))
    path = tmp_path / "cut.bvh"
    path.write_text(ONE_JOINT[:-2] + joints)
    with pytest.raises(BVHError, match=r"cut\.bvh: line 15005: unexpected end of file; .* in joint 'j4999'"):
        read_bvh(path)


@pytest.mark.parametrize(("motion", "match"), [
    ("1\nnan\n", r"line 11: expected a MOTION value \(a finite number\), found 'nan'"),
    ("1\nabc\n", r"line 11: expected a MOTION value \(a number\), found 'abc'"),
    ("1\n", r"line 8: MOTION holds 1 values; expected 2 frames x 1 channels"),
])
def test_motion_errors_name_the_line_of_the_value(tmp_path: Path, motion: str, match: str) -> None:
    """A bad or missing MOTION value is reported at its own line, after the file's name."""
    path = tmp_path / "take.bvh"
    path.write_text(ONE_JOINT + "MOTION\nFrames: 2\nFrame Time: 0.04\n" + motion)
    with pytest.raises(BVHError, match=rf"^.*take\.bvh: {match}"):
        read_bvh(path)


def test_unreadable_paths_raise_bvh_error(tmp_path: Path) -> None:
    """A folder or a missing file: BVHError (the reader's one error type) naming the path."""
    for path in (tmp_path, tmp_path / "missing.bvh"):
        with pytest.raises(BVHError, match=f"cannot read BVH file '{path}'"):
            read_bvh(path)
