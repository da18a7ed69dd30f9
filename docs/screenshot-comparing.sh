#!/usr/bin/env bash
# docs/images/comparing-report.png: the bundled example's HTML report with a baseline and a
# history of three earlier runs, in which some answers were swapped for a worse or a better
# subject's (so there are changes to show and lines that move).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cp -r examples "$out/examples"
run() {
    .venv/bin/python -m pytest --rubric-dir "$out/examples/evals" -p no:cacheprovider -q --tb=no \
        --rubric-history "$out/h.sqlite3" "$@" >/dev/null || [ $? -le 1 ]
}
for k in 1 2 3; do
    # Earlier runs: answer k of every five of mixed's is confident's, and of hedged's accurate's.
    .venv/bin/python - "$out" "$k" <<'PY'
import sys
from pathlib import Path

root, k = Path(sys.argv[1]), int(sys.argv[2])
source = Path("examples/answers")
for target, donor in (("mixed", "confident"), ("hedged", "accurate")):
    mine = (source / f"{target}.jsonl").read_text().splitlines()
    theirs = (source / f"{donor}.jsonl").read_text().splitlines()
    lines = [t if i % 5 == k else m for i, (m, t) in enumerate(zip(mine, theirs))]
    (root / "examples" / "answers" / f"{target}.jsonl").write_text("\n".join(lines) + "\n")
PY
    run --rubric-json "$out/base.json"
done
cp examples/answers/*.jsonl "$out/examples/answers/"
run --rubric-baseline "$out/base.json" --rubric-html "$out/report.html"
mkdir -p docs/images
browser=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
     --disable-background-networking --disable-component-update --disable-sync
     --proxy-server=127.0.0.1:9 "--host-resolver-rules=MAP * ~NOTFOUND"
     "--user-data-dir=$out/profile" --window-size=1000,3000 --hide-scrollbars
     "--screenshot=docs/images/comparing-report.png" "file://$out/report.html")
if unshare -n true 2>/dev/null; then unshare -n "${browser[@]}" 2>/dev/null; else "${browser[@]}" 2>/dev/null; fi
echo "wrote docs/images/comparing-report.png"
