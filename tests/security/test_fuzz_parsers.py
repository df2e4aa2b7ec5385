"""Every parser that reads attacker input, fuzzed in the normal test run.

The table is :data:`fuzz.targets.TARGETS` (name -> callable -> input grammar -> accepted errors);
the inputs are built by ``tests/_support/fuzz_inputs.py``.  For every row and every input: the
call returns or raises one of the row's accepted ``MudrikaError`` classes, never anything else,
never hangs (a watchdog fails the call past 5 s) and never allocates beyond a generous cap for
its size.  The budget is fixed and derandomised (no example database), so a CI run is repeatable;
the long, coverage-guided runs are the atheris harnesses in ``fuzz/`` (docs/security.md, "Fuzzing").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from fuzz.targets import EXEMPT_MODULES, PARSER_MODULES, TARGETS, Target
from mudrika.errors import MudrikaError
from tests._support.fuzz_inputs import Hang, guarded_call, inputs_for, memory_cap
from tests._support.paths import REPO_ROOT

pytestmark = pytest.mark.security

#: One fixed, database-less profile: the same examples on every run and every machine.
FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@pytest.mark.parametrize("target", TARGETS, ids=[target.name for target in TARGETS])
def test_parser_survives_fuzzing(target: Target) -> None:
    @FUZZ
    @given(data=inputs_for(target))
    def run(data: bytes) -> None:
        guarded_call(target, data)

    run()


@pytest.mark.parametrize("target", TARGETS, ids=[target.name for target in TARGETS])
def test_every_seed_is_read_and_every_mode_is_reached(target: Target) -> None:
    """The seeds are what mutation starts from: each must get through its parser (a seed that
    fails early would leave the code behind that check unfuzzed), and between them they use every
    mode the row has."""
    seeds = target.seeds()
    modes = {seed[0] % target.modes for seed in seeds if seed}
    assert modes == set(range(target.modes)) or target.modes == 1
    for seed in seeds:
        target.call(seed)


def test_accepted_errors_are_only_the_toolkits_own() -> None:
    for target in TARGETS:
        assert target.accepted
        assert all(issubclass(kind, MudrikaError) and kind is not MudrikaError for kind in target.accepted)
    assert len({target.name for target in TARGETS}) == len(TARGETS)


def _reads_input(tree: ast.Module) -> bool:
    """Does a module's syntax tree parse structured input itself (a call of ``loads_strict``, or a
    ``parse_*``/``load_*``/``read_*`` function or a ``from_json``/``parse`` method of its own)?"""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name == "loads_strict":
                return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
            node.name.startswith(("parse_", "load_", "read_")) or node.name in ("from_json", "parse")
        ):
            return True
    return False


def test_every_parser_module_has_a_row() -> None:
    """A module that reads structured input must be driven by a row, or be listed as exempt with
    the reason it is not an attacker-facing parser: a new parser without a row fails here."""
    source = REPO_ROOT / "src"
    readers = set()
    for path in sorted((source / "mudrika").rglob("*.py")):
        module = ".".join(path.relative_to(source).with_suffix("").parts).removesuffix(".__init__")
        if _reads_input(ast.parse(path.read_text(encoding="utf-8"))):
            readers.add(module)
    unlisted = sorted(readers - PARSER_MODULES - EXEMPT_MODULES.keys())
    assert unlisted == [], f"parsers without a fuzz row (add one to fuzz/targets.py): {unlisted}"
    stale = sorted((PARSER_MODULES | EXEMPT_MODULES.keys()) - _all_modules(source))
    assert stale == [], f"fuzz table names modules that do not exist: {stale}"
    assert not PARSER_MODULES & EXEMPT_MODULES.keys()


def _all_modules(source: Path) -> set[str]:
    return {
        ".".join(path.relative_to(source).with_suffix("").parts).removesuffix(".__init__")
        for path in (source / "mudrika").rglob("*.py")
    }


def test_the_guard_fails_a_call_that_raises_something_else() -> None:
    """The property is not vacuous: an error outside the accepted set fails the guarded call."""

    def broken(data: bytes) -> object:
        raise KeyError("bug")

    target = Target("broken", ("x",), broken, TARGETS[0].accepted, 1, "json", list)
    with pytest.raises(KeyError):
        guarded_call(target, b"{}")


def test_the_guard_fails_a_call_that_hangs() -> None:
    """The hang detector fires on a call that keeps the CPU busy past the limit (a short limit
    here, so the test costs well under a second of CPU)."""

    def spin(data: bytes) -> object:
        while True:
            sum(range(1000))

    target = Target("spin", ("x",), spin, TARGETS[0].accepted, 1, "json", list)
    with pytest.raises(Hang):
        guarded_call(target, b"", hang_seconds=0.3)


def test_the_guard_fails_a_call_that_balloons() -> None:
    def balloon(data: bytes) -> object:
        return bytearray(memory_cap(len(data)) + 1)

    target = Target("balloon", ("x",), balloon, TARGETS[0].accepted, 1, "json", list)
    with pytest.raises(AssertionError, match="peak allocation"):
        guarded_call(target, b"x")
