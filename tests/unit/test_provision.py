"""Provisioning: every key type and DID method, file modes, re-runs that never replace the key."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from mudrika.crypto.keys import KeyType, PublicKey
from mudrika.crypto.keystore import load_private_key
from mudrika.errors import InvalidInput, KeyStoreError
from mudrika.identity.csr import inspect_csr
from mudrika.identity.methods import bindu
from mudrika.identity.provision import DidMethod, provision
from mudrika.identity.resolver import DIDResolver

PASSWORD = b"provision-password"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("key_type", list(KeyType), ids=[t.value for t in KeyType])
@pytest.mark.parametrize("method", ["key", "jwk", "web", "bindu"])
def test_provision_every_key_type_and_method(tmp_path: Path, key_type: KeyType, method: DidMethod) -> None:
    out = tmp_path / "agent"
    endpoint = None if method in ("key", "jwk") else "https://agent.example.com/a2a"
    result = provision(
        name="payments-agent",
        out_dir=out,
        password=PASSWORD,
        key_type=key_type,
        method=method,
        author="ops@example.com",
        web_host="agents.example.com",
        web_path="payments",
        endpoint=endpoint,
        agentdns_url="https://agentdns.example.com/payments-agent",
    )
    identity = result.identity
    assert identity.did.startswith(f"did:{method}:")
    assert _mode(out) == 0o700
    for path in result.files.values():
        assert _mode(path) == 0o600, path
    pair = load_private_key(out / "private.pem", PASSWORD)
    assert pair.key_type is key_type
    assert PublicKey.from_pem(identity.public_key) == pair.public_key

    written = json.loads((out / "identity.json").read_text())
    assert written == identity.to_json()
    assert set(written) == {"did", "did_document", "public_key", "csr", "agentdns_url"} | (
        {"endpoint"} if endpoint else set()
    )
    assert identity.did_document["id"] == identity.did

    csr = inspect_csr((out / "agent.csr").read_bytes())
    assert csr.common_name == "payments-agent"
    assert csr.dids == (identity.did,)
    assert csr.public_key == pair.public_key

    if method in ("key", "jwk"):
        resolved = DIDResolver().resolve_key(
            f"{identity.did}{identity.did_document['verificationMethod'][0]['id'].removeprefix(identity.did)}",
            "assertionMethod",
        )
        assert resolved == pair.public_key
    if method == "bindu":
        document = bindu.verify_document(identity.did, identity.did_document)
        assert document.id == identity.did
    if method == "web":
        assert result.files["web_did_json"] == out / "web" / "payments" / "did.json"


def test_rerun_reuses_the_key_and_keeps_the_did(tmp_path: Path) -> None:
    out = tmp_path / "agent"
    first = provision(name="a", out_dir=out, password=PASSWORD, method="bindu", author="ops")
    key_bytes = (out / "private.pem").read_bytes()
    second = provision(
        name="a", out_dir=out, password=PASSWORD, method="bindu", author="ops", endpoint="https://a.example/x"
    )
    assert first.key_created
    assert not second.key_created
    assert second.identity.did == first.identity.did
    assert (out / "private.pem").read_bytes() == key_bytes
    assert second.identity.endpoint == "https://a.example/x"


def test_rerun_with_wrong_password_fails_and_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "agent"
    provision(name="a", out_dir=out, password=PASSWORD)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(InvalidInput):
        provision(name="a", out_dir=out, password=b"another-password")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_rerun_never_switches_key_type(tmp_path: Path) -> None:
    out = tmp_path / "agent"
    provision(name="a", out_dir=out, password=PASSWORD, key_type=KeyType.ED25519)
    with pytest.raises(KeyStoreError) as info:
        provision(name="a", out_dir=out, password=PASSWORD, key_type=KeyType.P256)
    assert info.value.code == "key_type_mismatch"


def test_a_recreated_key_is_a_different_bindu_did(tmp_path: Path) -> None:
    one = provision(name="a", out_dir=tmp_path / "one", password=PASSWORD, method="bindu", author="ops")
    two = provision(name="a", out_dir=tmp_path / "two", password=PASSWORD, method="bindu", author="ops")
    assert one.identity.did != two.identity.did


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"method": "key", "endpoint": "https://a.example"}, "endpoint_not_supported"),
        ({"method": "web"}, "missing_host"),
        ({"method": "bindu"}, "missing_author"),
        ({"method": "bindu", "author": "ops", "endpoint": "ftp://x"}, "bad_endpoint"),
        ({"agentdns_url": "http://plain.example"}, "bad_agentdns_url"),
    ],
)
def test_bad_options_are_refused(tmp_path: Path, kwargs: dict[str, str], code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        provision(name="a", out_dir=tmp_path / "agent", password=PASSWORD, **kwargs)  # type: ignore[arg-type]
    assert info.value.code == code
