"""The one table of options: each flag and its ini key read alike, and the docs list them all."""

from __future__ import annotations

import pytest

from pytest_rubric._config.options import given
from pytest_rubric._config.settings import BY_KEY, OPTIONS, reader

# A value for each option that has both a flag and an ini key read by the same reader.
SAMPLES = {
    "repeat": ("3", 3),
    "judge_samples": ("2", 2),
    "confidence": ("0.9", 0.9),
    "judge_probe": ("2", 2),
    "judge_min_kappa": ("0.4", 0.4),
    "judge_probe_kinds": ("tone,length", ("tone", "length")),
    "response_cache": ("use", "use"),
}


def test_every_reader_an_option_names_exists() -> None:
    """Options name their readers, imported when a value is read: a misspelt name would
    fail only the run that sets that option."""
    named = {o.key: o.parse for o in OPTIONS if o.parse is not None}
    assert {key: name for key, name in named.items() if not callable(reader(name))} == {}


def test_every_option_with_a_flag_and_an_ini_key_has_a_sample_here() -> None:
    both = {o.key for o in OPTIONS if o.flag and o.ini and o.parse is not None}
    assert both == set(SAMPLES)


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_a_flag_and_its_ini_key_read_the_same_value(pytester: pytest.Pytester, key: str) -> None:
    text, value = SAMPLES[key]
    option = BY_KEY[key]
    from_flag = pytester.parseconfig(f"{option.flag_text}={text}")
    assert given(from_flag, key) == value
    pytester.makeini(f"[pytest]\n{option.dest} = {text}\n")
    assert given(pytester.parseconfig(), key) == value


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_a_wrong_ini_value_is_a_usage_error_naming_the_key(
    pytester: pytest.Pytester, key: str
) -> None:
    option = BY_KEY[key]
    pytester.makeini(f"[pytest]\n{option.dest} = -7.5x\n")
    with pytest.raises(pytest.UsageError, match=f"ini option {option.dest} = "):
        given(pytester.parseconfig(), key)


def test_every_option_has_one_name_and_help() -> None:
    keys = [o.key for o in OPTIONS]
    assert len(keys) == len(set(keys))
    assert all(o.help.strip() for o in OPTIONS)


def test_settings_are_the_table_each_field_set_by_its_options_or_a_reader() -> None:
    from dataclasses import fields

    from pytest_rubric._config.options import _READERS
    from pytest_rubric._config.settings import Settings

    for f in fields(Settings):
        options = f.metadata.get("options", ())
        assert options or f.name in _READERS, f"{f.name} is set by no option and no reader"
        assert len(options) == 1 or f.name in _READERS, f"{f.name}: several options, no reader"
    assert set(_READERS) <= {f.name for f in fields(Settings)}


def test_a_run_with_nothing_set_has_every_plain_options_default(pytester: pytest.Pytester) -> None:
    from dataclasses import fields

    from pytest_rubric._config.options import _READERS, read_settings
    from pytest_rubric._config.settings import Settings

    read, defaults = read_settings(pytester.parseconfig()), Settings()
    plain = [f.name for f in fields(Settings) if f.name not in _READERS]
    assert len(plain) > 25
    assert {n: getattr(read, n) for n in plain} == {n: getattr(defaults, n) for n in plain}


def test_pruning_without_a_recordings_folder_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A flag that would do nothing is never dropped in silence."""
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("--rubric-recordings-prune")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--rubric-recordings-prune deletes * add --rubric-recordings DIR*"]
    )
    result = pytester.runpytest("--rubric-recordings-prune", "--rubric-recordings", "recordings")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


@pytest.mark.parametrize("flag", ["--rubric-target=targets:answer", "--rubric-model=openai:m"])
def test_a_subject_with_an_empty_name_is_a_usage_error(
    pytester: pytest.Pytester, flag: str
) -> None:
    """`=targets:answer` names no subject: said as the flag's, not as a module `=targets`
    that cannot be imported."""
    option, value = flag.split("=", 1)
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest(f"{option}==" + value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{option} ={value}: the subject's name before `=` is empty*"])
