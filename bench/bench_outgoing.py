"""The outgoing boundary and the caches on a megabyte of hostile text.

What is measured
----------------
Each shape (a long run of URL-ish characters, ``://`` or ``@`` repeated, digits, spaces,
runs that look like a key's prefix, many URLs with credentials, a run of backslashes before
a ``u``...) is made ``--size`` characters long and passed once through what every output
and cache applies: ``outgoing`` (redaction with a key set, URLs made public, control
characters escaped), ``inert_mentions`` (Markdown), and a judge cache's ``put`` (a reply
and its parsed form). The table shows the seconds of each, and, at ``--size / 25``, the
URL pattern this boundary used before (a regex trying every start of a run of letters)
against the linear scan that replaced it.

Target: every shape under 1 s at 1 MB.

Usage::

    .venv/bin/python bench/bench_outgoing.py [--size 1000000] [--check]
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_rubric._guards.outgoing import _public_urls, inert_mentions, outgoing  # noqa: E402
from pytest_rubric._guards.secrets import Secret  # noqa: E402
from pytest_rubric._llm.cache import CacheFile  # noqa: E402

TARGET_S = 1.0
KEY = "sk-ant-AbCdEfGh1234567890QrStUvWx"

SHAPES: dict[str, Callable[[int], str]] = {
    "letters then ://": lambda n: "a" * (n - 4) + " ://",
    "scheme chars then ://": lambda n: "a+b.c-" * (n // 6) + "://",
    "http:// then letters": lambda n: "http://" + "a" * n,
    ":// repeated": lambda n: "://" * (n // 3),
    "a:// repeated": lambda n: "a://" * (n // 4),
    "1:// repeated": lambda n: "1://" * (n // 4),
    "@ repeated": lambda n: "@" * n,
    "a@ repeated": lambda n: "a@" * (n // 2),
    "digits": lambda n: "1" * n,
    "spaces": lambda n: " " * n,
    "sk- repeated": lambda n: "sk-" * (n // 3),
    "key prefix repeated": lambda n: KEY[:11] * (n // 11),
    "URLs with userinfo": lambda n: "http://u:p@h/ " * (n // 14),
    "URLs with a query": lambda n: "https://h/?k=v " * (n // 15),
    "escapes": lambda n: "\x1b[2J" * (n // 4),
    "backslashes then u": lambda n: "\\" * (n - 2) + "ux",
    "backslashes, escape": lambda n: "\\" * (n - 5) + "u0031",
    "backslashes, escape odd": lambda n: "\\" * (n - 6) + "u0031",
}

# The pattern the boundary used before: quadratic on a run of letters before a "://".
OLD_URL = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://(?:(?!(?i:https?|wss?|ftp)://)[^\s<>\"'`\x00-\x1f\x7f-\x9f])+"
)


def _seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--check", action="store_true", help="exit 1 over the target")
    args = parser.parse_args(argv)
    key = Secret(KEY)
    over = False
    print(f"{'shape':24} {'outgoing':>9} {'mentions':>9} {'cache':>9}  (s, {args.size:,} chars)")
    with tempfile.TemporaryDirectory() as folder:
        cache = CacheFile(Path(folder), secrets=[key])
        for name, make in SHAPES.items():
            text = make(args.size)
            put = functools.partial(cache.put, name, provider="p", model="m", raw=text)
            times = [
                _seconds(functools.partial(outgoing, text, key)),
                _seconds(functools.partial(inert_mentions, text)),
                _seconds(functools.partial(put, parsed=text)),
            ]
            over = over or max(times) > TARGET_S
            print(f"{name:24} " + " ".join(f"{t:9.3f}" for t in times))
    small = "a" * (args.size // 25) + " ://"
    before = _seconds(lambda: OLD_URL.sub("", small))
    after = _seconds(lambda: _public_urls(small))
    print(
        f"\n{len(small):,} letters then ' ://': the old URL regex {before:.3f} s, the linear scan "
        f"{after:.4f} s ({before / max(after, 1e-9):,.0f}x)"
    )
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
