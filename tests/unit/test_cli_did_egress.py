"""``mudrika did resolve`` goes through the egress policy; ``--allow-private-network`` is the explicit,
logged development opt-in.  A loopback listener shows which of the two ever connects."""

from __future__ import annotations

import logging
import sys
from typing import Any

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


ONION = "did:onion:fscst5exmlmr262byztwz4kzhggjlzumvc2ndvgytzoucr2tkgxf7mid"


def test_an_unnamed_method_is_refused_and_didkit_never_dials(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The red team's case: did:onion made the default `did resolve` hand the DID to didkit, which
    # dialled the Tor proxy on 127.0.0.1:9050.  Now nothing is handed to didkit unless named.
    asked: list[str] = []

    def load_didkit() -> Any:
        asked.append("didkit")
        raise AssertionError("didkit must not be loaded for a method nobody named")

    monkeypatch.setattr("mudrika.identity.resolver._didkit.load_didkit", load_didkit)
    assert main(["did", "resolve", ONION]) == 1
    err = capsys.readouterr().err
    assert "methodNotSupported" in err or "not supported" in err
    assert asked == []


def test_a_named_method_goes_to_didkit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "didkit", None)  # so the answer shows didkit was the one asked
    assert main(["did", "resolve", "--didkit-method", "onion", ONION]) == 1
    assert "needs didkit" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["--didkit-method", "web", "did:web:example.com"],  # did:web only through the egress policy
        ["--didkit-method", "key", "did:web:example.com"],  # has its own driver
        ["--snapshot", "x.json", "--didkit-method", "pkh", ONION],
    ],
)
def test_didkit_options_that_would_bypass_the_policy_are_usage_errors(argv: list[str]) -> None:
    assert main(["did", "resolve", *argv]) == 2
