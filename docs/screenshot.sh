#!/usr/bin/env bash
# Render the bundled example's HTML report and take the screenshot the README shows.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
.venv/bin/python -m pytest --rubric-dir examples/evals -p no:cacheprovider -q --tb=no \
    --rubric-html "$out/report.html" >/dev/null || [ $? -le 1 ]
run=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
     --disable-background-networking --disable-component-update --disable-sync
     --proxy-server=127.0.0.1:9 "--host-resolver-rules=MAP * ~NOTFOUND"
     "--user-data-dir=$out/profile" --window-size=1100,1100 --hide-scrollbars
     "--screenshot=docs/report.png" "file://$out/report.html")
if unshare -n true 2>/dev/null; then unshare -n "${run[@]}" 2>/dev/null; else "${run[@]}" 2>/dev/null; fi
echo "wrote docs/report.png"
