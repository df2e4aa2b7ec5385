"""One way to ask a node interop peer (a script under tests/node) a question.

Every peer script reads one JSON document on stdin and writes one JSON document on stdout; the
tests only differ in the script and the payload, so the process handling lives here once.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests._support.paths import NODE_DIR, node_peer


def run_node_peer(script: str, payload: object, *, timeout: float = 60) -> Any:
    """Run ``tests/node/<script>`` with ``payload`` as JSON on stdin and return its decoded stdout.

    Skips the test when node or the peers' install is missing (:func:`node_peer`). A peer that fails
    fails the test with the tail of its stderr, because node's stack trace is what explains it.
    """
    node_peer()
    result = subprocess.run(
        ["node", str(NODE_DIR / script)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=NODE_DIR,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    return json.loads(result.stdout)
