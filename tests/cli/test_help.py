"""What ``python -m pytest_rubric`` says of itself: each command's help is true of it, and a
mistyped argument is told how to write it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_rubric._cli.merge import main as cli


def _help(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, list[str]]:
    """The help's text (argparse's wrapping undone) and the commands it lists."""
    with pytest.raises(SystemExit) as exited:
        cli([*args, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    return " ".join(out.split()), re.findall(r"^    (\w+) ", out, flags=re.MULTILINE)


def test_the_top_level_help_names_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    text, commands = _help(capsys)
    assert commands == ["merge", "import", "collect", "history", "init"]
    description = text.partition("positional arguments:")[0]
    for command in commands:
        assert re.search(rf"\b{command}\b", description), command


def test_the_import_help_says_promptfoo_writes_what_it_can_map(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Input a format refuses writes nothing (exit 2); promptfoo's tests it cannot map are
    listed and the rest written (exit 0), as docs/guides/import-promptfoo.md says."""
    text, _ = _help(capsys, "import")
    assert "and then nothing is written (exit status 2)" in text
    assert "`not mapped:`" in text and "the rest is written (exit status 0)" in text


def test_a_target_without_its_function_is_told_how_to_write_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = cli(["collect", "--rubric-dir", ".", "--target", "app.bot", "--out", "answers"])
    assert code == 2
    assert capsys.readouterr().err == (
        "pytest-rubric collect: error: --target app.bot: write MODULE:FUNCTION, the module "
        "and the function the answers come from, e.g. --target app.bot:answer\n"
    )
