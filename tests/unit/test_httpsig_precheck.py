"""Header pre-check of RFC 9421 requests: refused before the body when the headers alone fail; the
result is reused once the body arrives (headers parsed once), bound to its request, and the time
window is checked again then."""

from __future__ import annotations

import pytest

from mudrika.crypto.keys import KeyPair
from mudrika.errors import ExpiredError, InvalidInput, SignatureError
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    REGISTERED_ALGORITHMS,
    HttpMessageSigner,
    HttpSignatureVerifier,
    StaticKeyLookup,
)
from tests._support.httpsig import NOW, ORIGIN, did_key, sign_request
from tests._support.tokenfactory import Clock

URL = ORIGIN + "/"
BODY = b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}'


def _setup() -> tuple[KeyPair, HttpSignatureVerifier, Clock]:
    key = KeyPair.generate("ed25519")
    clock = Clock(NOW)
    verifier = HttpSignatureVerifier(
        keys=StaticKeyLookup({did_key(key)[1]: key.public_key}),
        replay_store=MemoryReplayStore(100, clock=clock),
        origins=[ORIGIN],
        algorithms=REGISTERED_ALGORITHMS,
        clock=clock,
    )
    return key, verifier, clock


def _signed(key: KeyPair, body: bytes = BODY) -> dict[str, str]:
    return sign_request(HttpMessageSigner(key, did_key(key)[1], clock=lambda: NOW), "POST", URL, body)


def test_headers_that_fail_alone_are_refused_by_the_precheck() -> None:
    key, verifier, clock = _setup()
    headers = _signed(key)
    with pytest.raises(InvalidInput):
        verifier.precheck("POST", URL, {**headers, "Signature-Input": "sig1=x"})
    with pytest.raises(InvalidInput):
        verifier.precheck("POST", ORIGIN + "/other", {k: v for k, v in headers.items() if k != "Signature"})
    clock.now = NOW + 3600
    with pytest.raises(ExpiredError):
        verifier.precheck("POST", URL, headers)


@pytest.mark.anyio
async def test_the_precheck_is_reused_and_the_time_window_checked_again() -> None:
    key, verifier, clock = _setup()
    headers = _signed(key)
    prechecked = verifier.precheck("POST", URL, headers)
    pending = await verifier.aprepare("POST", URL, headers, BODY, prechecked=prechecked)
    assert pending.unclaimed.did == did_key(key)[0]
    clock.now = NOW + 3600  # the body took too long: expired by the time it arrived
    with pytest.raises(ExpiredError):
        await verifier.aprepare("POST", URL, headers, BODY, prechecked=prechecked)


@pytest.mark.anyio
async def test_a_precheck_of_another_request_is_ignored() -> None:
    key, verifier, _ = _setup()
    good = _signed(key)
    prechecked = verifier.precheck("POST", URL, good)
    forged = {**_signed(key, b"{}"), "Signature": good["Signature"]}  # another request's headers
    with pytest.raises(SignatureError):
        await verifier.aprepare("POST", URL, forged, b"{}", prechecked=prechecked)
