"""Just enough PNG decoding to tell a rendered page from a blank one (8-bit RGB/RGBA)."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from itertools import accumulate
from pathlib import Path

_LOW = (255).__and__  # a byte of a running sum, applied by map() without a Python call


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
    # Up adds the row above byte by byte: as one integer, the low seven bits of each byte
    # summed (no carry crosses a byte) and the top bit set by XOR.
    high = int.from_bytes(b"\x80" * stride, "little")
    low = high ^ ((1 << 8 * stride) - 1)
    rows: list[bytes] = []
    previous = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], raw[start + 1 : start + 1 + stride]
        # Whole-row work where a filter allows it (none, up, sub): most rows of a screenshot.
        if kind == 2:
            a, b = int.from_bytes(line, "little"), int.from_bytes(previous, "little")
            line = (((a & low) + (b & low)) ^ ((a ^ b) & high)).to_bytes(stride, "little")
        elif kind == 1:  # each channel a running sum along the row
            decoded = bytearray(stride)
            for channel in range(bpp):
                decoded[channel::bpp] = bytes(map(_LOW, accumulate(line[channel::bpp])))
            line = bytes(decoded)
        elif kind in (3, 4):
            line = _unfilter(kind, line, previous, bpp)
        previous = line
        if bpp == 4:
            line = bytearray(line)
            del line[3::4]  # the alpha channel
        rows.append(bytes(line))
    return width, height, rows


def _unfilter(kind: int, line: bytes, previous: bytes, bpp: int) -> bytes:
    """Average (3) and Paeth (4) read the byte just decoded to their left: byte by byte."""
    out = bytearray(line)
    for i in range(bpp):  # no pixel to the left: both add the byte above (Average, half of it)
        out[i] = (out[i] + (previous[i] // 2 if kind == 3 else previous[i])) & 0xFF
    for i in range(bpp, len(out)):
        left, up = out[i - bpp], previous[i]
        if kind == 3:
            out[i] = (out[i] + (left + up) // 2) & 0xFF
            continue
        corner = previous[i - bpp]
        if up == corner:  # p is left: the nearest
            pred = left
        elif left == corner:  # p is up
            pred = up
        else:  # the distances of left, up and corner from p = left + up - corner
            pa, pb = abs(up - corner), abs(left - corner)
            pc = abs(left + up - 2 * corner)
            pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
        out[i] = (out[i] + pred) & 0xFF
    return bytes(out)


def colours(path: Path, step: int = 3) -> Counter[tuple[int, int, int]]:
    """How often each RGB colour occurs, sampling every ``step``-th pixel of every
    ``step``-th row."""
    _, _, rows = pixels(path)
    counts: Counter[tuple[int, int, int]] = Counter()
    skip = 3 * step
    for row in rows[::step]:
        counts.update(zip(row[0::skip], row[1::skip], row[2::skip], strict=True))
    return counts
