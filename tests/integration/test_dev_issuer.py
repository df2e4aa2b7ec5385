"""``mudrika dev issuer`` is a Keycloak stand-in that ``protect()`` accepts unchanged.

The issuer runs as its own process, exactly as a developer starts it (one command, a free port);
discovery and the JWKS are fetched over HTTP at Keycloak's paths; tokens come both from
``mudrika dev token`` and from the token endpoint; and a real ``protect()``-ed app, configured with
nothing but the issuer URL and the audience, admits the role the policy grants and refuses (403) a
token without it.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mudrika.cli import main
from mudrika.cli.dev import ISSUER_KEY_FILE
from mudrika.trust.middleware import protect
from tests._support.cli import run_cli
from tests._support.paths import REPO_ROOT
from tests._support.processes import stop_process

POLICY = (
    "version: 1\nroles:\n  - {role_id: r-1, role_name: agent, realm_name: dev, trust_level: operator}\n"
    "operations:\n  message/send: {min_level: operator}\n"
)
SEND = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}


@pytest.fixture
def issuer(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A running ``mudrika dev issuer`` on a free port, and what it printed with --json."""
    directory = tmp_path / "issuer"
    argv = [
        sys.executable, "-c", "import sys; from mudrika.cli import main; sys.exit(main())",
        "dev", "issuer", "--issuer-dir", str(directory), "--port", "0", "--json",
        "--client", "shop-agent:dev-secret", "--role", "agent", "--aud", "agent-api", "--scope", "a2a",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src") + os.pathsep + str(REPO_ROOT)}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:  # the JSON document is printed once the port is bound
            lines.append(line)
            if line.rstrip() == "}":
                break
        assert lines, proc.stderr.read() if proc.stderr else ""
        yield {**json.loads("".join(lines)), "dir": directory}
    finally:
        stop_process(proc, timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()


async def _downstream(scope: Any, receive: Any, send: Any) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": "sent"}).encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": body})


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return decoded


@pytest.mark.anyio
async def test_protect_accepts_the_dev_issuers_tokens_unchanged(
    issuer: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    realm = issuer["issuer"]
    assert realm.startswith("http://127.0.0.1:")
    assert realm.endswith("/realms/dev")
    key_file = issuer["dir"] / ISSUER_KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    async with httpx.AsyncClient() as http:
        discovery = (await http.get(realm + "/.well-known/openid-configuration")).json()
        assert discovery["issuer"] == realm
        assert discovery["jwks_uri"] == realm + "/protocol/openid-connect/certs"
        jwks = (await http.get(discovery["jwks_uri"])).json()
        (jwk,) = jwks["keys"]
        assert (jwk["kty"], jwk["alg"], jwk["kid"]) == ("RSA", "RS256", issuer["kid"])
        assert "d" not in jwk
        fetched = await http.post(
            discovery["token_endpoint"],
            data={"grant_type": "client_credentials", "scope": "a2a"},
            auth=("shop-agent", "dev-secret"),
        )
        assert fetched.status_code == 200
        wrong_secret = await http.post(
            discovery["token_endpoint"],
            data={"grant_type": "client_credentials"},
            auth=("shop-agent", "guess"),
        )
        assert wrong_secret.status_code == 401
        assert wrong_secret.json()["error"] == "invalid_client"
    served_token = fetched.json()["access_token"]
    claims = _claims(served_token)
    assert claims["iss"] == realm
    assert claims["aud"] == "agent-api"
    assert claims["azp"] == "shop-agent"
    assert claims["typ"] == "Bearer"
    assert claims["realm_access"] == {"roles": ["agent"]}
    assert claims["scope"] == "a2a"
    assert {"sub", "exp", "iat", "jti"} <= set(claims)
    assert key_file.read_text() not in fetched.text

    code, agent_token, _ = run_cli(
        capsys, "dev", "token", "--issuer-dir", str(issuer["dir"]), "--role", "agent", "--aud", "agent-api"
    )
    assert code == 0
    code, viewer_token, _ = run_cli(
        capsys, "dev", "token", "--issuer-dir", str(issuer["dir"]), "--role", "viewer", "--aud", "agent-api"
    )
    assert code == 0

    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    app = protect(_downstream, policy=policy, realm=realm, audience="agent-api")
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://agent"
        ) as client:

            async def send(token: str | None) -> httpx.Response:
                headers = {} if token is None else {"authorization": f"Bearer {token.strip()}"}
                return await client.post("/", json=SEND, headers=headers)

            admitted = await send(agent_token)
            assert admitted.status_code == 200, admitted.text
            assert admitted.json()["result"] == "sent"
            assert (await send(served_token)).status_code == 200
            refused = await send(viewer_token)
            assert refused.status_code == 403, refused.text
            assert (await send(None)).status_code == 401
    finally:
        await app.aclose()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "localhost"])
def test_the_dev_issuer_binds_loopback_only(
    host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "dev", "issuer", "--issuer-dir", str(tmp_path / "i"), "--host", host)
    assert code == 2
    assert "(not_loopback" in err
    assert not (tmp_path / "i").exists()  # refused before anything was created


def test_dev_token_needs_the_issuer_to_have_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dev", "token", "--issuer-dir", str(tmp_path / "never-started"), "--role", "agent"]) == 1
    assert "(no_issuer" in capsys.readouterr().err
