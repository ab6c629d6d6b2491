# SPDX-License-Identifier: GPL-3.0-or-later
"""Hypothesis strategies for fuzzing file readers, and the check every reader must pass.

The check: reading any input either succeeds or raises the project's error (an
``ArticulateError``) whose message names the file; anything else (``ValueError`` from numpy,
``RecursionError``, ``MemoryError``, ``UnicodeDecodeError``, a RuntimeWarning turned into an
error by pytest.ini) escapes and fails the test.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from ik_core.errors import ArticulateError

# Few examples per property keep each test to a second or two; deadline=None because a first
# example pays for imports and numpy's warm-up.
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Values that break naive parsers: non-finite numbers, numbers too large for floats or for 64-bit
# integers, negative and fractional counts, empty text, bytes that are not UTF-8, structure words.
NASTY = (
    "nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e308", "-1", "0", "-0", "2.5",
    "1e12", "999999999999999999999999", "9" * 400, "3" * 5000, "", " ", "\x00", "\ufeff", "\ud7ff", "é",
    "{", "}", "[", "]", ",", '"', "#", "<", ">", "&", "&amp;", "0x10", "1_000", "\n", "\r",
)
NASTY_BYTES = (b"\xff", b"\xfe\xff", b"\xc3", b"\x80", b"\xe2\x82", b"\x00")
TOKEN = re.compile(r"[A-Za-z0-9_.+\-#]+|\s+|.", re.S)


def tokens(text: str) -> list[str]:
    """``text`` cut into words (numbers, names, ``#ids``), runs of whitespace and single characters."""
    return TOKEN.findall(text)


@st.composite
def mutated_text(draw: st.DrawFn, seed: str) -> bytes:
    """``seed`` with a few tokens replaced, removed or repeated, then maybe truncated, as bytes."""
    toks = tokens(seed)
    for _ in range(draw(st.integers(1, 4))):
        if not toks:
            break
        i = draw(st.integers(0, len(toks) - 1))
        action = draw(st.sampled_from(("replace", "replace", "delete", "repeat")))
        if action == "replace":
            toks[i] = draw(st.sampled_from(NASTY) | st.text(max_size=6))
        elif action == "delete":
            del toks[i]
        else:
            j = draw(st.integers(i, min(len(toks), i + 40)))
            toks[i:i] = toks[i:j] * draw(st.integers(1, 3))
    data = "".join(toks).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    if draw(st.integers(0, 4)) == 0:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(NASTY_BYTES)) + data[at:]
    return data


def file_inputs(seed: str) -> st.SearchStrategy[bytes]:
    """Mutations of a valid ``seed`` file, random bytes, and random text."""
    return st.one_of(
        mutated_text(seed),
        mutated_text(seed),
        st.binary(max_size=400),
        st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )


def read_or_refuse(read: Callable[[Path], object], path: Path, data: bytes) -> object | ArticulateError:
    """Write ``data`` to ``path`` and read it: the result, or the project's error naming the file.

    Any other exception propagates (and fails the calling test).
    """
    path.write_bytes(data)
    try:
        return read(path)
    except ArticulateError as err:
        message = str(err)
        assert path.name in message, f"the error does not name the file: {message!r}"
        assert message.count("\n") == 0, f"the error is not one line: {message!r}"
        return err
