"""``mudrika trust-root`` and key validity windows: add with a window, revoke, rotate, show; the refusals.

Every command writes through the strict loader, so what is tested here is what the commands decide:
which keys a window goes to, that a revocation is never replaced or dropped silently, that a
rotation keeps the old key pinned, and that an unknown owner or kid is an error, not a no-op.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.identity.anchoring import KeyValidity
from mudrika.payments.trustroot import load_trust_root
from tests._support.cli import run_cli, run_cli_json

ISSUER = "https://issuer.example"
MERCHANT = "did:web:shop.example"
OCTOBER = datetime(2026, 10, 1, tzinfo=UTC)
JANUARY = datetime(2026, 1, 1, tzinfo=UTC)
KEYS = [KeyPair.generate("ed25519").public_key for _ in range(4)]


def _jwks_file(tmp_path: Path, name: str, *keys: tuple[PublicKey, str]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"keys": [{**key.to_jwk(), "kid": kid} for key, kid in keys]}))
    return str(path)


def _document_file(tmp_path: Path, name: str, *methods: tuple[PublicKey, str]) -> str:
    path = tmp_path / name
    path.write_text(
        json.dumps(
            {
                "id": MERCHANT,
                "verificationMethod": [
                    {
                        "id": f"{MERCHANT}#{fragment}",
                        "type": "JsonWebKey2020",
                        "controller": MERCHANT,
                        "publicKeyJwk": key.to_jwk(),
                    }
                    for key, fragment in methods
                ],
                "assertionMethod": [f"#{fragment}" for _, fragment in methods],
            }
        )
    )
    return str(path)


@pytest.fixture
def root(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    """A trust root pinning one issuer (JWK Set, two keys) and one merchant (DID document, one key)."""
    path = tmp_path / "root.json"
    assert run_cli(capsys, "trust-root", "init", str(path))[0] == 0
    jwks = _jwks_file(tmp_path, "issuer.json", (KEYS[0], "i-1"), (KEYS[1], "i-2"))
    assert run_cli(capsys, "trust-root", "add-issuer", str(path), ISSUER, "--jwks", jwks)[0] == 0
    document = _document_file(tmp_path, "shop.json", (KEYS[2], "cart-1"))
    assert (
        run_cli(capsys, "trust-root", "add-merchant", str(path), MERCHANT, "--did-document", document)[0] == 0
    )
    return path


def test_add_gives_every_added_key_the_window(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path
) -> None:
    jwks = _jwks_file(tmp_path, "issuer.json", (KEYS[0], "i-1"), (KEYS[1], "i-2"))
    code, _, err = run_cli(
        capsys,
        "trust-root",
        "add-issuer",
        str(root),
        ISSUER,
        "--jwks",
        jwks,
        "--valid-from",
        "2026-01-01T01:00:00+01:00",  # any offset is accepted and written in UTC
        "--valid-until",
        str(int(OCTOBER.timestamp())),  # and UNIX seconds
    )
    assert code == 0, err
    loaded = load_trust_root(root)
    expected = KeyValidity(valid_from=JANUARY, valid_until=OCTOBER)
    assert [loaded.validity_of("issuer", ISSUER, kid) for kid in ("i-1", "i-2")] == [expected, expected]
    written = json.loads(root.read_text())["issuers"][ISSUER]["key_windows"]
    assert written["i-1"] == {"valid_from": "2026-01-01T00:00:00Z", "valid_until": "2026-10-01T00:00:00Z"}
    document = _document_file(tmp_path, "shop.json", (KEYS[2], "cart-1"))
    code, _, err = run_cli(
        capsys,
        "trust-root",
        "add-merchant",
        str(root),
        MERCHANT,
        "--did-document",
        document,
        "--valid-from",
        "2026-01-01T00:00:00Z",
    )
    assert code == 0, err
    assert load_trust_root(root).validity_of("merchant", MERCHANT, f"{MERCHANT}#cart-1") == KeyValidity(
        valid_from=JANUARY
    )


def test_add_refuses_a_bad_window_and_keeps_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path
) -> None:
    before = root.read_bytes()
    jwks = _jwks_file(tmp_path, "issuer.json", (KEYS[0], "i-1"))
    add = ("trust-root", "add-issuer", str(root), ISSUER, "--jwks", jwks)
    code, _, err = run_cli(
        capsys, *add, "--valid-from", "2026-10-01T00:00:00Z", "--valid-until", "2026-10-01T00:00:00Z"
    )
    assert code == 2
    assert "valid_from must be before valid_until" in err
    code, _, err = run_cli(capsys, *add, "--valid-from", "2026-10-01T00:00:00")
    assert code == 2
    assert "--valid-from" in err
    assert root.read_bytes() == before


def test_revoke_records_and_never_replaces_silently(capsys: pytest.CaptureFixture[str], root: Path) -> None:
    revoke = ("trust-root", "revoke-key", str(root), "--owner", MERCHANT, "--kid", "#cart-1")
    code, _, err = run_cli(
        capsys, *revoke, "--at", "2026-10-01T00:00:00Z", "--reason", "superseded", "--note", "n1"
    )
    assert code == 0, err
    kid = f"{MERCHANT}#cart-1"
    assert load_trust_root(root).validity_of("merchant", MERCHANT, kid) == KeyValidity(
        revoked_at=OCTOBER, reason="superseded"
    )
    # The same revocation again changes nothing and does not rewrite the file.
    before = root.read_bytes()
    code, _, err = run_cli(capsys, *revoke, "--at", "2026-10-01T00:00:00Z", "--reason", "superseded")
    assert code == 0
    assert "unchanged" in err
    assert root.read_bytes() == before
    # A different one is refused without --force.
    code, _, err = run_cli(capsys, *revoke, "--at", "2026-11-01T00:00:00Z", "--reason", "compromised")
    assert code == 1
    assert "already superseded since 2026-10-01T00:00:00Z" in err
    assert root.read_bytes() == before
    # With --force, a superseded key reported compromised later keeps its supersession as its end.
    code, _, err = run_cli(
        capsys, *revoke, "--at", "2026-11-01T00:00:00Z", "--reason", "compromised", "--force"
    )
    assert code == 0, err
    assert load_trust_root(root).validity_of("merchant", MERCHANT, kid) == KeyValidity(
        valid_until=OCTOBER, revoked_at=datetime(2026, 11, 1, tzinfo=UTC), reason="compromised"
    )
    window = json.loads(root.read_text())["merchants"][MERCHANT]["key_windows"][kid]
    assert window["note"] == "n1"


def test_revoke_refuses_unknown_owners_and_kids(capsys: pytest.CaptureFixture[str], root: Path) -> None:
    before = root.read_bytes()
    at = ("--at", "2026-10-01T00:00:00Z", "--reason", "compromised")
    code, _, err = run_cli(
        capsys, "trust-root", "revoke-key", str(root), "--owner", "https://other.example", "--kid", "i-1", *at
    )
    assert code == 2
    assert "pins no issuer or merchant https://other.example" in err
    code, _, err = run_cli(
        capsys, "trust-root", "revoke-key", str(root), "--owner", ISSUER, "--kid", "i-9", *at
    )
    assert code == 2
    assert "has no pinned key i-9 (its keys: i-1, i-2)" in err
    code, _, err = run_cli(
        capsys, "trust-root", "revoke-key", str(root), "--owner", ISSUER, "--kid", "i-1", "--at", "yesterday"
    )
    assert code == 2
    assert root.read_bytes() == before


def test_rotate_a_jwk_set(capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path) -> None:
    successor = _jwks_file(tmp_path, "next.json", (KEYS[1], "i-2"), (KEYS[3], "i-3"))
    rotate = ("trust-root", "rotate-key", str(root), "--owner", ISSUER, "--old-kid", "i-1")
    code, _, err = run_cli(capsys, *rotate, "--at", "2026-10-01T00:00:00Z", "--jwks", successor)
    assert code == 0, err
    loaded = load_trust_root(root)
    assert loaded.kids_of("issuer", ISSUER) == ("i-1", "i-2", "i-3")  # the old key stays pinned
    assert loaded.validity_of("issuer", ISSUER, "i-1") == KeyValidity(revoked_at=OCTOBER, reason="superseded")
    assert loaded.validity_of("issuer", ISSUER, "i-3") == KeyValidity(valid_from=OCTOBER)
    assert loaded.validity_of("issuer", ISSUER, "i-2") is None  # already pinned: not "added"
    # Nothing new to add, another kid under a pinned kid, or the wrong kind of material: refused.
    before = root.read_bytes()
    code, _, err = run_cli(capsys, *rotate, "--at", "2026-10-01T00:00:00Z", "--jwks", successor)
    assert code == 2
    assert "adds no signing key" in err
    clash = _jwks_file(tmp_path, "clash.json", (KEYS[2], "i-3"))
    code, _, err = run_cli(capsys, *rotate, "--at", "2026-10-01T00:00:00Z", "--jwks", clash)
    assert code == 2
    assert "duplicate kid" in err
    document = _document_file(tmp_path, "doc.json", (KEYS[3], "x"))
    code, _, err = run_cli(capsys, *rotate, "--at", "2026-10-01T00:00:00Z", "--did-document", document)
    assert code == 2
    assert "not pinned by a DID document" in err
    code, _, err = run_cli(capsys, *rotate, "--at", "2026-10-01T00:00:00Z")
    assert code == 2
    assert "give the new key material" in err
    assert root.read_bytes() == before


def test_rotate_a_did_document_keeps_the_old_method(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path
) -> None:
    assert (
        run_cli(
            capsys,
            "trust-root",
            "revoke-key",
            str(root),
            "--owner",
            MERCHANT,
            "--kid",
            "#cart-1",
            "--at",
            "2026-11-01T00:00:00Z",
            "--reason",
            "compromised",
        )[0]
        == 0
    )
    successor = _document_file(tmp_path, "next.json", (KEYS[3], "cart-2"))
    rotate = ("trust-root", "rotate-key", str(root), "--owner", MERCHANT, "--old-kid", f"{MERCHANT}#cart-1")
    code, _, err = run_cli(capsys, *rotate, "--at", "2026-10-01T00:00:00Z", "--did-document", successor)
    assert code == 0, err
    assert "kept as compromised" in err  # a rotation never lifts a compromise
    loaded = load_trust_root(root)
    assert [row[2] for row in loaded.pinned_keys() if row[0] == "merchant"] == [
        f"{MERCHANT}#cart-2",
        f"{MERCHANT}#cart-1",
    ]
    assert loaded.validity_of("merchant", MERCHANT, f"{MERCHANT}#cart-1") == KeyValidity(
        revoked_at=datetime(2026, 11, 1, tzinfo=UTC), reason="compromised"
    )
    assert loaded.validity_of("merchant", MERCHANT, f"{MERCHANT}#cart-2") == KeyValidity(valid_from=OCTOBER)
    reused = _document_file(tmp_path, "reused.json", (KEYS[0], "cart-2"))
    code, _, err = run_cli(capsys, *rotate, "--at", "2026-12-01T00:00:00Z", "--did-document", reused)
    assert code == 2
    assert "reuses the kid" in err


def test_replacing_an_entry_with_windows_needs_force(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path
) -> None:
    revoke = ("trust-root", "revoke-key", str(root), "--owner", ISSUER, "--kid", "i-1")
    assert run_cli(capsys, *revoke, "--at", "2026-10-01T00:00:00Z", "--reason", "compromised")[0] == 0
    before = root.read_bytes()
    jwks = _jwks_file(tmp_path, "issuer.json", (KEYS[0], "i-1"))
    code, _, err = run_cli(capsys, "trust-root", "add-issuer", str(root), ISSUER, "--jwks", jwks)
    assert code == 1
    assert "would drop them" in err
    assert root.read_bytes() == before
    code, _, err = run_cli(capsys, "trust-root", "add-issuer", str(root), ISSUER, "--jwks", jwks, "--force")
    assert code == 0, err
    assert load_trust_root(root).validity_of("issuer", ISSUER, "i-1") is None


def test_show_lists_windows_in_words(capsys: pytest.CaptureFixture[str], root: Path) -> None:
    revoke = ("trust-root", "revoke-key", str(root), "--owner", ISSUER, "--kid", "i-1")
    assert (
        run_cli(capsys, *revoke, "--at", "2026-10-01T00:00:00Z", "--reason", "compromised", "--note", "CERT")[
            0
        ]
        == 0
    )
    code, shown, _ = run_cli_json(capsys, "trust-root", "show", str(root), "--json")
    assert code == 0
    by_kid: dict[str, Any] = {key["kid"]: key for key in shown["keys"]}
    assert by_kid["i-1"]["state"] == "compromised since 2026-10-01"
    assert by_kid["i-1"]["window"] == {
        "revoked_at": "2026-10-01T00:00:00Z",
        "reason": "compromised",
        "note": "CERT",
    }
    assert "window" not in by_kid["i-2"]
    code, _, err = run_cli(capsys, "trust-root", "show", str(root))
    assert code == 0
    assert "kid=i-1 " in err
    assert "— compromised since 2026-10-01" in err


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("revoke-key", "rotate-key", "add-issuer", "add-merchant"):
        code, out, _ = run_cli(capsys, "trust-root", command, "--help")
        assert code == 0
        assert "Example" in out
        assert f"mudrika trust-root {command} root.json" in out
