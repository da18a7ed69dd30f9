"""The documented GitHub Actions recipe, run the way GitHub runs it, on a team's project.

The recipe is the ```yaml block of the README's "In CI" section (docs/guides/ci.md shows it
too, included from there), parsed as a user copies it. Its ``run:`` steps run in order under
bash, with the environment a runner gives them and GitHub's rules for which steps run after
a failure. Its ``uses:`` steps are stood in for by what each action does: the checkout is a
fresh clone (the committed recordings come along, nothing else does), and the artifact
actions share a list of the workflow's past runs, searched as
dawidd6/action-download-artifact's ``main.js`` searches them. The project is laid out as a
team's: an ``app`` package, unit tests, ``evals/`` with a target adapter, a ``pytest.ini``
and the judge's recordings a run with a key made.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import INNER_ADDOPTS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def declared(inputs: str) -> frozenset[str]:
    return frozenset(inputs.split())


# Every input of each action the recipe uses, as that action's action.yml declares it at the
# tag the recipe pins (read from the actions' repositories on 2026-12-04): actions/checkout
# v7 (3d3c42e5), actions/setup-python v7 (5fda3b95), dawidd6/action-download-artifact v21
# (b6e2e706, action.yml and main.js unchanged up to 0015e1bd), actions/upload-artifact v7
# (bbbca2dd). GitHub ignores an input an action does not declare, with only a warning.
ACTION_INPUTS: dict[str, frozenset[str]] = {
    "actions/checkout@v7": declared(
        "repository ref token ssh-key ssh-known-hosts ssh-strict ssh-user persist-credentials "
        "path clean filter sparse-checkout sparse-checkout-cone-mode fetch-depth fetch-tags "
        "show-progress lfs submodules set-safe-directory github-server-url "
        "allow-unsafe-pr-checkout"
    ),
    "actions/setup-python@v7": declared(
        "python-version python-version-file cache architecture check-latest token "
        "cache-dependency-path update-environment allow-prereleases freethreaded "
        "pip-version"
    ),
    "dawidd6/action-download-artifact@v21": declared(
        "github_token workflow workflow_search workflow_conclusion repo pr commit branch ref "
        "event run_id run_number name name_is_regexp path allow_forks check_artifacts "
        "search_artifacts skip_unpack dry_run if_no_artifact_found use_unzip "
        "merge_multiple"
    ),
    "actions/upload-artifact@v7": declared(
        "name path if-no-files-found retention-days compression-level overwrite "
        "include-hidden-files archive"
    ),
}

ANSWER = "Returns are accepted within 30 days for a full refund."
REGRESSED = "Returns are accepted within 14 days, for store credit."
REFUND_CASE = "evals/support.rubric.yaml::refund_window[support_bot]"


def recipe_text() -> str:
    """The ```yaml block of the README's "In CI" section, as users copy it."""
    text = README.read_text(encoding="utf-8")
    section = text.index("\n## In CI\n")
    start = text.index("```yaml\n", section) + len("```yaml\n")
    next_heading = text.find("\n#", section + 1)
    assert next_heading == -1 or start < next_heading, "the section has no ```yaml block"
    return text[start : text.index("\n```\n", start) + 1]


def recipe() -> dict[str, Any]:
    workflow: dict[Any, Any] = yaml.safe_load(recipe_text())
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as true
    return workflow


def the_job(workflow: Mapping[str, Any]) -> dict[str, Any]:
    (job,) = workflow["jobs"].values()
    assert isinstance(job, dict)
    return job


def step_using(job: Mapping[str, Any], uses: str) -> dict[str, Any]:
    (step,) = [s for s in job["steps"] if s.get("uses", "").startswith(uses + "@")]
    assert isinstance(step, dict)
    return step


# --- the workflow's past runs, and the two artifact actions that read and write them ---


@dataclass
class WorkflowRun:
    """One finished run of the workflow, as GitHub's API lists it."""

    branch: str
    conclusion: str  # "success" or "failure"
    artifacts: dict[str, dict[str, bytes]]  # artifact name -> file name -> content
    status: str = "completed"
    fork: bool = False


def download_artifact(
    inputs: Mapping[str, Any], runs: list[WorkflowRun], path: Path
) -> tuple[bool, str]:
    """dawidd6/action-download-artifact v21 with ``inputs``: (whether the step passed, its log).

    The search of its main.js, over ``runs`` (newest first) of this workflow (no
    ``workflow`` input): a run is passed over when its branch is not ``branch``, when
    ``workflow_conclusion`` (default "success") is neither its conclusion nor its status,
    when it comes from a fork (``allow_forks`` default false), or, with
    ``search_artifacts``, when it has no artifact named ``name``. Nothing found is handled
    as ``if_no_artifact_found`` (default "fail") says.
    """

    def on(flag: str) -> bool:
        return str(inputs.get(flag, False)).lower() == "true"

    wanted = str(inputs.get("workflow_conclusion", "success"))
    name = inputs["name"]
    found = None
    for run in runs:
        if "branch" in inputs and run.branch != inputs["branch"]:
            continue
        if wanted and wanted not in (run.conclusion, run.status):
            continue
        if run.fork and not on("allow_forks"):
            continue
        if (on("search_artifacts") or on("check_artifacts")) and name not in run.artifacts:
            continue
        found = run
        break
    if found is None or name not in found.artifacts:
        why = "no matching workflow run found with any artifacts?"
        if found is not None:
            why = "no artifacts found"
        mode = inputs.get("if_no_artifact_found", "fail")
        if mode == "fail":
            return False, f"::error::{why}\n"
        return True, (f"::warning::{why}\n" if mode == "warn" else f"{why}\n")
    path.mkdir(parents=True, exist_ok=True)
    for file, content in found.artifacts[name].items():
        (path / file).write_bytes(content)
    return True, f"==> (found) artifact {name} of a {found.conclusion} run on {found.branch}\n"


def upload_artifact(inputs: Mapping[str, Any], workspace: Path) -> tuple[dict[str, bytes], str]:
    """actions/upload-artifact v7: the files of ``path`` (one a line), and its log.

    The recipe uploads files at the workspace's top, so each is stored under its own name;
    none found is a warning (``if-no-files-found`` default "warn").
    """
    files = {}
    for line in str(inputs["path"]).splitlines():
        if line.strip():
            assert "/" not in line.strip(), "the stand-in uploads top-level files only"
            found = workspace / line.strip()
            if found.is_file():
                files[found.name] = found.read_bytes()
    if not files:
        assert inputs.get("if-no-files-found", "warn") == "warn"
        return files, "::warning::No files were found with the provided path\n"
    return files, f"uploaded {', '.join(sorted(files))} as {inputs.get('name', 'artifact')}\n"


# --- the runner ---


@dataclass
class Job:
    """What one run of the job left: its conclusion, its log, its step summary."""

    conclusion: str
    output: str
    summary: str
    steps: list[tuple[str, str]]  # (step, "success" | "failure" | "skipped"), in order
    workspace: Path
    uploaded: dict[str, bytes]


def should_run(condition: Any, *, event: str, failed: bool) -> bool:
    """A step's ``if:``, for the conditions the recipe may use (GitHub's rules for each)."""
    text = "success()" if condition is None else str(condition).strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2].strip()
    statuses = {"success()": not failed, "failure()": failed, "always()": True}
    statuses["!cancelled()"] = True  # no run here is cancelled
    if text in statuses:
        return statuses[text]
    for name in ("pull_request", "push", "workflow_dispatch"):
        if text == f"github.event_name == '{name}'":
            return not failed and event == name  # no status function: GitHub adds success()
    raise AssertionError(f"the stand-in runner does not know the condition {text!r}: teach it")


def expand(value: Any, *, variables: Mapping[str, str], runner_temp: Path) -> str:
    """``${{ vars.NAME }}`` (empty when unset) and ``${{ runner.temp }}`` in ``value``."""

    def one(match: re.Match[str]) -> str:
        expression = match.group(1)
        if expression.startswith("vars."):
            return variables.get(expression.removeprefix("vars."), "")
        if expression == "runner.temp":
            return str(runner_temp)
        raise AssertionError(f"the stand-in runner cannot evaluate {match.group(0)}: teach it")

    return re.sub(r"\$\{\{\s*(.+?)\s*\}\}", one, str(value))


class Runner:
    """Runs the recipe's job on commits of ``origin``, one fresh runner per job."""

    def __init__(self, *, origin: Path, root: Path) -> None:
        self.workflow = recipe()
        self.origin = origin
        self.root = root
        self.runs: list[WorkflowRun] = []  # newest first, as GitHub's API lists them
        self.bin = root / "bin"
        self.installs = root / "pip-installs.txt"
        write_shims(self.bin, installs=self.installs)
        self.jobs = 0

    def run(
        self, *, commit: str, event: str, branch: str, variables: Mapping[str, str] | None = None
    ) -> Job:
        """One run of the job on ``commit`` of ``branch``, which then joins ``self.runs``."""
        variables = variables or {}
        self.jobs += 1
        here = self.root / f"job{self.jobs}"
        workspace, runner_temp = here / "workspace", here / "runner-temp"
        runner_temp.mkdir(parents=True)
        summary = here / "step-summary.md"
        summary.touch()
        job = the_job(self.workflow)
        env = runner_env(self.bin, workspace=workspace, runner_temp=runner_temp)
        env |= {"GITHUB_EVENT_NAME": event, "GITHUB_STEP_SUMMARY": str(summary)}
        for name, value in job.get("env", {}).items():
            env[name] = expand(value, variables=variables, runner_temp=runner_temp)
        failed = False
        log: list[str] = []
        steps: list[tuple[str, str]] = []
        uploaded: dict[str, bytes] = {}
        for index, step in enumerate(job["steps"]):
            unknown = set(step) - {"name", "if", "uses", "with", "run", "shell", "env"}
            assert not unknown, f"the stand-in runner does not know {sorted(unknown)}: teach it"
            label = step.get("name") or step.get("uses") or step["run"].splitlines()[0]
            if not should_run(step.get("if"), event=event, failed=failed):
                steps.append((label, "skipped"))
                continue
            inputs = {
                key: expand(value, variables=variables, runner_temp=runner_temp)
                for key, value in (step.get("with") or {}).items()
            }
            if "run" in step:
                step_env = {
                    key: expand(value, variables=variables, runner_temp=runner_temp)
                    for key, value in (step.get("env") or {}).items()
                }
                ok, text = self.shell(
                    step, index, env=env | step_env, cwd=workspace, temp=runner_temp
                )
            else:
                uses = step["uses"]
                assert uses in ACTION_INPUTS, f"{uses}: not an action whose inputs were read"
                ok, text = True, ""
                if uses.startswith("actions/checkout@"):
                    clone(self.origin, commit, workspace)
                elif uses.startswith("dawidd6/action-download-artifact@"):
                    ok, text = download_artifact(inputs, self.runs, Path(inputs["path"]))
                elif uses.startswith("actions/upload-artifact@"):
                    uploaded, text = upload_artifact(inputs, workspace)
                # setup-python: the interpreter is this one, already on PATH (write_shims)
            log.append(f"## {label}\n{text}")
            steps.append((label, "success" if ok else "failure"))
            failed = failed or not ok
        conclusion = "failure" if failed else "success"
        artifact = str(step_using(job, "actions/upload-artifact")["with"]["name"])
        kept = {artifact: uploaded} if uploaded else {}
        self.runs.insert(0, WorkflowRun(branch, conclusion, kept))
        output, summary_text = "".join(log), summary.read_text(encoding="utf-8")
        return Job(conclusion, output, summary_text, steps, workspace, uploaded)

    @staticmethod
    def shell(
        step: Mapping[str, Any], index: int, *, env: dict[str, str], cwd: Path, temp: Path
    ) -> tuple[bool, str]:
        """A ``run:`` step, as GitHub runs it on Linux: ``bash -e {0}`` unless ``shell: bash``."""
        script = temp / f"step{index}.sh"
        script.write_text(step["run"], encoding="utf-8")
        shell = step.get("shell")
        assert shell in (None, "bash"), f"the stand-in runner has no shell {shell!r}"
        flags = ["-e"] if shell is None else ["--noprofile", "--norc", "-eo", "pipefail"]
        done = subprocess.run(
            ["bash", *flags, str(script)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        return done.returncode == 0, done.stdout + done.stderr


def write_shims(folder: Path, *, installs: Path) -> None:
    """What setup-python and the install step leave on PATH: this interpreter, with the plugin.

    ``pytest`` runs as its console script does, without the working directory on
    ``sys.path`` (``-P``), so the project imports only what the plugin makes importable.
    ``pip`` installs nothing and writes down what it was asked to install.
    """
    folder.mkdir(parents=True)
    shims = {
        "python": f'exec "{sys.executable}" "$@"\n',
        "pytest": f'exec "{sys.executable}" -P -m pytest "$@"\n',
        "pip": f'printf "%s\\n" "$*" >> "{installs}"\n',
    }
    for name, body in shims.items():
        path = folder / name
        path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
        path.chmod(0o755)


def runner_env(bin_folder: Path, *, workspace: Path, runner_temp: Path) -> dict[str, str]:
    """A runner's environment: of this session's, only PATH, HOME and the bytecode folder."""
    env = {
        "PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", str(runner_temp)),
        "LANG": "C.UTF-8",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_TEMP": str(runner_temp),
        # Like every session the suite starts: leave out Hypothesis' plugin (tests/conftest.py).
        "PYTEST_ADDOPTS": INNER_ADDOPTS,
    }
    if "PYTHONPYCACHEPREFIX" in os.environ:
        env["PYTHONPYCACHEPREFIX"] = os.environ["PYTHONPYCACHEPREFIX"]
    return env


# --- the team's project, over commits ---

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Team", "-c", "user.email=team@example.com", *args],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def clone(origin: Path, commit: str, workspace: Path) -> None:
    """actions/checkout: a fresh clone at ``commit``, with what was committed and nothing else."""
    git(origin.parent, "clone", "--quiet", str(origin), str(workspace))
    git(workspace, "checkout", "--quiet", commit)


PROJECT = {
    ".gitignore": "__pycache__/\n.pytest_cache/\n",
    "pytest.ini": "[pytest]\nrubric_dirs = evals\n",
    "app/__init__.py": "",
    "app/bot.py": f'''
        def answer(question: str) -> str:
            return "{ANSWER}"
        ''',
    "tests/test_bot.py": """
        from app.bot import answer


        def test_answers_in_one_sentence():
            assert answer("How do returns work?").count(".") == 1
        """,
    "evals/targets.py": '''
        """The adapter between the rubric files and the application."""

        from app.bot import answer


        def support_bot(case):
            return answer(case.question)
        ''',
    "evals/support.rubric.yaml": """
        target: "evals.targets:support_bot"
        min_score: 1.0
        cases:
          - id: refund_window
            question: "How long do I have to return an item, and what do I get back?"
            criteria:
              - {id: thirty_days, type: any_of, any_of: ["30 days"]}
              - {id: full_refund, type: any_of, any_of: ["full refund"]}
              - {id: no_store_credit, type: forbidden, phrases: ["store credit"]}
        """,
}

SHIPPING_CASE = """
  - id: ships_abroad
    question: "Do you ship to Canada?"
    criteria:
      - {id: says_shipping, type: any_of, any_of: ["ship"]}
"""


@dataclass(frozen=True)
class Project:
    origin: Path
    main: str  # every case passes
    regressed: str  # a pull request on main: the bot answers "14 days, store credit"
    red_main: str  # main with a case its bot fails


def write_files(repo: Path, files: Mapping[str, str]) -> None:
    for name, content in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")


def record_judge_cache(repo: Path, bin_folder: Path) -> None:
    """What a team does before committing, as "Recordings" says: a run with a key that
    records the judge's replies in ``recordings/`` (the local cache ignores itself).

    No criterion here is judged, so no judge is called. Until targets are called live by
    default, the plugin records the target's answers there too, keyed by the adapter file,
    which a pull request that changes only ``app/`` leaves as it is: answers the pull
    request's run must not replay.
    """
    env = runner_env(bin_folder, workspace=repo, runner_temp=repo)
    argv = [str(bin_folder / "pytest"), "-p", "no:cacheprovider", "-q", "--rubric-dir", "evals/"]
    argv += ["--rubric-judge", "openai:gpt-4o-mini", "--rubric-cache", "use"]
    argv += ["--rubric-recordings", "recordings"]
    done = subprocess.run(
        argv,
        cwd=repo,
        env={**env, "OPENAI_API_KEY": "sk-unused"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("team")
    origin = root / "origin"
    origin.mkdir()
    bin_folder = root / "bin"
    write_shims(bin_folder, installs=root / "pip-installs.txt")
    git(origin, "init", "--quiet", "--initial-branch=main")
    write_files(origin, {**PROJECT, ".github/workflows/rubric.yml": recipe_text()})
    record_judge_cache(origin, bin_folder)
    git(origin, "add", "--all")
    git(origin, "commit", "--quiet", "-m", "Support bot with its evals and the rubric workflow")
    main = git(origin, "rev-parse", "HEAD")

    git(origin, "checkout", "--quiet", "-b", "shorter-returns")
    bot = origin / "app/bot.py"
    bot.write_text(bot.read_text().replace(ANSWER, REGRESSED))
    git(origin, "commit", "--quiet", "--all", "-m", "Returns: 14 days, store credit")
    regressed = git(origin, "rev-parse", "HEAD")

    git(origin, "checkout", "--quiet", "-b", "red-main", main)
    rubric = origin / "evals/support.rubric.yaml"
    rubric.write_text(rubric.read_text() + SHIPPING_CASE.lstrip("\n"))
    git(origin, "commit", "--quiet", "--all", "-m", "A shipping case the bot cannot answer yet")
    red_main = git(origin, "rev-parse", "HEAD")
    git(origin, "checkout", "--quiet", "main")
    return Project(origin, main, regressed, red_main)


@pytest.fixture
def github(project: Project, tmp_path: Path) -> Runner:
    """A repository's Actions with no run yet."""
    return Runner(origin=project.origin, root=tmp_path)


# --- the recipe as written ---


def test_recordings_are_committed_and_the_local_cache_is_not(project: Project) -> None:
    committed = git(project.origin, "ls-files", "--", ".rubric_cache").splitlines()
    assert committed == []  # it ignores itself, as .pytest_cache does
    assert "--rubric-recordings recordings" in recipe_text()
    assert ".sqlite3" not in recipe_text()


def test_the_recipe_uses_only_inputs_its_actions_declare() -> None:
    job = the_job(recipe())
    for step in job["steps"]:
        if "uses" in step:
            assert step["uses"] in ACTION_INPUTS, f"{step['uses']}: read its action.yml first"
            unknown = set(step.get("with") or {}) - ACTION_INPUTS[step["uses"]]
            assert not unknown, f"{step['uses']} declares no input {sorted(unknown)}"
        assert "continue-on-error" not in step, "a step that may fail quietly turns the gate off"


def test_the_recipe_finds_main_s_results_whatever_main_s_run_concluded() -> None:
    job = the_job(recipe())
    download = step_using(job, "dawidd6/action-download-artifact")
    upload = step_using(job, "actions/upload-artifact")
    inputs = download["with"]
    assert download["if"] == "github.event_name == 'pull_request'"
    assert inputs["branch"] == "main"
    # action.yml's default is "success": main's run fails whenever a case fails. main.js
    # compares the value with a run's conclusion and with its status: "completed" is
    # every finished run.
    assert inputs["workflow_conclusion"] == "completed"
    assert inputs["search_artifacts"] is True  # the newest run that kept the artifact
    assert "workflow" not in inputs and "allow_forks" not in inputs  # this workflow, no forks
    # action.yml's default is "fail"; "warn" leaves the decision to the Grade step, which
    # fails without a baseline unless RUBRIC_ALLOW_NO_BASELINE is true.
    assert inputs["if_no_artifact_found"] == "warn"
    assert inputs["name"] == upload["with"]["name"]
    assert upload["if"] == "${{ !cancelled() }}"  # after a failed Grade step too
    assert "rubric.json" in upload["with"]["path"].split()

    grade = next(s for s in job["steps"] if s.get("name") == "Grade")["run"]
    assert inputs["path"] == "${{ runner.temp }}/rubric-baseline"
    assert '"$RUNNER_TEMP/rubric-baseline/rubric.json"' in grade
    assert "--rubric-json rubric.json" in grade
    assert job["env"] == {"RUBRIC_ALLOW_NO_BASELINE": "${{ vars.RUBRIC_ALLOW_NO_BASELINE }}"}
    # The application's answers are never replayed: targets are live unless this is given.
    assert "--rubric-response-cache" not in recipe_text()


def test_the_default_conclusion_would_miss_a_red_main(tmp_path: Path) -> None:
    """With ``workflow_conclusion`` left at "success", main's failed run is never found."""
    inputs = dict(step_using(the_job(recipe()), "dawidd6/action-download-artifact")["with"])
    runs = [
        WorkflowRun("shorter-returns", "success", {"rubric-results": {"rubric.json": b"pr"}}),
        WorkflowRun("main", "failure", {"rubric-results": {"rubric.json": b"main"}}),
        WorkflowRun("main", "success", {}),  # cancelled before its upload, say
    ]
    assert download_artifact(inputs, runs, tmp_path / "a")[0]
    assert (tmp_path / "a/rubric.json").read_bytes() == b"main"
    del inputs["workflow_conclusion"]
    ok, log = download_artifact(inputs, runs, tmp_path / "b")
    assert ok and log.startswith("::warning::") and not (tmp_path / "b").exists()


# --- the recipe run ---


def test_a_pull_request_that_regresses_the_application_fails_the_job(
    project: Project, github: Runner
) -> None:
    main = github.run(commit=project.main, event="push", branch="main")
    assert main.conclusion == "success", main.output
    assert dict(main.steps)["Fetch main's latest results"] == "skipped"
    assert json.loads(main.uploaded["rubric.json"])["results"][0]["passed"] is True
    # The package on PyPI, as "Install and run" says.
    assert github.installs.read_text() == "install pytest-rubric\n"

    pr = github.run(commit=project.regressed, event="pull_request", branch="shorter-returns")
    assert "==> (found) artifact rubric-results of a success run on main" in pr.output
    assert f"baseline {pr.workspace.parent}/runner-temp/rubric-baseline/rubric.json" in pr.output
    assert pr.conclusion == "failure"
    assert dict(pr.steps)["Grade"] == "failure"
    assert f"{REFUND_CASE} passed in the baseline and fails now" in pr.output
    assert "rubric gate FAILED" in pr.output
    assert REFUND_CASE in pr.summary
    assert dict(pr.steps)["Keep the results"] == "success"
    assert "replayed from the cache" not in pr.output  # the application was called


def test_no_baseline_fails_the_job_and_says_what_to_do(project: Project, github: Runner) -> None:
    # A pull request's own results are never main's.
    github.runs.append(WorkflowRun("shorter-returns", "success", {"rubric-results": {}}))
    pr = github.run(commit=project.regressed, event="pull_request", branch="shorter-returns")
    assert pr.conclusion == "failure"
    assert "::warning::no matching workflow run found with any artifacts?" in pr.output
    assert dict(pr.steps)["Grade"] == "failure"
    assert "::error::No baseline: main's rubric-results artifact was not found" in pr.output
    assert "Set the repository variable RUBRIC_ALLOW_NO_BASELINE to true" in pr.summary
    assert not (pr.workspace / "rubric.json").exists()  # nothing graded without its gate


def test_the_switch_lets_the_first_pull_request_through_and_says_so(
    project: Project, github: Runner
) -> None:
    pr = github.run(
        commit=project.main,
        event="pull_request",
        branch="add-rubric",
        variables={"RUBRIC_ALLOW_NO_BASELINE": "true"},
    )
    assert pr.conclusion == "success", pr.output
    assert "::notice::No baseline: graded without the gate" in pr.output
    assert "graded without the gate" in pr.summary
    assert "rubric gate" not in pr.output


def test_a_red_main_keeps_its_results_for_the_next_pull_request(
    project: Project, github: Runner
) -> None:
    main = github.run(commit=project.red_main, event="push", branch="main")
    assert main.conclusion == "failure"
    assert dict(main.steps)["Grade"] == "failure"
    assert dict(main.steps)["Keep the results"] == "success"
    assert github.runs[0].conclusion == "failure"
    assert b"ships_abroad" in github.runs[0].artifacts["rubric-results"]["rubric.json"]

    # A pull request that leaves the evals' answers alone: compared with the red main,
    # nothing regressed, and the case that fails on main still fails it.
    pr = github.run(commit=project.red_main, event="pull_request", branch="docs")
    assert "==> (found) artifact rubric-results of a failure run on main" in pr.output
    assert "rubric gate passed: no case regressed" in pr.output
    assert pr.conclusion == "failure"
