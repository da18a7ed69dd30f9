"""Every decision that depends on pytest-xdist reads one Role, made from the public facts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_rubric._session.xdist import WHOLE_FILES_KEY, Role


def _config(workerinput: dict[str, object] | None = None, **option: object) -> pytest.Config:
    config = SimpleNamespace(option=SimpleNamespace(**option))
    if workerinput is not None:
        config.workerinput = workerinput
    return config  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (_config(), Role()),
        (_config(numprocesses=2, dist="load"), Role(hands_out=True)),
        (_config(numprocesses=0, dist="no"), Role()),
        (
            _config({"workerid": "gw1", "workercount": 3, WHOLE_FILES_KEY: True}),
            Role(worker_id="gw1", workers=3, whole_files=True),
        ),
    ],
)
def test_the_role_of_each_process(config: pytest.Config, expected: Role) -> None:
    assert Role.of(config) == expected


@pytest.mark.parametrize(
    ("role", "reports", "first"),
    [
        (Role(), True, True),
        (Role(hands_out=True), True, True),
        (Role(worker_id="gw0", workers=2), False, True),
        (Role(worker_id="gw1", workers=2), False, False),
    ],
)
def test_who_reports_and_who_does_the_once_per_run_work(
    role: Role, reports: bool, first: bool
) -> None:
    assert (role.reports, role.first) == (reports, first)
