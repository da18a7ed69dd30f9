"""``python -m pytest_rubric init [DIR]``: a starter ``evals/`` folder beside a project's tests.

It writes ``evals/example.rubric.yaml`` (one commented example of each family of
criteria, graded offline) and ``evals/targets.py`` (the adapter the rubric file calls:
a function with the ``question: str`` signature), prints the ini lines to add, and never
overwrites a file. The example only ever calls a target it wrote: when ``evals/targets.py``
exists (the team's own, whose ``answer``, if it has one, may take other parameters or
answer other questions), the example's target goes to a new ``evals/example_targets.py``
and the rubric file names that; when that exists too, the example's case is answered in
writing. Either way the next run is as green as the one before.

A folder it cannot write in (``evals`` is a file, or a symlink out of ``DIR``; a place the
system refuses) ends it with one error line naming the path and the reason, exit status 2,
and nothing written outside ``DIR``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXAMPLE = """\
# A starter rubric file. Each case is one test item per subject: run `pytest evals/`.
# Substance scores, style never does: a case's score comes from the criteria below.
suite: example
min_score: 0.8   # a case passes at this score (0 to 1) when no `required` criterion went wrong

cases:
  - id: capital_of_france
    question: "What is the capital of France, and how many people live there?"
    # The application under test: evals/targets.py, function `answer`, called with the
    # question. Its answer is graded; the subject is the function's name.
    target: targets:answer
    criteria:
      # Phrases, found in the normalized answer (case, accents, dashes and quotes folded):
      - {id: names_paris, type: any_of, any_of: ["Paris"], required: true}
      - {id: says_capital, type: all_of, all_of: ["capital", "France"]}
      # A known-wrong claim: MET means the mistake was made, and it costs `penalty`.
      - {id: not_lyon, type: forbidden, phrases: ["Lyon is the capital"], penalty: 1}
      # Near spellings (a 0-100 similarity, rapidfuzz):
      - {id: paris_spelled, type: fuzzy, any_of: ["Pariss"], threshold: 80}
      # Numbers: some number in the answer within the tolerance ("2.1 million" reads 2.1).
      - {id: population, type: number, value: 2.1, rel_tol: 0.1}
      # Patterns: a regex on the normalized answer (in YAML, single quotes keep backslashes).
      - {id: gives_a_figure, type: regex, pattern: '\\d+(\\.\\d+)? million'}
      # Shape: bounds on words or characters.
      - {id: concise, type: length, max_words: 60}
      # Style is measured on its own axis and never scored:
      - {id: plain_words, type: length, max_chars: 300, axis: style}
      # LLM-judged: SKIPPED until a judge is set (--rubric-judge openai:gpt-4o-mini, or ini
      # rubric_judge, with OPENAI_API_KEY in the environment).
      - {id: direct, type: judge, requirement: "Answers the question directly"}

  - id: order_as_json
    question: "Give the order in this email as JSON: two widgets, SKU W-1."
    # A written answer, graded as it stands (subject `written`); no target is called.
    response: '{"sku": "W-1", "quantity": 2, "note": "widgets"}'
    subject: written
    criteria:
      # Structured answers: the answer parses as JSON and fits a JSON Schema.
      - id: order
        type: json
        schema:
          type: object
          required: [sku, quantity]
          properties:
            sku: {type: string}
            quantity: {type: integer, minimum: 1}
      # Fractional credit: a metric over the items found (precision, recall, f1, ...).
      - {id: fields, type: metric, expected: ["sku", "quantity"], metric: recall}
      # Your own check: a function that takes (response, case) and returns a bool, a float in
      # [0, 1], or (value, reason):
      # - {id: my_check, type: callable, function: "checks:my_check"}
"""

TARGETS = '''\
"""The application under test, as the rubric files call it (`target: MODULE:answer`).

A target receives what its signature names: a parameter `question: str` gets the case's
question. Replace the body with a call to your application.
"""


def answer(question: str) -> str:
    """Answer one case's question."""
    # from app.bot import reply  # your application
    # return reply(question)
    return "Paris is the capital of France; about 2.1 million people live there."
'''

ANSWER = "Paris is the capital of France; about 2.1 million people live there."

INI_LINES = "[pytest]\nrubric_dirs = evals\n"


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = commands.add_parser(
        "init",
        help="write a starter evals/ folder: an example rubric file and a target",
        description="Write evals/example.rubric.yaml (an example of each family of criteria) "
        "and evals/targets.py (the application under test) under DIR, and print the ini "
        "lines to add. A file that exists is kept, never overwritten.",
    )
    cmd.add_argument(
        "dir", nargs="?", type=Path, default=Path("."), metavar="DIR", help="the project (.)"
    )
    cmd.set_defaults(run=run)


class _Refused(Exception):
    """A path ``init`` cannot write; the message names it and says why."""


def run(args: argparse.Namespace) -> int:
    """Write what is missing; the exit status (0, or 2 when a path cannot be written)."""
    try:
        return _init(args.dir)
    except _Refused as exc:
        print(f"pytest-rubric init: error: {exc}", file=sys.stderr)
        return 2


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _folder(directory: Path) -> Path:
    """``directory/evals``, made if missing: a real folder inside ``directory``, or
    :class:`_Refused`."""
    evals = directory / "evals"
    try:
        if evals.is_symlink() and not evals.resolve().is_relative_to(directory.resolve()):
            raise _Refused(
                f"{evals} is a symlink to {evals.resolve()}, outside {directory}; init writes "
                "only inside the project: remove the link, or give another DIR"
            )
        if evals.exists() and not evals.is_dir():
            raise _Refused(
                f"{evals} is a file where the evals folder goes; move it, or give another DIR"
            )
        evals.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = exc.filename if exc.filename is not None else evals
        raise _Refused(f"cannot make {evals} ({where}: {_why(exc)})") from None
    return evals


def _init(directory: Path) -> int:
    evals = _folder(directory)
    if _taken(evals / "example.rubric.yaml"):  # an earlier init's, kept with the target it names
        print(f"kept {evals / 'example.rubric.yaml'} (it exists; nothing was written over it)")
        print("\nAdd to pytest.ini, if it is not there yet:\n\n" + INI_LINES)
        return 0
    module = next(
        (m for m in ("targets", "example_targets") if not _taken(evals / f"{m}.py")), None
    )
    example = EXAMPLE
    if module is None:
        # Both candidate modules are the team's: the example's case is answered in writing.
        example = example.replace(
            "    target: targets:answer",
            "    # target: targets:answer  (once evals/targets.py has `answer`)\n"
            f"    response: {ANSWER!r}",
        )
    elif module != "targets":
        example = example.replace("targets:answer", f"{module}:answer").replace(
            "evals/targets.py", f"evals/{module}.py"
        )
    files = [("example.rubric.yaml", example)]
    if module is not None:
        files.append((f"{module}.py", TARGETS.replace("MODULE", module)))
    for name, text in files:
        path = evals / name
        try:
            with path.open("x", encoding="utf-8") as file:  # "x": never over an existing file
                file.write(text)
        except FileExistsError:  # a file, a folder or a symlink (never followed)
            print(f"kept {path} (it exists; nothing was written over it)")
        except OSError as exc:
            raise _Refused(f"cannot write {path}: {_why(exc)}") from None
        else:
            print(f"wrote {path}")
    if module != "targets":
        print(
            f"kept {evals / 'targets.py'} (it exists: the example calls a target of its own, "
            "and nothing was written over it)"
        )
    if module is None:
        print(
            f"The example's case `capital_of_france` names no target: add to {evals / 'targets.py'}"
            "\n\n    def answer(question: str) -> str:\n        return your_app(question)\n\n"
            "and put its `target: targets:answer` line in place of its written `response:`."
        )
    print(
        "\nAdd to pytest.ini (or [tool.pytest.ini_options] in pyproject.toml, as "
        'rubric_dirs = ["evals"]):\n\n' + INI_LINES + "\nthen run: pytest evals/"
    )
    return 0


def _taken(path: Path) -> bool:
    return path.exists() or path.is_symlink()  # a dangling link is there too
