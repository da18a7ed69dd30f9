"""Just enough PNG decoding to tell a rendered page from a blank one (8-bit RGB/RGBA)."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from pathlib import Path


def pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and one RGB(A) byte row per scanline, un-filtered."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        # Whole-row work where a filter allows it (none, up): most rows of a screenshot.
        if kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind in (3, 4):
            _unfilter(kind, line, previous, bpp)
        previous = line
        if bpp == 4:
            line = bytearray(line)
            del line[3::4]  # the alpha channel
        rows.append(bytes(line))
    return width, height, rows


def _unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> None:
    """Average (3) and Paeth (4) read the byte just decoded to their left: byte by byte."""
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = previous[i]
        if kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
            continue
        corner = previous[i - bpp] if i >= bpp else 0
        p = left + up - corner
        pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
        pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
        line[i] = (line[i] + pred) & 0xFF


def colours(path: Path, step: int = 3) -> Counter[tuple[int, int, int]]:
    """How often each RGB colour occurs, sampling every ``step``-th pixel of every row."""
    _, _, rows = pixels(path)
    counts: Counter[tuple[int, int, int]] = Counter()
    for row in rows[::step]:
        for i in range(0, len(row) - 2, 3 * step):
            counts[(row[i], row[i + 1], row[i + 2])] += 1
    return counts
