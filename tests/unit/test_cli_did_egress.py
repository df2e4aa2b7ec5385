"""``mudrika did resolve`` goes through the egress policy; ``--allow-private-network`` is the explicit,
logged development opt-in.  A loopback listener shows which of the two ever connects."""

from __future__ import annotations

import logging

import pytest

from mudrika.cli import main
from tests._support.served import canary


def test_did_web_on_loopback_is_refused_without_the_opt_in(capsys: pytest.CaptureFixture[str]) -> None:
    with canary() as listener:
        assert main(["did", "resolve", f"did:web:localhost%3A{listener.port}"]) == 1
        assert listener.connections == 0
    assert "egress" in capsys.readouterr().err


def test_the_opt_in_reaches_loopback_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with canary() as listener, caplog.at_level(logging.WARNING, logger="mudrika.net.egress"):
        # The canary speaks no TLS: the resolution fails, but only after connecting.
        assert (
            main(["did", "resolve", "--allow-private-network", f"did:web:localhost%3A{listener.port}"]) == 1
        )
        connections = listener.connections
    assert connections >= 1
    assert "allows private networks" in caplog.text
