"""The screenshot decoder against a PNG whose rows use each of the five filters."""

from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

import pytest

from tests.png import pixels


def _paeth(left: int, up: int, corner: int) -> int:
    p = left + up - corner
    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
    return left if pa <= pb and pa <= pc else up if pb <= pc else corner


def _filtered(kind: int, line: bytes, previous: bytes, bpp: int) -> bytes:
    out = bytearray()
    for i, byte in enumerate(line):
        left = line[i - bpp] if i >= bpp else 0
        up = previous[i]
        corner = previous[i - bpp] if i >= bpp else 0
        pred = [0, left, up, (left + up) // 2, _paeth(left, up, corner)][kind]
        out.append((byte - pred) & 0xFF)
    return bytes(out)


def _png(path: Path, rows: list[bytes], *, width: int, colour: int) -> None:
    bpp = 3 if colour == 2 else 4
    raw, previous = b"", bytes(width * bpp)
    for y, line in enumerate(rows):
        kind = y % 5
        raw += bytes([kind]) + _filtered(kind, line, previous, bpp)
        previous = line

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, len(rows), 8, colour, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )  # fmt: skip


@pytest.mark.parametrize("colour", [2, 6])
def test_every_filter_decodes_to_the_pixels_written(tmp_path: Path, colour: int) -> None:
    bpp, width = (3 if colour == 2 else 4), 7
    draw = random.Random(colour)
    rows = [bytes(draw.randrange(256) for _ in range(width * bpp)) for _ in range(10)]
    _png(tmp_path / "p.png", rows, width=width, colour=colour)
    rgb = [
        line if bpp == 3 else bytes(b for j, b in enumerate(line) if j % 4 != 3) for line in rows
    ]
    assert pixels(tmp_path / "p.png") == (width, 10, rgb)
