"""did:webvh: each rule of the log is refused on its own, with its own code, on logs made by the
PyPI reference implementation (``did-webvh`` 1.0.1) and then edited the way an attacker would;
resolution as of a time or a version; the DID → URL mapping; the drivers."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from mudrika.crypto.dataintegrity import sign_eddsa_jcs_2022
from mudrika.crypto.keys import KeyPair
from mudrika.errors import (
    BindingError,
    DocumentError,
    EgressDenied,
    InvalidInput,
    MudrikaError,
    SignatureError,
    UntrustedKeyError,
    VerificationError,
)
from mudrika.identity.methods.webvh import (
    WebvhDriver,
    WebvhLogDriver,
    entry_hash,
    log_url,
    resolve_log,
    witness_url,
)
from mudrika.identity.resolver import DIDResolver
from tests._support.webvh import T0, make_plain_log, make_prerotation_log, oracle, witness_entry

oracle()


def _text(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


def _refusal(did: str, text: str, **options: Any) -> MudrikaError:
    with pytest.raises(MudrikaError) as caught:
        resolve_log(did, text, **options)
    return caught.value


def test_did_to_urls() -> None:
    did = "did:webvh:QmScid:example.com"
    assert log_url(did) == "https://example.com/.well-known/did.jsonl"
    assert witness_url(did) == "https://example.com/.well-known/did-witness.json"
    assert (
        log_url("did:webvh:QmScid:example.com%3A8443:dids:abc")
        == "https://example.com:8443/dids/abc/did.jsonl"
    )
    for bad in ("did:webvh:example.com", "did:web:example.com", "did:webvh:QmScid:127.0.0.1"):
        with pytest.raises(InvalidInput):
            log_url(bad)


def test_a_valid_log_resolves_at_every_version_and_time() -> None:
    log = make_prerotation_log()
    text = log.text()
    for number, state in enumerate(log.states, start=1):
        resolved = resolve_log(log.did, text, version_number=number)
        assert resolved.entry.version_id == state.version_id
        assert resolve_log(log.did, text, version_id=state.version_id).entry.version_number == number
    # As of a day: the key in force on the day between v2 (T0+30d) and v3 (T0+60d) is key-2.
    mid = resolve_log(log.did, text, version_time=T0 + timedelta(days=45))
    assert mid.entry.version_number == 2
    assert mid.document["verificationMethod"][0]["id"].endswith("#key-2")
    assert (
        resolve_log(log.did, text, version_time=(T0 + timedelta(days=60)).isoformat()).entry.version_number
        == 3
    )
    assert resolve_log(log.did, text).metadata["deactivated"] is True
    with pytest.raises(DocumentError) as before:
        resolve_log(log.did, text, version_time=T0 - timedelta(seconds=1))
    assert before.value.code == "notFound"
    with pytest.raises(DocumentError):
        resolve_log(log.did, text, version_number=2, version_id=log.states[0].version_id)


def test_tampered_entry_refused() -> None:
    log = make_prerotation_log()
    lines = log.lines()
    lines[1]["state"]["verificationMethod"][0]["publicKeyMultibase"] = log.keys["k1"].multikey
    error = _refusal(log.did, _text(lines))
    assert (type(error), error.code, error.fields["version"]) == (
        BindingError,
        "webvh_entry_hash_mismatch",
        2,
    )


def test_broken_hash_chain_refused() -> None:
    log = make_plain_log()
    lines = log.lines()
    extra = log.states[-1].create_next(params_update={}, timestamp=T0 + timedelta(days=5))
    extra.proofs.append(extra.create_proof(log.keys["k1"], timestamp=extra.timestamp))
    error = _refusal(log.did, _text([lines[0], extra.history_line()]))  # v2 removed: v3 follows v1
    assert (type(error), error.code) == (BindingError, "webvh_chain_broken")


def test_forked_entry_refused() -> None:
    """An entry 2 chained to *another* entry 1 (a fork) does not chain to this one."""
    first, other = make_plain_log(), make_plain_log()
    error = _refusal(first.did, _text([first.lines()[0], other.lines()[1]]))
    assert error.code in {"webvh_entry_hash_mismatch", "webvh_scid_mismatch"}


def test_rotation_violating_next_key_hashes_refused() -> None:
    log = make_prerotation_log()
    intruder = log.keys["k3"]  # a real key of this DID, but not the one committed to in v1
    rogue = log.states[0].create_next(
        params_update={"updateKeys": [intruder.multikey]}, timestamp=T0 + timedelta(days=1)
    )
    rogue.proofs.append(rogue.create_proof(intruder, timestamp=rogue.timestamp))
    error = _refusal(log.did, _text([log.lines()[0], rogue.history_line()]))
    assert (type(error), error.code) == (UntrustedKeyError, "webvh_prerotation_violation")


def test_proof_by_a_non_authorised_key_refused() -> None:
    log = make_plain_log()
    rogue = log.states[0].create_next(params_update={}, timestamp=T0 + timedelta(days=1))
    rogue.proofs.append(rogue.create_proof(log.keys["stranger"], timestamp=rogue.timestamp))
    error = _refusal(log.did, _text([log.lines()[0], rogue.history_line()]))
    assert (type(error), error.code) == (UntrustedKeyError, "webvh_unauthorized_key")


def test_forged_signature_by_an_authorised_key_refused() -> None:
    log = make_plain_log()
    lines = log.lines()
    value = lines[1]["proof"][0]["proofValue"]
    lines[1]["proof"][0]["proofValue"] = value[:-2] + ("1" if value[-2] != "1" else "2") + value[-1]
    error = _refusal(log.did, _text(lines))
    assert (type(error), error.code) == (SignatureError, "webvh_bad_proof")


def test_scid_not_derived_from_the_first_entry_refused() -> None:
    log = make_plain_log()
    lines = log.lines()
    lines[0]["versionTime"] = "2020-01-01T00:00:00Z"
    error = _refusal(log.did, _text(lines[:1]))
    assert (type(error), error.code) == (BindingError, "webvh_scid_mismatch")


def test_entry_after_deactivation_refused() -> None:
    log = make_prerotation_log()
    later = log.states[-1].create_next(params_update={}, timestamp=T0 + timedelta(days=400))
    later.proofs.append(later.create_proof(log.keys["k3"], timestamp=later.timestamp))
    error = _refusal(log.did, _text([*log.lines(), later.history_line()]))
    assert (type(error), error.code) == (VerificationError, "webvh_after_deactivation")


def test_unknown_parameter_and_bad_shape_refused() -> None:
    log = make_plain_log()
    lines = log.lines()
    lines[0]["extra"] = 1
    assert _refusal(log.did, _text(lines)).code == "webvh_malformed_log"
    assert _refusal(log.did, "not json\n").code == "webvh_malformed_log"


def test_witness_threshold() -> None:
    log = make_plain_log(witnesses=2, threshold=2)
    text = log.text()
    both = [witness_entry(log, 2, "w0"), witness_entry(log, 2, "w1")]
    assert resolve_log(log.did, text, witness=json.dumps(both)).log.witnessed
    one = [witness_entry(log, 2, "w0")]
    error = _refusal(log.did, text, witness=json.dumps(one))
    assert (type(error), error.code) == (VerificationError, "webvh_witness_threshold")
    assert _refusal(log.did, text).code == "webvh_witness_threshold"
    # approving only version 1 does not approve version 2
    early = [witness_entry(log, 1, "w0"), witness_entry(log, 1, "w1")]
    assert _refusal(log.did, text, witness=json.dumps(early)).code == "webvh_witness_threshold"
    # a stranger's approval counts for nothing
    stranger = [witness_entry(log, 2, "w0"), witness_entry(log, 2, "stranger")]
    assert _refusal(log.did, text, witness=json.dumps(stranger)).code == "webvh_witness_threshold"
    # a forged approval is a tampered file
    forged = json.loads(json.dumps(both))
    forged[1]["versionId"] = log.states[0].version_id
    assert _refusal(log.did, text, witness=json.dumps(forged)).code == "webvh_bad_witness_proof"


def test_witness_approval_signed_by_mudrika_is_accepted_by_the_oracle_form() -> None:
    """mudrika's eddsa-jcs-2022 signer and the oracle's verifier agree (one witness approval)."""
    log = make_plain_log(witnesses=1, threshold=1)
    pair = KeyPair.generate("ed25519")
    multikey = pair.public_key.to_multikey()
    from did_webvh.core.proof import di_jcs_verify

    version_id = log.states[1].version_id
    proof = sign_eddsa_jcs_2022(
        {"versionId": version_id}, pair, verification_method=f"did:key:{multikey}#{multikey}"
    )
    di_jcs_verify({"versionId": version_id}, proof, {"type": "Multikey", "publicKeyMultibase": multikey})


def test_entry_hash_matches_the_oracle() -> None:
    log = make_prerotation_log()
    for previous, state in zip(log.states, log.states[1:], strict=False):
        assert state.version_id.split("-", 1)[1] == entry_hash(state.history_line(), previous.version_id)


def test_offline_driver_through_the_resolver() -> None:
    log = make_prerotation_log()
    resolver = DIDResolver.offline({})
    resolver.register(WebvhLogDriver({log.did: log.text()}))
    resolved = resolver.resolve(log.did)
    assert resolved.deactivated
    with pytest.raises(UntrustedKeyError):
        resolver.resolve_key(log.did + "#key-3", "assertionMethod")
    driver = WebvhLogDriver({log.did: {"log": log.text(), "witness": None}})
    as_of = driver.resolve_at(log.did, version_time=T0 + timedelta(days=45))
    key = as_of.document.key_for(log.did + "#key-2", "assertionMethod")
    assert key.to_multikey() == log.keys["k2"].multikey
    with pytest.raises(DocumentError) as missing:
        WebvhLogDriver({}).resolve_at(log.did)
    assert missing.value.code == "notFound"


def test_tampered_snapshot_refused_by_the_resolver() -> None:
    log = make_plain_log()
    lines = log.lines()
    lines[1]["state"]["alsoKnownAs"] = ["https://evil.example/"]
    resolver = DIDResolver.offline({})
    resolver.register(WebvhLogDriver({log.did: _text(lines)}))
    with pytest.raises(BindingError):
        resolver.resolve(log.did)


def test_webvh_is_not_resolved_unless_configured() -> None:
    with pytest.raises(DocumentError) as caught:
        DIDResolver.offline({}).resolve("did:webvh:QmScid:shop.example")
    assert caught.value.code in {"notFound", "methodNotSupported"}


def test_online_driver_goes_through_the_strict_egress_policy() -> None:
    """``localhost`` is a DNS name the did:web rules accept, but it resolves to loopback."""
    with pytest.raises(EgressDenied):
        WebvhDriver(timeout=2).resolve_at("did:webvh:QmScid:localhost")


@pytest.mark.parametrize(
    "version_time",
    ["2025-13-31T12:00:00Z", "2025-03-31T25:00:00Z", "2025-02-30T12:00:00Z", "٢٠٢٥-03-31T12:00:00Z"],
    ids=["month-13", "hour-25", "february-30", "arabic-indic-digits"],
)
def test_a_version_time_of_the_right_shape_but_no_real_date_is_malformed(version_time: str) -> None:
    """Found by fuzzing (row webvh_log): the shape check passed these and ``datetime`` then raised a
    raw ValueError out of the resolver.  The entry is chained and signed correctly, so the time rule
    is the one that refuses it."""
    from fuzz.targets import WEBVH_DOMAIN, WEBVH_KEY, WEBVH_NEXT_KEY, _webvh_chain, _webvh_templates

    templates = _webvh_templates(witnessed=False)
    templates[1]["versionTime"] = version_time
    scid, text = _webvh_chain(templates, [WEBVH_KEY, WEBVH_NEXT_KEY, WEBVH_NEXT_KEY])
    error = _refusal(f"did:webvh:{scid}:{WEBVH_DOMAIN}", text.decode("utf-8"))
    assert isinstance(error, InvalidInput)
    assert (error.code, error.fields.get("version")) == ("webvh_malformed_log", 2)


@pytest.mark.parametrize("threshold", ["²", "9" * 5000], ids=["superscript-two", "past-int-digit-limit"])
def test_a_witness_threshold_string_that_is_no_ascii_number_is_malformed(threshold: str) -> None:
    """Found by fuzzing (row webvh_log): ``str.isdigit`` accepted these and ``int`` then raised a raw
    ValueError, on the first line of a log before any hash or signature is checked."""
    line = {
        "versionId": "1-QmHash",
        "versionTime": "2025-03-01T12:00:00Z",
        "parameters": {
            "method": "did:webvh:1.0",
            "scid": "QmScid",
            "updateKeys": ["z6Mk"],
            "witness": {"threshold": threshold, "witnesses": [{"id": "did:key:z6MkWitness"}]},
        },
        "state": {"id": "did:webvh:QmScid:shop.example"},
        "proof": [],
    }
    error = _refusal("did:webvh:QmScid:shop.example", _text([line]))
    assert isinstance(error, InvalidInput)
    assert error.code == "webvh_malformed_log"
