"""Every code block a reader is meant to run, in README.md and docs/**/*.md, runs.

Why: documentation drifts silently — an import path moves, a CLI flag is renamed, an example
policy stops validating — and the first to notice is a new user.  This test runs the blocks the way
that user would, so drift fails the suite instead.

The conventions (also stated in README.md under "Documentation"):

* A fenced block always names its language.  ``bash``, ``sh``, ``shell`` and ``console`` blocks
  are run by ``bash -e -o pipefail`` (for ``console`` blocks with ``$ `` prompts, only the prompted
  lines); ``python`` blocks are run by the project's Python.  Every other language (``json``,
  ``text``, ``http``, ``yaml`` …) is illustrative and not run.
* A block whose first line is ``# needs: <what> — not run by the docs test`` is not run, and the
  test reports it as skipped with that reason (after compiling it, or ``bash -n`` for shell, so it
  stays real code).  Only for what cannot exist here: a real Keycloak, the internet, a fresh
  machine to install onto.
* A block whose first line is ``# file: NAME`` (YAML, JSON, …) is not run but saved, without that
  line, as NAME in the page's directory, as a reader would save it, so that later blocks can use it.
* A shell block that is meant to fail says so in a leading comment, ``# expected exit 1: why``.

How a page runs (see ``_runner.py``): the blocks of one page run in page order, like a notebook,
in one fresh temporary directory that looks like the repository root to the reader's commands — a
copy of ``fixtures/`` and a ``.venv`` link to the project's virtualenv, whose ``bin`` is first on
PATH, so ``mudrika``, ``. .venv/bin/activate`` and ``fixtures/…`` paths work.  Python blocks share
one namespace; shell blocks hand their exported variables and working directory to the next block
(and to the Python blocks, through ``os.environ``).  Pages run in parallel, one process each.  The
blocks import this checkout's ``src`` (first on ``sys.path``, and ``PYTHONPATH`` for shell blocks), not
whichever checkout the shared virtualenv's editable install points at.
``REDIS_URL`` names a throwaway ``redis-server`` on 127.0.0.1 that this test starts for pages that
use it.  Network: Python blocks may resolve and connect to loopback only; shell blocks run in a
network namespace of their own (``unshare --net``) when the kernel allows it; where it does not,
they run without one and only review keeps them off the network.

Each block is one test, identified by page, block index and first line, and one block's failure never
fails another: a later block of the same page that also fails is reported as *skipped because of* the
first failure (with its own output), and after a hang nothing more of the page runs (see
``_runner.py`` for why).  Timeouts are hang guards — minutes per block — never a budget a loaded
machine could miss; if the page's runner itself has to be stopped, the blocks it finished keep their
results, the one it was running fails, and the rest are skipped as not run.  Beside the blocks, the pages' prose is held to the
tree: every ``mudrika.<wing>…`` import path and every repository file (and ``::test``) it names
must exist, so a re-layout cannot leave stale names behind.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("_runner.py")

#: Seconds one block may take before it counts as hung.  A hang guard, not a budget: the slowest
#: block takes seconds on an idle machine, and a loaded 2-core CI box must never come near this.
BLOCK_TIMEOUT = 600.0
#: What the page's runner process gets beyond the sum of its blocks' guards (start-up, imports).
PAGE_MARGIN = 120.0

SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console"})
PYTHON_LANGUAGES = frozenset({"python", "py"})

NEEDS_MARKER = re.compile(r"^\s*#\s*needs:\s*(?P<reason>\S.*)$")
FILE_MARKER = re.compile(r"^\s*#\s*file:\s*(?P<name>[A-Za-z0-9._-][A-Za-z0-9._/-]*)\s*$")
EXPECTED_EXIT = re.compile(r"^\s*#\s*expected exit (?P<code>\d+)\b")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page, classified by how the docs test treats it."""

    page: str
    index: int
    language: str
    code: str
    line: int

    @property
    def first_line(self) -> str:
        return next((text.strip() for text in self.code.splitlines() if text.strip()), "")

    @property
    def needs(self) -> str | None:
        match = NEEDS_MARKER.match(self.first_line)
        return match["reason"] if match else None

    @property
    def file_name(self) -> str | None:
        match = FILE_MARKER.match(self.first_line)
        if match is None or ".." in match["name"].split("/"):
            return None
        return match["name"]

    @property
    def kind(self) -> str:
        """``python``, ``shell``, ``file``, ``needs`` (marked, not run) or ``illustrative``."""
        if self.needs is not None:
            return "needs"
        if self.file_name is not None:
            return "file"
        if self.language in PYTHON_LANGUAGES:
            return "python"
        if self.language in SHELL_LANGUAGES:
            return "shell"
        return "illustrative"

    @property
    def expect_exit(self) -> int:
        for text in self.code.splitlines():
            if not text.strip().startswith("#"):
                break
            match = EXPECTED_EXIT.match(text)
            if match:
                return int(match["code"])
        return 0

    @property
    def runnable_code(self) -> str:
        """What is run (or, for a ``# file:`` block, saved: the content without its marker line)."""
        if self.kind == "file":
            return self.code.lstrip().partition("\n")[2]
        if self.language == "console" and any(text.startswith("$ ") for text in self.code.splitlines()):
            return "\n".join(text[2:] for text in self.code.splitlines() if text.startswith("$ "))
        return self.code

    @property
    def test_id(self) -> str:
        return f"{self.page}:{self.index}:{self.first_line[:50]}"


def extract_blocks(page: str, text: str) -> list[Block]:
    """The fenced blocks of a Markdown text, with the fence's indentation removed from their lines."""
    blocks: list[Block] = []
    lines = text.splitlines()
    position = 0
    while position < len(lines):
        opening = FENCE.match(lines[position])
        if opening is None:
            position += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        body: list[str] = []
        start = position + 1
        position = start
        while position < len(lines) and not lines[position].strip().startswith(fence):
            raw = lines[position]
            body.append(raw[len(indent) :] if raw.startswith(indent) else raw.lstrip())
            position += 1
        language = opening["info"].strip().split(" ", 1)[0].lower()
        code = "\n".join(body) + "\n"
        blocks.append(Block(page=page, index=len(blocks), language=language, code=code, line=start))
        position += 1
    return blocks


def documentation_pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@cache
def all_blocks() -> tuple[Block, ...]:
    found: list[Block] = []
    for path in documentation_pages():
        found.extend(extract_blocks(path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8")))
    return tuple(found)


def checked_blocks() -> list[Block]:
    return [block for block in all_blocks() if block.kind != "illustrative"]


@cache
def network_sandbox() -> tuple[str, ...]:
    """``unshare`` into a fresh network namespace for shell blocks, when this kernel allows it."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    argv = (unshare, "--map-root-user", "--net")
    probe = subprocess.run([*argv, "true"], capture_output=True, check=False)
    return argv if probe.returncode == 0 else ()


def _prepare_page_dir(root: Path) -> None:
    shutil.copytree(REPO / "fixtures", root / "fixtures")
    (root / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)


def _run_page(
    page: str,
    blocks: list[Block],
    extra_env: dict[str, str],
    *,
    block_timeout: float = BLOCK_TIMEOUT,
    page_budget: float | None = None,
) -> dict[int, dict[str, Any]]:
    """Run the runnable blocks of one page in one runner process; a result per block index.

    ``page_budget`` (default: every block's guard plus :data:`PAGE_MARGIN`) only matters when the
    runner itself hangs; then :func:`_page_outcome` keeps what the runner had finished.
    """
    runnable = [block for block in blocks if block.kind in {"python", "shell", "file"}]
    with tempfile.TemporaryDirectory(prefix="mudrika-docs-") as temp:
        root = Path(temp) / "repo"
        root.mkdir()
        _prepare_page_dir(root)
        spec = {
            "timeout": block_timeout,
            "network_sandbox": list(network_sandbox()),
            "src": str(REPO / "src"),
            "blocks": [
                {
                    "index": block.index,
                    "kind": block.kind,
                    "code": block.runnable_code,
                    "expect_exit": block.expect_exit,
                    "file_name": block.file_name,
                }
                for block in runnable
            ],
        }
        spec_path = Path(temp) / "spec.json"
        results_path = Path(temp) / "results.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in {"PYTHONPATH", "PYTEST_CURRENT_TEST", "COV_CORE_SOURCE", "COV_CORE_CONFIG"}
        }
        env["PATH"] = f"{Path(sys.prefix) / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}"
        env["PYTHONPATH"] = str(REPO / "src")
        env.update(extra_env)
        budget = page_budget if page_budget is not None else block_timeout * len(runnable) + PAGE_MARGIN
        stopped: str | None = None
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-W", "error", str(RUNNER), str(spec_path), str(results_path)],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=budget,
                check=False,
            )
        except subprocess.TimeoutExpired:
            stopped = f"the page runner was stopped after {budget:.0f} s while this block ran"
        else:
            if done.returncode != 0:
                output = (done.stdout + done.stderr).decode("utf-8", "replace")
                stopped = f"the page runner exited {done.returncode} while this block ran:\n{output}"
        finished: list[dict[str, Any]] = []
        if results_path.exists():
            finished = json.loads(results_path.read_text(encoding="utf-8"))
        return _page_outcome(runnable, finished, stopped)


def _page_outcome(
    runnable: list[Block], finished: list[dict[str, Any]], stopped: str | None
) -> dict[int, dict[str, Any]]:
    """Each block's result: as the runner reported it; else, for the block the runner was in when it
    stopped, ``failed`` with why (``skipped`` if an earlier block already failed); after that block,
    ``skipped`` as not run — never a failure each."""
    by_index = {entry["index"]: entry for entry in finished}
    earlier = next((entry["index"] for entry in finished if entry["status"] == "failed"), None)
    outcome: dict[int, dict[str, Any]] = {}
    blamed: int | None = None
    for block in runnable:
        if block.index in by_index:
            outcome[block.index] = by_index[block.index]
        elif blamed is None:
            blamed = block.index
            reason = stopped or "the page runner reported no result for this block"
            if earlier is None:
                outcome[block.index] = {"index": block.index, "status": "failed", "detail": reason}
            else:  # the same rule as the runner's: after the page's first failure, not another one
                reason = f"after block {earlier} of this page failed: {reason}"
                outcome[block.index] = {"index": block.index, "status": "skipped", "detail": reason}
        else:
            detail = f"not run: the page runner stopped in block {blamed}"
            outcome[block.index] = {"index": block.index, "status": "skipped", "detail": detail}
    return outcome


@pytest.fixture(scope="module")
def page_results(request: pytest.FixtureRequest) -> dict[str, dict[int, dict[str, Any]]]:
    """Run every page that has a selected block, all pages at once, each in its own process."""
    selected = {
        item.callspec.params["block"].page
        for item in request.session.items
        if hasattr(item, "callspec") and isinstance(item.callspec.params.get("block"), Block)
    }
    by_page: dict[str, list[Block]] = {}
    for block in checked_blocks():
        if block.page in selected:
            by_page.setdefault(block.page, []).append(block)
    extra_env: dict[str, str] = {}
    if any("REDIS_URL" in block.code for blocks in by_page.values() for block in blocks):
        extra_env["REDIS_URL"] = request.getfixturevalue("redis_server").url
    with ThreadPoolExecutor(max_workers=max(1, len(by_page))) as pool:
        futures = {page: pool.submit(_run_page, page, blocks, extra_env) for page, blocks in by_page.items()}
        return {page: future.result() for page, future in futures.items()}


@pytest.mark.parametrize("block", checked_blocks(), ids=lambda block: block.test_id)
def test_doc_block_runs(block: Block, page_results: dict[str, dict[int, dict[str, Any]]]) -> None:
    if block.kind == "needs":
        # Not run, but still held to the language: a marked block must not rot into pseudo-code.
        if block.language in PYTHON_LANGUAGES:
            compile(block.code, f"{block.page} block {block.index}", "exec")
        elif block.language in SHELL_LANGUAGES:
            syntax = subprocess.run(
                ["bash", "-n"], input=block.runnable_code.encode(), capture_output=True, check=False
            )
            assert syntax.returncode == 0, syntax.stderr.decode("utf-8", "replace")
        pytest.skip(f"{block.page} block {block.index} needs: {block.needs}")
    result = page_results[block.page][block.index]
    if result["status"] == "skipped":
        pytest.skip(f"{block.page} block {block.index} (line {block.line}): {result['detail']}")
    if result["status"] != "passed":
        pytest.fail(
            f"{block.page} block {block.index} (line {block.line}, {block.language}) "
            f"{result['status']}:\n{result['detail']}",
            pytrace=False,
        )


def test_every_block_names_its_language() -> None:
    """A bare fence would be silently skipped as illustrative; make the author choose."""
    bare = [f"{block.page}:{block.line}" for block in all_blocks() if not block.language]
    assert bare == [], f"fenced blocks without a language: {bare}"


def test_unrun_blocks_say_so_to_the_reader() -> None:
    """A skipped block must tell the reader, in the page itself, that the docs test does not run it."""
    unclear = [
        block.test_id
        for block in all_blocks()
        if block.needs is not None and not block.needs.endswith("not run by the docs test")
    ]
    assert unclear == [], f"'# needs:' markers must end with 'not run by the docs test': {unclear}"


def test_the_docs_test_finds_the_readme_tour() -> None:
    """Guards the harness itself: if extraction broke, every parametrised test would vanish."""
    readme = [block for block in checked_blocks() if block.page == "README.md"]
    assert {block.kind for block in readme} >= {"shell", "python"}


#: A dotted name under one of the package's wings (``mudrika.evidence/v1`` or the scope key
#: ``mudrika.principal`` are not module paths and are not matched).
DOCUMENTED_NAME = re.compile(
    r"\bmudrika\.(?:crypto|identity|trust|payments|stores|cli|errors)(?:\.[A-Za-z_][A-Za-z0-9_]*)*\b"
)
#: A repository path in backticks, optionally with ``::test_name``; wing-relative paths
#: (``crypto/jose.py``) are read under ``src/mudrika``.
DOCUMENTED_PATH = re.compile(
    r"`(?P<path>(?:tests|fixtures|bench|scripts|docs|src/mudrika|crypto|identity|trust|payments|stores|cli)"
    r"/[^`\s{}<>*…:]*)(?:::(?P<test>[A-Za-z_][A-Za-z0-9_]*))?`"
)
WING_DIRECTORIES = frozenset({"crypto", "identity", "trust", "payments", "stores", "cli"})


def _resolves(dotted: str) -> bool:
    """True when ``dotted`` is a module, or a module followed by attributes that exist."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_documented_module_paths_exist() -> None:
    """The docs name modules and objects by import path; a re-layout must move the docs with it."""
    stale = sorted(
        {
            f"{page.relative_to(REPO).as_posix()}: {name}"
            for page in documentation_pages()
            for name in DOCUMENTED_NAME.findall(page.read_text(encoding="utf-8"))
            if not _resolves(name)
        }
    )
    assert stale == [], f"documented import paths that do not exist: {stale}"


def test_documented_files_and_tests_exist() -> None:
    """Every repository file the docs point at exists, and so does every test they name in it."""
    missing: list[str] = []
    for page in documentation_pages():
        for match in DOCUMENTED_PATH.finditer(page.read_text(encoding="utf-8")):
            path = match["path"]
            base = REPO / "src" / "mudrika" if path.split("/", 1)[0] in WING_DIRECTORIES else REPO
            target = base / path
            test_missing = bool(match["test"]) and target.is_file()
            if test_missing:
                test_missing = f"def {match['test']}(" not in target.read_text(encoding="utf-8")
            if not target.exists() or test_missing:
                missing.append(f"{page.relative_to(REPO).as_posix()}: {match[0]}")
    assert missing == [], f"documented files or tests that do not exist: {missing}"


MARKED_PAGE = """\
Intro.

```bash
# needs: a real Keycloak realm — not run by the docs test
kcadm.sh get realms
```

  ```yaml
  # file: policy.yaml
  version: 1
  ```

```console
$ mudrika --help
usage: mudrika ...
```

```bash
# expected exit 1: the policy denies this caller
mudrika policy check --config policy.yaml --roles nobody --operation message/send
```

```json
{"illustrative": true}
```
"""


def test_markers_classify_blocks() -> None:
    blocks = extract_blocks("example.md", MARKED_PAGE)
    assert [block.kind for block in blocks] == ["needs", "file", "shell", "shell", "illustrative"]
    assert blocks[0].needs == "a real Keycloak realm — not run by the docs test"
    assert blocks[1].file_name == "policy.yaml"
    assert blocks[1].runnable_code == "version: 1\n"
    assert blocks[2].runnable_code == "mudrika --help"
    assert [block.expect_exit for block in blocks[2:4]] == [0, 1]


def test_file_marker_refuses_paths_out_of_the_page_directory() -> None:
    (block,) = extract_blocks("example.md", "```yaml\n# file: ../escape.yaml\nversion: 1\n```\n")
    assert block.file_name is None
    assert block.kind == "illustrative"


@pytest.mark.parametrize(
    "name", ["mudrika.trust.tokens", "mudrika.payments.verify", "mudrika.trust.keycloak.NoSuchThing"]
)
def test_a_stale_import_path_is_caught(name: str) -> None:
    assert not _resolves(name)


def test_a_current_import_path_resolves() -> None:
    assert _resolves("mudrika.trust.keycloak.tokens.AccessTokenVerifier")


CHAINED_PAGE = """\
```python
answer = 42
```

```bash
export CARRIED=yes
mkdir -p work && echo saved > work/note.txt
```

```python
import os
from pathlib import Path

assert answer == 42 and os.environ["CARRIED"] == "yes"
assert Path("work/note.txt").read_text() == "saved\\n"
```

```bash
# expected exit 3: the block says so
exit 3
```

```python
import socket

socket.getaddrinfo("example.com", 443)
defined_after_the_lookup = True
```

```python
assert defined_after_the_lookup
```

```python
print("independent of the failure")
```
"""


def test_a_page_runs_in_order_and_a_failure_is_counted_once() -> None:
    """Guards the runner: state carries from block to block, an expected exit passes, the network
    guard refuses a public name, a later block that fails because of it is skipped (not failed), and
    an independent later block still runs and passes."""
    blocks = extract_blocks("chained.md", CHAINED_PAGE)
    results = _run_page("chained.md", blocks, {})
    assert [results[index]["status"] for index in range(7)] == [
        "passed",
        "passed",
        "passed",
        "passed",
        "failed",
        "skipped",
        "passed",
    ]
    assert "only loopback may be used" in results[4]["detail"]
    assert "failed after block 4" in results[5]["detail"]
    assert "NameError" in results[5]["detail"]  # the skipped block's own output is kept


HUNG_PAGE = """\
```python
import threading

threading.Event().wait()
```

```python
print("after the hang")
```
"""


def test_a_hung_block_fails_alone_and_stops_its_page() -> None:
    """The hang guard fires (a small guard here: the block never returns, so no machine is too slow
    for it), the block fails, and the rest of the page is skipped as not run."""
    results = _run_page("hung.md", extract_blocks("hung.md", HUNG_PAGE), {}, block_timeout=2.0)
    assert [results[index]["status"] for index in range(2)] == ["failed", "skipped"]
    assert "timed out" in results[0]["detail"]
    assert "not run" in results[1]["detail"]


UNINTERRUPTIBLE_PAGE = """\
```python
import signal
import threading

signal.setitimer(signal.ITIMER_REAL, 0)  # defeat the runner's own guard: only the page budget is left
threading.Event().wait()
```

```python
print("after the hang")
```
"""


def test_a_stopped_runner_blames_one_block_and_skips_the_rest() -> None:
    blocks = extract_blocks("stuck.md", UNINTERRUPTIBLE_PAGE)
    results = _run_page("stuck.md", blocks, {}, page_budget=5.0)
    assert [results[index]["status"] for index in range(2)] == ["failed", "skipped"]
    assert "stopped after 5 s" in results[0]["detail"]


def test_finished_blocks_keep_their_results_when_the_runner_stops() -> None:
    blocks = [Block("p.md", index, "python", "pass\n", index) for index in range(4)]
    stopped = "the page runner exited -9 while this block ran"
    finished: list[dict[str, Any]] = [{"index": 0, "status": "passed", "detail": ""}]
    outcome = _page_outcome(blocks, finished, stopped)
    assert [outcome[index]["status"] for index in range(4)] == ["passed", "failed", "skipped", "skipped"]
    assert outcome[1]["detail"] == stopped
    assert outcome[2]["detail"] == outcome[3]["detail"] == "not run: the page runner stopped in block 1"
    finished.append({"index": 1, "status": "failed", "detail": "its own failure"})
    outcome = _page_outcome(blocks, finished, stopped)
    assert [outcome[index]["status"] for index in range(4)] == ["passed", "failed", "skipped", "skipped"]
    assert outcome[2]["detail"] == f"after block 1 of this page failed: {stopped}"
