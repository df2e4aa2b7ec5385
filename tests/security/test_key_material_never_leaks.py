"""No private key bytes in any repr, str, log record or exception message, on every path that touches them."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.keys import KeyPair, KeyType, PublicKey
from mudrika.crypto.keystore import load_private_key, write_private_key
from mudrika.errors import MudrikaError
from tests._support.json_tamper import flip_char

PASSWORD = b"leak-test-password"


def _secrets_of(pair: KeyPair) -> list[str]:
    """Every spelling of the private material a careless message might contain."""
    jwk = pair.private_jwk()
    spellings: list[str] = []
    for member in ("d", "p", "q", "dp", "dq", "qi"):
        if member in jwk:
            raw = b64url_decode(jwk[member])
            spellings += [jwk[member], raw.hex(), str(int.from_bytes(raw, "big"))[:40]]
    unencrypted = pair.private_pem_unencrypted().decode().splitlines()[1:-1]
    spellings += [line for line in unencrypted if len(line) > 20]
    return spellings


@pytest.mark.parametrize("key_type", list(KeyType), ids=[t.value for t in KeyType])
def test_private_material_absent_from_reprs_logs_and_errors(
    key_type: KeyType, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pair = KeyPair.generate(key_type)
    texts = [repr(pair), str(pair), repr(pair.public_key), f"{pair}", f"{pair!r}"]

    target = write_private_key(tmp_path / "k" / "agent.pem", pair, PASSWORD)
    loaded = load_private_key(target, PASSWORD)
    texts.append(repr(loaded))

    failing_calls: list[Callable[[], object]] = [
        lambda: load_private_key(target, b"wrong-password"),
        lambda: PublicKey.from_jwk(pair.private_jwk()),
        lambda: KeyPair.from_jwk({**pair.private_jwk(), "d": flip_char(pair.private_jwk()["d"])}),
        lambda: KeyPair.from_pem(pair.private_pem_unencrypted()[:-40], None),
        lambda: pair.sign(b"x", "HS256"),
    ]
    for call in failing_calls:
        with pytest.raises(MudrikaError) as info:
            call()
        texts += [str(info.value), repr(info.value), repr(info.value.fields)]

    with pytest.raises(TypeError):
        pickle.dumps(pair)

    texts += [record.getMessage() for record in caplog.records]
    blob = "\n".join(texts)
    for secret in _secrets_of(pair):
        assert secret not in blob


def test_a_tampered_d_is_refused_even_when_d_ends_in_the_old_constant() -> None:
    """Regression: the tamper above once replaced d's last two characters with "AA", a no-op for the
    1 key in 1024 whose d already ends so (6 bits of one character, the 4 used bits of the last);
    from_jwk then succeeded and the test failed at random.  A scalar ending in two zero bytes spells
    d ending in "AAA", and the tamper must still change it."""
    pair = KeyPair(
        ec.derive_private_key(0x1D2C3B4A5968778695A4B3C2D1E0F00112233445566778899AABBCC0000, ec.SECP256K1())
    )
    d = pair.private_jwk()["d"]
    assert d[:-2] + "AA" == d  # the old tamper would have changed nothing
    with pytest.raises(MudrikaError) as info:
        KeyPair.from_jwk({**pair.private_jwk(), "d": flip_char(d)})
    blob = "\n".join([str(info.value), repr(info.value), repr(info.value.fields)])
    for secret in _secrets_of(pair):
        assert secret not in blob
