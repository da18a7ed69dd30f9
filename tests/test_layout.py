"""The package's layout rules (CONTRIBUTING.md, "How the code is laid out"), read from its
own imports: a new import that breaks one fails here, naming it."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_rubric"
NAME = PACKAGE.name


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


@functools.cache
def _tree(module: str) -> ast.Module:
    """The module's syntax tree, parsed once a process, when a test first asks: every xdist
    worker collects this file, few run its tests."""
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _imports(module: str) -> set[str]:
    """The package's modules ``module`` imports, at any depth of its code (under
    ``TYPE_CHECKING`` too): for each name imported, the module it is, or else the module that
    holds it."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(_tree(module)):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            targets = [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != module and target.startswith(NAME):
                found.add(target)
    return found


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each module and the package modules it imports."""
    return {module: _imports(module) for module in MODULES}


def _room(module: str) -> str:
    """A folder of the package, or a module at its top."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _imports_pytest(module: str) -> bool:
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] in ("pytest", "_pytest") for a in node.names
        ):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and (node.module or "").split(".")[0] in ("pytest", "_pytest")
        ):
            return True
    return False


def test_no_import_cycle_between_modules() -> None:
    state: dict[str, int] = {}

    def visit(module: str, path: tuple[str, ...]) -> None:
        state[module] = 1
        for target in sorted(_graph()[module]):
            if state.get(target) == 1:
                cycle = (*path[path.index(target) :], target)
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, (*path, target))
        state[module] = 2

    for module in sorted(_graph()):
        if module not in state:
            visit(module, (module,))


def test_the_folders_import_one_way() -> None:
    rooms: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        rooms.setdefault(_room(module), set()).update(
            _room(t) for t in targets if _room(t) != _room(module)
        )

    @functools.cache
    def floor(room: str, seen: frozenset[str] = frozenset()) -> int:
        assert room not in seen, f"the folders import in a circle through {room}"
        return 1 + max((floor(t, seen | {room}) for t in rooms.get(room, ())), default=0)

    for room in rooms:
        floor(room)


def test_criteria_never_reach_the_llm_or_the_judge() -> None:
    for module, targets in _graph().items():
        if module.startswith(f"{NAME}.criteria"):
            wrong = {t for t in targets if t.startswith((f"{NAME}._llm", f"{NAME}.judge"))}
            assert not wrong, f"{module} imports {sorted(wrong)}"


def test_the_results_reach_nothing_of_the_report() -> None:
    assert not {t for t in _graph()[f"{NAME}._results"] if t.startswith(f"{NAME}._report")}


@pytest.mark.parametrize("folder", ["_load", "_grade", "_report", "_render", "_guards", "_llm"])
def test_only_the_pytest_folder_knows_pytest(folder: str) -> None:
    knowing = [m for m in MODULES if m.startswith(f"{NAME}.{folder}") and _imports_pytest(m)]
    assert not knowing, knowing


def test_only_the_composition_root_is_handed_the_config_or_the_settings() -> None:
    """Each part of the session is given the values it uses: no constructor or field of a
    class in ``_session`` but the root's (``_session.session``) takes pytest's ``Config`` or
    the whole ``Settings``."""
    whole = {"Config", "pytest.Config", "Settings"}
    for module in MODULES:
        if not module.startswith(f"{NAME}._session.") or module == f"{NAME}._session.session":
            continue
        for node in ast.walk(_tree(module)):
            if not isinstance(node, ast.ClassDef):
                continue
            fields = [s.annotation for s in node.body if isinstance(s, ast.AnnAssign)]
            for init in node.body:
                if isinstance(init, ast.FunctionDef) and init.name == "__init__":
                    arguments = [*init.args.args, *init.args.kwonlyargs]
                    fields += [a.annotation for a in arguments if a.annotation is not None]
            names = {ast.unparse(f).strip("'\"") for f in fields}
            handed = {n for n in names for part in n.split(" | ") if part in whole}
            assert not handed, f"{module}.{node.name} is handed {sorted(handed)}"


def test_no_two_classes_share_a_name() -> None:
    """One word, one meaning: a class name names one class of the package."""
    where: dict[str, list[str]] = {}
    for module in MODULES:
        for node in ast.walk(_tree(module)):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(module)
    assert {name: found for name, found in where.items() if len(found) > 1} == {}
