"""Run the code blocks of one documentation page in order, the way a reader follows the page.

Started by ``tests/docs/test_docs.py`` as ``python -I _runner.py SPEC RESULTS`` with the page's
working directory as cwd.  Why a runner process instead of one subprocess per block: a page reads
top to bottom like a notebook — a Python block uses the names an earlier Python block defined, a
shell block uses the files and the exported variables an earlier block left — so the blocks of a
page must share one namespace, one directory and one environment, in page order.

SPEC is JSON: ``{"blocks": [{"index", "kind", "code", "expect_exit", "file_name"}], "timeout",
"network_sandbox": [argv prefix]}``.  ``kind`` is ``python``, ``shell`` or ``file``.  RESULTS is
written as JSON: one ``{"index", "status", "detail"}`` per block, ``status`` one of ``passed``,
``failed`` or ``not_reached`` (an earlier block failed, so this one's inputs do not exist).
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import os
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


def _run_python(code: str, namespace: dict[str, Any], index: int) -> tuple[bool, str]:
    out = io.StringIO()
    try:
        compiled = compile(code, f"<block {index}>", "exec")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(compiled, namespace)
    except BaseException:
        return False, _cap(out.getvalue() + traceback.format_exc())
    return True, _cap(out.getvalue())


def _run_shell(
    code: str, expect_exit: int, timeout: float, sandbox: list[str], state_dir: Path
) -> tuple[bool, str]:
    """One shell block under ``bash -e -o pipefail``; its exported environment and cwd carry on."""
    env_file = state_dir / "env"
    cwd_file = state_dir / "cwd"
    script = state_dir / "block.sh"
    # The trailer runs only when the block's own commands all succeeded (errexit), which is exactly
    # when later blocks may build on it.
    env_file.unlink(missing_ok=True)
    cwd_file.unlink(missing_ok=True)
    script.write_text(f'{code}\n\nenv -0 > "{env_file}"\npwd > "{cwd_file}"\n', encoding="utf-8")
    try:
        done = subprocess.run(
            [*sandbox, "bash", "-e", "-o", "pipefail", str(script)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            env=dict(os.environ),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f} s"
    output = done.stdout.decode("utf-8", "replace")
    if done.returncode != expect_exit:
        return False, _cap(f"exit {done.returncode}, expected {expect_exit}\n{output}")
    if expect_exit == 0 and env_file.exists() and cwd_file.exists():
        exported = env_file.read_bytes().split(b"\0")
        os.environ.clear()
        for entry in exported:
            name, sep, value = entry.partition(b"=")
            if sep and name:
                os.environb[name] = value
        os.chdir(cwd_file.read_text(encoding="utf-8").strip())
    return True, _cap(output)


def main(spec_path: str, results_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    _guard_network()
    namespace: dict[str, Any] = {"__name__": "__main__"}
    results: list[dict[str, Any]] = []
    failed_at: int | None = None
    with tempfile.TemporaryDirectory(prefix="docs-shell-") as state:
        for block in spec["blocks"]:
            index = block["index"]
            if failed_at is not None:
                detail = f"block {failed_at} of this page failed first"
                results.append({"index": index, "status": "not_reached", "detail": detail})
                continue
            if block["kind"] == "file":
                target = Path(block["file_name"])
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block["code"], encoding="utf-8")
                ok, detail = True, f"written to {block['file_name']}"
            elif block["kind"] == "python":
                ok, detail = _run_python(block["code"], namespace, index)
            else:
                ok, detail = _run_shell(
                    block["code"], block["expect_exit"], spec["timeout"], spec["network_sandbox"], Path(state)
                )
            results.append({"index": index, "status": "passed" if ok else "failed", "detail": detail})
            if not ok:
                failed_at = index
    Path(results_path).write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
