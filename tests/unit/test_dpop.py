"""RFC 9449 DPoP proof verification: the RFC's own examples, proofs made by independent libraries
(joserfc in-process, panva's node ``jose``), every check of §4.3 failing on its own, the time rule
at its exact boundary, and single use of the proof ``jti``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from joserfc import jws

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.jsonrpc import InvalidSignature, InvalidToken
from mudrika.trust.keycloak.dpop import (
    DPoPVerifier,
    PendingProof,
    access_token_hash,
    certificate_thumbprint,
    check_certificate_binding,
)
from tests._support.dpop import DPoPClient
from tests._support.node import run_node_peer

# --- RFC 9449, transcribed from the RFC text ------------------------------------------------------
#: §4.1 Figure 4: a proof for a token request (no access token, so no "ath").
RFC_FIG4_PROOF = (
    "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZ"
    "OXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIs"
    "ImNydiI6IlAtMjU2In19.eyJqdGkiOiItQndDM0VTYzZhY2MybFRjIiwiaHRtIjoiUE9TVCIsImh0dSI6Imh0dHBzOi8vc2Vydm"
    "VyLmV4YW1wbGUuY29tL3Rva2VuIiwiaWF0IjoxNTYyMjYyNjE2fQ.2-GxA6T8lP4vfrg8v-FdWP0A0zdrj8igiMLvqRMUvwnQg4P"
    "tFLbdLXiOSsX0x7NVY-FNyJK70nfbV37xRZT3Lg"
)
#: §7.1 Figure 13: the proof sent with a DPoP-bound access token to a protected resource.
RFC_FIG13_PROOF = (
    "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZ"
    "OXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIs"
    "ImNydiI6IlAtMjU2In19.eyJqdGkiOiJlMWozVl9iS2ljOC1MQUVCIiwiaHRtIjoiR0VUIiwiaHR1IjoiaHR0cHM6Ly9yZXNvdXJj"
    "ZS5leGFtcGxlLm9yZy9wcm90ZWN0ZWRyZXNvdXJjZSIsImlhdCI6MTU2MjI2MjYxOCwiYXRoIjoiZlVIeU8ycjJaM0RaNTNFc05y"
    "V0JiMHhXWG9hTnk1OUlpS0NBcWtzbVFFbyJ9.2oW9RP35yRqzhrtNP86L-Ey71EOptxRimPPToA1plemAgR6pxHF8y6-yqyVnmcw6F"
    "y1dqd-jfxSYoMxhAJpLjA"
)
#: §7.1: the access token of Figure 12 and §6.1's thumbprint of the example key ("cnf": {"jkt": ...}).
RFC_ACCESS_TOKEN = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
RFC_ATH = "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
RFC_JKT = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"

ORIGIN = "https://agent.example"
URL = ORIGIN + "/tasks"
TOKEN = "access-token-value"
NOW = 1_800_000_000.0


def _verifier(origin: str = ORIGIN, **options: Any) -> DPoPVerifier:
    return DPoPVerifier(
        algorithms={"ES256", "EdDSA"}, replay_store=MemoryReplayStore(100), public_origin=origin, **options
    )


def _claims(jkt: str) -> dict[str, Any]:
    return {"cnf": {"jkt": jkt}}


def _check_post(proof: str, jkt: str) -> PendingProof:
    """A fresh verifier's answer for the request most tests make (POST to URL with TOKEN bound to
    ``jkt``, at NOW), so that each test spells out only the part it changes."""
    return _verifier().check(proof, method="POST", htu=URL, access_token=TOKEN, claims=_claims(jkt), now=NOW)


def test_rfc_ath_example() -> None:
    assert access_token_hash(RFC_ACCESS_TOKEN) == RFC_ATH


@pytest.mark.anyio
async def test_rfc_9449_figure_13_verifies_and_its_jti_is_single_use() -> None:
    verifier = _verifier("https://resource.example.org")
    pending = verifier.check(
        RFC_FIG13_PROOF,
        method="GET",
        htu=verifier.htu_for("/protectedresource"),
        access_token=RFC_ACCESS_TOKEN,
        claims=_claims(RFC_JKT),
        now=1562262618,
    )
    assert (pending.jkt, pending.jti) == (RFC_JKT, "e1j3V_bKic8-LAEB")
    await pending.claim()
    with pytest.raises(InvalidToken) as info:
        await pending.claim()
    assert info.value.code == "dpop_replay"


def test_rfc_9449_figure_4_is_refused_at_a_resource_without_ath() -> None:
    # Signature and key binding pass (checked first); a proof without "ath" cannot accompany a token.
    verifier = _verifier("https://server.example.com")
    with pytest.raises(InvalidToken) as info:
        verifier.check(
            RFC_FIG4_PROOF,
            method="POST",
            htu="https://server.example.com/token",
            access_token=RFC_ACCESS_TOKEN,
            claims=_claims(RFC_JKT),
            now=1562262616,
        )
    assert info.value.code == "dpop_missing_claim"


def test_rfc_example_bound_to_another_key_is_refused() -> None:
    with pytest.raises(InvalidToken) as info:
        _verifier("https://resource.example.org").check(
            RFC_FIG13_PROOF,
            method="GET",
            htu="https://resource.example.org/protectedresource",
            access_token=RFC_ACCESS_TOKEN,
            claims=_claims(KeyPair.generate("p256").public_key.thumbprint()),
            now=1562262618,
        )
    assert info.value.code == "dpop_key_mismatch"


def test_joserfc_proof_verifies() -> None:
    client = DPoPClient()
    proof = client.proof("POST", URL, TOKEN, iat=NOW)
    pending = _check_post(proof, client.jkt)
    assert pending.jkt == client.jkt


def test_node_jose_proof_verifies() -> None:
    request = {
        "alg": "ES256",
        "htm": "POST",
        "htu": URL,
        "ath": access_token_hash(TOKEN),
        "iat": NOW,
        "jti": "n1",
    }
    answer = run_node_peer("dpop_proof.mjs", request)
    pending = _check_post(answer["proof"], answer["jkt"])
    assert pending.jti == "n1"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"header": {"typ": "JWT"}}, "dpop_wrong_typ"),
        ({"method": "GET"}, "dpop_wrong_htm"),
        ({"url": URL + "?q=1"}, "dpop_wrong_htu"),
        ({"url": URL + "#frag"}, "dpop_wrong_htu"),
        ({"url": "https://other.example/tasks"}, "dpop_wrong_htu"),
        ({"token": "another-token"}, "dpop_wrong_ath"),
        ({"claims": {"ath": "\u00e9"}}, "dpop_wrong_ath"),  # non-ASCII: refused, not a TypeError
        ({"iat": NOW + 6}, "dpop_not_yet_valid"),
        ({"iat": NOW - 65}, "dpop_too_old"),
        ({"claims": {"htm": None}}, "dpop_missing_claim"),
    ],
)
def test_each_check_refuses_on_its_own(change: dict[str, Any], code: str) -> None:
    client = DPoPClient()
    proof = client.proof(
        change.get("method", "POST"),
        change.get("url", URL),
        change.get("token", TOKEN),
        iat=change.get("iat", NOW),
        header=change.get("header"),
        **change.get("claims", {}),
    )
    with pytest.raises(InvalidToken) as info:
        _check_post(proof, client.jkt)
    assert info.value.code == code


def _signed(client: DPoPClient, protected: dict[str, Any], payload: dict[str, Any]) -> str:
    return jws.serialize_compact(protected, json.dumps(payload).encode(), client.key, algorithms=["ES256"])


@pytest.mark.parametrize(
    "payload",
    [
        {"htm": "POST", "htu": URL, "iat": int(NOW), "ath": access_token_hash(TOKEN)},
        {"jti": "", "htm": "POST", "htu": URL, "iat": int(NOW), "ath": access_token_hash(TOKEN)},
        {"jti": "j", "htm": "POST", "htu": URL, "iat": "now", "ath": access_token_hash(TOKEN)},
        {"jti": "j", "htm": "POST", "htu": URL, "iat": True, "ath": access_token_hash(TOKEN)},
    ],
)
def test_proofs_without_usable_required_claims_are_refused(payload: dict[str, Any]) -> None:
    client = DPoPClient()
    protected = {"typ": "dpop+jwt", "alg": "ES256", "jwk": client.key.as_dict(private=False)}
    with pytest.raises(InvalidToken) as info:
        _check_post(_signed(client, protected, payload), client.jkt)
    assert info.value.code == "dpop_missing_claim"


def test_time_rule_at_the_exact_boundary() -> None:
    client = DPoPClient()
    proof = client.proof("POST", URL, TOKEN, iat=NOW)
    verifier = _verifier(max_age=60, leeway=5)
    check: dict[str, Any] = {
        "method": "POST",
        "htu": URL,
        "access_token": TOKEN,
        "claims": _claims(client.jkt),
    }
    assert verifier.check(proof, now=NOW + 64.999, **check).jkt == client.jkt
    assert verifier.check(proof, now=NOW - 5, **check).jkt == client.jkt  # iat - leeway: inclusive
    with pytest.raises(InvalidToken, match="too old"):
        verifier.check(proof, now=NOW + 65, **check)  # iat + max_age + leeway: exclusive
    with pytest.raises(InvalidToken, match="future"):
        verifier.check(proof, now=NOW - 5.001, **check)


def test_tampered_signature_and_symmetric_or_none_algorithms() -> None:
    client = DPoPClient()
    proof = client.proof("POST", URL, TOKEN, iat=NOW)
    header, payload, signature = proof.split(".")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    with pytest.raises(InvalidSignature):
        _check_post(f"{header}.{payload}.{flipped}", client.jkt)
    for alg in ("none", "HS256", "RS256"):
        bad_header = json.dumps({"typ": "dpop+jwt", "alg": alg, "jwk": client.key.as_dict(private=False)})
        with pytest.raises(InvalidToken) as info:
            _check_post(f"{b64url_encode(bad_header.encode())}.{payload}.{signature}", client.jkt)
        assert info.value.code == "dpop_alg_not_allowed"


def test_critical_extensions_are_refused() -> None:
    client = DPoPClient()
    _, payload, signature = client.proof("POST", URL, TOKEN, iat=NOW).split(".")
    header = {
        "typ": "dpop+jwt",
        "alg": "ES256",
        "jwk": client.key.as_dict(private=False),
        "crit": ["x"],
        "x": 1,
    }
    forged = f"{b64url_encode(json.dumps(header).encode())}.{payload}.{signature}"
    with pytest.raises(InvalidToken) as info:
        _check_post(forged, client.jkt)
    assert info.value.code == "dpop_malformed"


def test_private_key_in_the_header_is_refused() -> None:
    client = DPoPClient()
    protected = {"typ": "dpop+jwt", "alg": "ES256", "jwk": client.key.as_dict(private=True)}
    payload = {"jti": "p", "htm": "POST", "htu": URL, "iat": int(NOW), "ath": access_token_hash(TOKEN)}
    proof = _signed(client, protected, payload)
    with pytest.raises(InvalidToken) as info:
        _check_post(proof, client.jkt)
    assert info.value.code == "dpop_private_jwk"


@pytest.mark.parametrize("bad", ["", "a.b", "a.b.c.d", "x" * 9000, "e30.e30.!!"])
def test_malformed_proofs(bad: str) -> None:
    with pytest.raises(InvalidToken) as info:
        _check_post(bad, "x")
    assert info.value.code == "dpop_malformed"


def test_configuration_refuses_symmetric_algorithms_and_bad_origins() -> None:
    store = MemoryReplayStore(10)
    with pytest.raises(InvalidInput):
        DPoPVerifier(algorithms={"HS256"}, replay_store=store, public_origin=ORIGIN)
    with pytest.raises(InvalidInput) as caught:  # an allow-list: a name it does not know is refused too
        DPoPVerifier(algorithms={"ES256", "foo"}, replay_store=store, public_origin=ORIGIN)
    assert caught.value.fields["refused"] == ["foo"]
    with pytest.raises(InvalidInput):
        DPoPVerifier(algorithms=set(), replay_store=store, public_origin=ORIGIN)
    with pytest.raises(InvalidInput):
        DPoPVerifier(algorithms={"ES256"}, replay_store=store, public_origin=ORIGIN + "/path")


def test_certificate_binding() -> None:
    der = b"\x30\x03\x02\x01\x01"
    claims = {"cnf": {"x5t#S256": certificate_thumbprint(der)}}
    check_certificate_binding(claims, der)
    for cert, code in ((None, "mtls_required"), (b"\x30\x00", "mtls_mismatch")):
        with pytest.raises(InvalidToken) as info:
            check_certificate_binding(claims, cert)
        assert info.value.code == code
    with pytest.raises(InvalidToken):
        check_certificate_binding({"cnf": "x"}, der)
    with pytest.raises(InvalidToken) as non_ascii:
        check_certificate_binding({"cnf": {"x5t#S256": "\u00e9"}}, der)
    assert non_ascii.value.code == "mtls_mismatch"


def test_non_ascii_jkt_is_a_mismatch_not_a_crash() -> None:
    client = DPoPClient()
    proof = client.proof("POST", URL, TOKEN, iat=NOW)
    with pytest.raises(InvalidToken) as info:
        _check_post(proof, "\u00e9")
    assert info.value.code == "dpop_key_mismatch"
