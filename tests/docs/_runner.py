"""Run the code blocks of one documentation page in order, the way a reader follows the page.

Started by ``tests/docs/test_docs.py`` as ``python -I _runner.py SPEC RESULTS`` with the page's
working directory as cwd.  Why a runner process instead of one subprocess per block: a page reads
top to bottom like a notebook — a Python block uses the names an earlier Python block defined, a
shell block uses the files and the exported variables an earlier block left — so the blocks of a
page must share one namespace, one directory and one environment, in page order.

SPEC is JSON: ``{"blocks": [{"index", "kind", "code", "expect_exit", "file_name"}], "timeout",
"network_sandbox": [argv prefix], "src"}``.  ``kind`` is ``python``, ``shell`` or ``file``;
``src`` (optional) is put first on ``sys.path`` so the blocks import the checkout under test, not
whichever checkout the shared virtualenv was installed from.  RESULTS is JSON: one ``{"index",
"status", "detail"}`` per block, rewritten (atomically) after every block, so that the caller still
knows what finished if it has to stop this process.

**One failure is one failure.**  Blocks may depend on what earlier blocks left, and nothing tells
which do, so a failure is reported once and what follows is judged in its light:

* ``passed`` / ``failed``: the block ran and did / did not do what the page says — ``failed`` only
  for the *first* block of the page that fails;
* ``skipped``: a block after the first failure that also failed.  It still ran (so an independent
  later block that passes is still reported ``passed``), but its failure may well be the earlier
  block's missing state, so it is reported, with its own output, as skipped *because of* that block
  instead of as another failure.  Fixing the first failure shows whether it had a failure of its own;
* after a block that **timed out** nothing more runs (``skipped``, "not run"): a hung block leaves
  servers and files in an unknown state, and a second hang would only multiply the wait.

The per-block ``timeout`` is a hang guard, not a budget: it is minutes, so a loaded machine never
reaches it; Python blocks get it through ``SIGALRM``, shell blocks through the subprocess (their whole
process group is killed, so a background child cannot keep the runner waiting on its pipe).
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

#: Output kept per block in the results: enough to see why it failed, never a flood.
MAX_DETAIL_CHARS = 6000

_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect


def _loopback_host(host: object) -> bool:
    if host in (None, "localhost"):
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    """Refuse to resolve any name but loopback: a doc example must never reach the internet."""
    if not _loopback_host(host):
        raise OSError(f"docs test: name resolution of {host!r} refused (only loopback may be used)")
    return _real_getaddrinfo(host, *args, **kwargs)


def _guarded_connect(sock: socket.socket, address: Any) -> None:
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback_host(address[0]):
        raise OSError(f"docs test: connection to {address[0]!r} refused (only loopback may be used)")
    _real_connect(sock, address)


def _guard_network() -> None:
    """Python blocks run in this process: patch name resolution and connect to loopback only."""
    socket.getaddrinfo = _guarded_getaddrinfo
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign,assignment]


def _cap(text: str) -> str:
    return text if len(text) <= MAX_DETAIL_CHARS else "…" + text[-MAX_DETAIL_CHARS:]


class BlockTimedOut(BaseException):
    """Raised into a Python block by the alarm; a BaseException so the block's own ``except
    Exception`` cannot swallow it."""


def _alarm(_signum: int, _frame: object) -> None:
    raise BlockTimedOut


def _run_python(code: str, namespace: dict[str, Any], index: int, timeout: float) -> tuple[str, str]:
    """Run one Python block in the page's namespace; ``(status, detail)``, status ``passed``,
    ``failed`` or ``timed_out``."""
    out = io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        compiled = compile(code, f"<block {index}>", "exec")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                exec(compiled, namespace)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except BlockTimedOut:
        return "timed_out", _cap(f"timed out after {timeout:.0f} s (a hang guard)\n{out.getvalue()}")
    except BaseException:
        return "failed", _cap(out.getvalue() + traceback.format_exc())
    finally:
        signal.signal(signal.SIGALRM, previous)
    return "passed", _cap(out.getvalue())


def _run_shell(
    code: str, expect_exit: int, timeout: float, sandbox: list[str], state_dir: Path
) -> tuple[str, str]:
    """One shell block under ``bash -e -o pipefail``; its exported environment and cwd carry on."""
    env_file = state_dir / "env"
    cwd_file = state_dir / "cwd"
    script = state_dir / "block.sh"
    # The trailer runs only when the block's own commands all succeeded (errexit), which is exactly
    # when later blocks may build on it.
    env_file.unlink(missing_ok=True)
    cwd_file.unlink(missing_ok=True)
    script.write_text(f'{code}\n\nenv -0 > "{env_file}"\npwd > "{cwd_file}"\n', encoding="utf-8")
    process = subprocess.Popen(
        [*sandbox, "bash", "-e", "-o", "pipefail", str(script)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(os.environ),
        start_new_session=True,  # its own process group: a timeout kills the block's children too
    )
    try:
        stdout, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, _ = process.communicate()
        output = stdout.decode("utf-8", "replace")
        return "timed_out", _cap(f"timed out after {timeout:.0f} s (a hang guard)\n{output}")
    output = stdout.decode("utf-8", "replace")
    if process.returncode != expect_exit:
        return "failed", _cap(f"exit {process.returncode}, expected {expect_exit}\n{output}")
    if expect_exit == 0 and env_file.exists() and cwd_file.exists():
        exported = env_file.read_bytes().split(b"\0")
        os.environ.clear()
        for entry in exported:
            name, sep, value = entry.partition(b"=")
            if sep and name:
                os.environb[name] = value
        os.chdir(cwd_file.read_text(encoding="utf-8").strip())
    return "passed", _cap(output)


def _run_block(
    block: dict[str, Any], spec: dict[str, Any], namespace: dict[str, Any], state: Path
) -> tuple[str, str]:
    if block["kind"] == "file":
        target = Path(block["file_name"])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["code"], encoding="utf-8")
        return "passed", f"written to {block['file_name']}"
    if block["kind"] == "python":
        return _run_python(block["code"], namespace, block["index"], spec["timeout"])
    return _run_shell(block["code"], block["expect_exit"], spec["timeout"], spec["network_sandbox"], state)


def _write_results(results_path: Path, results: list[dict[str, Any]]) -> None:
    """Replace RESULTS atomically: a reader never sees half a JSON document."""
    temp = results_path.with_name(results_path.name + ".tmp")
    temp.write_text(json.dumps(results), encoding="utf-8")
    os.replace(temp, results_path)


def main(spec_path: str, results_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    if spec.get("src"):
        sys.path.insert(0, spec["src"])
    _guard_network()
    namespace: dict[str, Any] = {"__name__": "__main__"}
    results: list[dict[str, Any]] = []
    first_failure: int | None = None
    timed_out: int | None = None
    results_file = Path(results_path).resolve()  # blocks may change the working directory
    with tempfile.TemporaryDirectory(prefix="docs-shell-") as state:
        for block in spec["blocks"]:
            index = block["index"]
            if timed_out is not None:
                detail = f"not run: block {timed_out} of this page timed out first"
                results.append({"index": index, "status": "skipped", "detail": detail})
                continue
            outcome, detail = _run_block(block, spec, namespace, Path(state))
            if outcome == "passed":
                status = "passed"
            elif first_failure is None:
                status, first_failure = "failed", index
            else:
                status = "skipped"
                detail = (
                    f"failed after block {first_failure} of this page failed, so possibly because of it "
                    f"(not counted as another failure); its own output:\n{detail}"
                )
            if outcome == "timed_out":
                timed_out = index
            results.append({"index": index, "status": status, "detail": detail})
            _write_results(results_file, results)
    _write_results(results_file, results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
