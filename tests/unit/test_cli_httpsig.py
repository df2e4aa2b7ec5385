"""``mudrika httpsig sign`` then ``mudrika httpsig verify``: the CLI round trip, per profile, offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mudrika.crypto.keys import KeyPair
from mudrika.crypto.keystore import write_private_key
from tests._support.cli import run_cli_json
from tests._support.offline import forbid_network

PASSWORD = "cli-httpsig-password"
PW = ("--password-env", "MUDRIKA_CLI_HTTPSIG_PW")
URL = "https://shop.example/checkout?step=2"


@pytest.fixture
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[KeyPair, str]:
    monkeypatch.setenv("MUDRIKA_CLI_HTTPSIG_PW", PASSWORD)
    forbid_network(monkeypatch)
    pair = KeyPair.generate("ed25519")
    path = tmp_path / "keys" / "private.pem"
    write_private_key(path, pair, PASSWORD.encode())
    return pair, str(path)


def _request_file(tmp_path: Path, headers: dict[str, str]) -> str:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"method": "GET", "url": URL, "headers": headers}))
    return str(path)


def test_web_bot_auth_sign_then_verify(
    tmp_path: Path, key: tuple[KeyPair, str], capsys: pytest.CaptureFixture[str]
) -> None:
    pair, key_file = key
    code, signed, _ = run_cli_json(
        capsys, "httpsig", "sign", "--profile", "web-bot-auth", "--url", URL, "--key", key_file,
        "--signature-agent", "https://agent.example", *PW, "--json",
    )  # fmt: skip
    assert code == 0
    directory = tmp_path / "jwks.json"
    directory.write_text(json.dumps({"keys": [pair.public_key.to_jwk()]}))
    code, verified, _ = run_cli_json(
        capsys, "httpsig", "verify", "--request", _request_file(tmp_path, signed["headers"]),
        "--origin", "https://shop.example", "--directory", f"https://agent.example={directory}", "--json",
    )  # fmt: skip
    assert code == 0
    assert (verified["profile"], verified["agent"]) == ("web-bot-auth", "https://agent.example")
    assert verified["thumbprint"] == pair.public_key.thumbprint()
    # Without the agent's key set the same request is refused: exit 1, the key is unknown.
    code, refused, _ = run_cli_json(
        capsys, "httpsig", "verify", "--request", _request_file(tmp_path, signed["headers"]),
        "--origin", "https://shop.example", "--json",
    )  # fmt: skip
    assert code == 1
    assert refused["error"]["code"] == "directory_not_allowed"


def test_tap_sign_then_verify_with_the_profile_required(
    tmp_path: Path, key: tuple[KeyPair, str], capsys: pytest.CaptureFixture[str]
) -> None:
    pair, key_file = key
    code, signed, _ = run_cli_json(
        capsys, "httpsig", "sign", "--profile", "agent-payer-auth", "--url", URL, "--key", key_file,
        "--keyid", "payer-1", *PW, "--json",
    )  # fmt: skip
    assert code == 0
    jwks = tmp_path / "registry.json"
    jwks.write_text(json.dumps({"keys": [{**pair.public_key.to_jwk(), "kid": "payer-1"}]}))
    request = _request_file(tmp_path, signed["headers"])
    trust = (
        "--origin",
        "https://shop.example",
        "--tap-registry",
        "https://registry.example/jwks",
        "--tap-jwks",
        str(jwks),
    )
    code, verified, _ = run_cli_json(
        capsys, "httpsig", "verify", "--request", request, *trust, "--profile", "agent-payer-auth", "--json"
    )
    assert code == 0
    assert verified["agent"] == "https://registry.example/jwks#payer-1"
    code, refused, _ = run_cli_json(
        capsys, "httpsig", "verify", "--request", request, *trust, "--profile", "web-bot-auth", "--json"
    )
    assert code == 2
    assert refused["error"]["code"] == "wrong_tag"
