"""The open-web verifier at its edges: the tests the mutation check of ``trust/httpsig/_web.py`` and
``_webprofile.py`` showed missing.

Web Bot Auth and Visa TAP requests come from anyone on the open web, so every refusal is pinned by
what it says (class, code, fields) and every setting and limit on both sides of its edge.  Requests
are signed here by hand — the signature base of RFC 9421 §2.5 written out line by line — so that a
case can carry any parameter, member or shape a real agent (or an attacker) could send, not only
what mudrika's signers produce.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import math
from collections.abc import Iterable
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    MudrikaError,
    NotYetValidError,
    ReplayError,
    SignatureError,
    UntrustedKeyError,
)
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import (
    ALGORITHMS,
    LENIENT_KEYID_CASE,
    REGISTERED_ALGORITHMS,
    StaticDirectories,
    TrustedAgentSigner,
    WebBotAuthSigner,
    WebSignatureVerifier,
    _web,
    _webprofile,
    web_profile_of,
)
from mudrika.trust.httpsig._sf import InnerList, Item
from mudrika.trust.httpsig._webprofile import (
    DIRECTORY_MEDIA_TYPE,
    DIRECTORY_WELL_KNOWN,
    PROFILES,
    WEB_PROFILES,
    agent_ref,
    check_thumbprint_keyid,
    check_web_keyid,
    check_web_nonce,
    key_ref,
    parse_signature_agent,
    profile_for_tag,
)
from mudrika.trust.jsonrpc import AuthenticationRequired

ORIGIN = "https://merchant.example"
AUTHORITY = "merchant.example"
AGENT = "https://crawler.example"
REGISTRY = "https://registry.example/.well-known/jwks"
NOW = 1_760_000_000
NONCE = "bm9uY2Utb2YtdHdlbnR5LXR3by1ieXRlcw"  # 34 base64url characters
PINNED = KeyPair.generate(KeyType.ED25519)
THUMBPRINT = PINNED.public_key.thumbprint()
TAP_KEY = KeyPair.generate(KeyType.ED25519)
TAP_KID = "primary-ed25519"


class _CountingStore(MemoryReplayStore):
    """A replay store that records the keys it was asked to claim."""

    def __init__(self) -> None:
        super().__init__()
        self.claimed: list[str] = []

    def claim(self, key: str, expires_at: float) -> bool:
        self.claimed.append(key)
        return super().claim(key, expires_at)


def _verifier(**options: Any) -> WebSignatureVerifier:
    settings: dict[str, Any] = {
        "agents": StaticDirectories(
            {AGENT: {"keys": [PINNED.public_key.to_jwk()]}}, pinned=[PINNED.public_key]
        ),
        "tap_registry": REGISTRY,
        "tap_keys": StaticDirectories(
            {REGISTRY: {"keys": [{**TAP_KEY.public_key.to_jwk(), "kid": TAP_KID}]}}
        ),
        "replay_store": MemoryReplayStore(),
        "origins": [ORIGIN],
        "algorithms": REGISTERED_ALGORITHMS,
        "max_age": 60,
        "clock": lambda: NOW,
    }
    settings.update(options)
    return WebSignatureVerifier(**settings)


def _params(**values: Any) -> str:
    """``;name=value`` for each value given (ints bare, strings quoted, ``None`` left out)."""
    defaults: dict[str, Any] = {
        "created": NOW,
        "expires": NOW + 30,
        "keyid": THUMBPRINT,
        "nonce": NONCE,
        "tag": "web-bot-auth",
    }
    defaults.update(values)
    text = ""
    for name, value in defaults.items():
        if value is None:
            continue
        text += f";{name}={value}" if isinstance(value, int) else f';{name}="{value}"'
    return text


def _signed(
    params: str,
    *,
    components: Iterable[tuple[str, str]] = (('"@authority"', AUTHORITY),),
    key: KeyPair = PINNED,
    label: str = "sig1",
    extra_input: str = "",
    extra_headers: dict[str, str] | None = None,
) -> dict[str, str]:
    """Headers of a request signed by hand: RFC 9421 §2.5, one line per covered component, then
    ``@signature-params`` (the inner list exactly as sent)."""
    covered = list(components)
    inner = "(" + " ".join(name for name, _ in covered) + ")" + params
    base = "".join(f"{name}: {value}\n" for name, value in covered) + f'"@signature-params": {inner}'
    signature = base64.b64encode(key.sign(base.encode("ascii"))).decode("ascii")
    headers = {
        "Signature-Input": (extra_input + ", " if extra_input else "") + f"{label}={inner}",
        "Signature": f"{label}=:{signature}:",
    }
    headers.update(extra_headers or {})
    return headers


def _tap(params: str | None = None, **values: Any) -> dict[str, str]:
    chosen: dict[str, Any] = {"keyid": TAP_KID, "tag": "agent-browser-auth", **values}
    return _signed(
        params if params is not None else _params(**chosen),
        components=(('"@authority"', AUTHORITY), ('"@path"', "/p")),
        key=TAP_KEY,
        label="sig2",
    )


def _refused(
    headers: dict[str, str],
    *,
    url: str = ORIGIN + "/p",
    verifier: WebSignatureVerifier | None = None,
    **verify: Any,
) -> MudrikaError:
    with pytest.raises(MudrikaError) as caught:
        (verifier or _verifier()).verify("GET", url, headers, b"", **verify)
    return caught.value


# -- the hand-signed request is what the verifier accepts ------------------------------------------


def test_a_hand_signed_request_with_a_pinned_key_verifies() -> None:
    verified = _verifier().verify("GET", ORIGIN + "/p", _signed(_params()), b"")
    assert (verified.profile, verified.agent, verified.thumbprint, verified.components) == (
        "web-bot-auth",
        "urn:ietf:params:oauth:jwk-thumbprint:sha-256:" + THUMBPRINT,
        THUMBPRINT,
        ("@authority",),
    )
    assert (verified.created, verified.expires, verified.nonce, verified.label) == (
        NOW,
        NOW + 30,
        NONCE,
        "sig1",
    )


# -- the verifier's settings ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"agents": {AGENT: {"keys": []}}}, "agents must be a DirectoryCache or StaticDirectories"),
        ({"tap_keys": None}, "tap_registry and tap_keys go together"),
        ({"tap_registry": None}, "tap_registry and tap_keys go together"),
        (
            {"agents": None, "tap_registry": None, "tap_keys": None},
            "enable Web Bot Auth (agents) and/or TAP (tap_keys)",
        ),
        ({"replay_store": {}}, "replay_store must implement ReplayStore"),
        ({"algorithms": []}, "algorithms must be known HTTP signature algorithms"),
        ({"algorithms": ["ed25519", "hmac-sha256"]}, "algorithms must be known HTTP signature algorithms"),
        ({"origins": [ORIGIN + "/shop"]}, "an origin has no path or query"),
        ({"origins": [ORIGIN + "/?page=1"]}, "an origin has no path or query"),
        ({"origins": []}, "at least one origin (the audience) is required"),
        ({"max_age": 0}, "max_age must be a positive number of seconds"),
        ({"max_age": -1}, "max_age must be a positive number of seconds"),
        ({"max_age": math.inf}, "max_age must be a positive number of seconds"),
        ({"max_age": math.nan}, "max_age must be a positive number of seconds"),
        ({"max_lifetime": 0}, "max_lifetime must be a positive integer"),
        ({"max_lifetime": True}, "max_lifetime must be a positive integer"),
        ({"max_lifetime": 1.5}, "max_lifetime must be a positive integer"),
        ({"leeway": -1}, "leeway must be within 0..30 seconds"),
        ({"leeway": 30.5}, "leeway must be within 0..30 seconds"),
        ({"leeway": math.inf}, "leeway must be within 0..30 seconds"),
        ({"leeway": math.nan}, "leeway must be within 0..30 seconds"),
        ({"leniency": ["keyid-any-case"]}, "unknown leniency"),
    ],
)
def test_each_bad_setting_is_refused_by_name(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        _verifier(**options)
    assert (caught.value.code, str(caught.value)) == ("httpsig_config", message)


def test_unknown_leniencies_are_named_four_at_most_in_order() -> None:
    with pytest.raises(InvalidInput) as caught:
        _verifier(leniency=["e", "d", LENIENT_KEYID_CASE, "c", "b", "a"])
    assert caught.value.fields == {"unknown": ["a", "b", "c", "d"]}


@pytest.mark.parametrize(
    "options",
    [
        {"algorithms": sorted(ALGORITHMS)},  # every known algorithm, the private one included
        {"max_age": 0.5},
        {"max_lifetime": 1, "max_age": 1},
        {"leeway": 0},
        {"leeway": 30},
        {"leniency": ["keyid-mixed-case"]},
        {"origins": [ORIGIN, ORIGIN + "/"]},
    ],
    ids=["all-algorithms", "max-age-half", "lifetime-1", "leeway-0", "leeway-30", "leniency", "origin-slash"],
)
def test_settings_at_their_edges_are_accepted(options: dict[str, Any]) -> None:
    headers = _signed(_params(expires=NOW + 1))
    verified = _verifier(**options).verify("GET", ORIGIN + "/p", headers, b"", now=NOW)
    assert verified.thumbprint == THUMBPRINT


def test_the_profiles_and_repr_say_what_is_enabled() -> None:
    tap_only = _verifier(agents=None)
    assert tap_only.profiles == frozenset({"agent-browser-auth", "agent-payer-auth"})
    assert _verifier(tap_registry=None, tap_keys=None).profiles == frozenset({"web-bot-auth"})
    assert repr(_verifier(tap_registry=None, tap_keys=None, algorithms=["ed25519"])) == (
        "WebSignatureVerifier(web_bot_auth=True, tap=False, origins=['https://merchant.example'], "
        "algorithms=['ed25519'])"
    )
    assert repr(tap_only).startswith("WebSignatureVerifier(web_bot_auth=False, tap=True,")
    with pytest.raises(InvalidInput) as caught:
        tap_only.verify("GET", ORIGIN + "/p", _signed(_params()), b"")
    assert caught.value.code == "wrong_tag"


def test_the_default_lifetime_cap_is_24_hours() -> None:
    verifier = _verifier(max_age=90_000)
    assert _web.DEFAULT_WEB_MAX_LIFETIME == 86_400
    assert (
        verifier.verify("GET", ORIGIN + "/p", _signed(_params(expires=NOW + 86_400)), b"").expires
        == NOW + 86_400
    )
    refused = _refused(_signed(_params(expires=NOW + 86_401)), verifier=verifier)
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("lifetime_too_long", {"limit": 86_400})


# -- choosing the signature -----------------------------------------------------------------------


def test_no_signature_at_all_asks_for_one_and_half_a_signature_is_refused() -> None:
    missing = _refused({})
    assert isinstance(missing, AuthenticationRequired)
    assert missing.code == "no_signature"
    headers = _signed(_params())
    for only in ("Signature", "Signature-Input"):
        half = _refused({only: headers[only]})
        assert isinstance(half, InvalidInput)
        assert half.code == "incomplete_signature"


@pytest.mark.parametrize(("field", "value"), [("Signature-Input", "sig1=(("), ("Signature", "sig1=::;;")])
def test_a_malformed_field_is_named(field: str, value: str) -> None:
    refused = _refused({**_signed(_params()), field: value})
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields["field"]) == ("bad_structured_field", field.lower())


def test_other_signatures_beside_the_open_web_one_are_left_alone() -> None:
    """A DID-profile signature, an untagged one and an item member carrying a web tag are not
    candidates: the one open-web inner list is chosen."""
    extra = 'did=("@method");tag="mudrika-did", plain=("@path"), item=1;tag="web-bot-auth"'
    headers = _signed(_params(), extra_input=extra)
    assert _verifier().verify("GET", ORIGIN + "/p", headers, b"").label == "sig1"


def test_two_open_web_signatures_are_ambiguous_unless_a_label_is_configured() -> None:
    first = _signed(_params())
    second = _signed(_params(nonce=NONCE + "x"), label="sig9")
    headers = {
        "Signature-Input": first["Signature-Input"] + ", " + second["Signature-Input"],
        "Signature": first["Signature"] + ", " + second["Signature"],
    }
    refused = _refused(headers)
    assert isinstance(refused, InvalidInput)
    assert (refused.code, str(refused)) == ("ambiguous_signature", "expected exactly one open-web signature")
    assert _verifier(label="sig9").verify("GET", ORIGIN + "/p", headers, b"").label == "sig9"
    assert _verifier(label="sig1").verify("GET", ORIGIN + "/p", headers, b"").nonce == NONCE


def test_a_configured_label_must_be_in_both_fields_and_of_the_right_shapes() -> None:
    headers = _signed(_params())
    for changed in (
        {"Signature-Input": headers["Signature-Input"].replace("sig1=", "other=")},
        {"Signature": headers["Signature"].replace("sig1=", "other=")},
    ):
        refused = _refused({**headers, **changed}, verifier=_verifier(label="sig1"))
        assert isinstance(refused, InvalidInput)
        assert (refused.code, refused.fields) == ("signature_label_mismatch", {"label": "sig1"})
    item = _refused(
        {**headers, "Signature-Input": 'sig1=1;tag="web-bot-auth"'}, verifier=_verifier(label="sig1")
    )
    assert isinstance(item, InvalidInput)
    assert item.code == "bad_signature_input"
    for value in ('sig1="text"', "sig1=7", "sig1=:AAAA:;p=1", "sig1=(:AAAA:)"):
        wrong = _refused({**headers, "Signature": value})
        assert isinstance(wrong, InvalidInput)
        assert (wrong.code, str(wrong)) == ("bad_signature_value", "Signature member must be a byte sequence")


# -- the parameters ------------------------------------------------------------------------------


def test_an_unknown_parameter_is_named_in_32_characters() -> None:
    name = "x-an-unknown-parameter-of-forty-chars-ab"
    refused = _refused(_signed(_params() + f";{name}=1"))
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("unknown_parameter", {"parameter": name[:32]})


@pytest.mark.parametrize(
    ("params", "parameter", "message"),
    [
        (_params(created=-1), "created", "signature parameter must be a non-negative integer"),
        (_params(expires="soon"), "expires", "signature parameter must be a non-negative integer"),
        (
            _params(created=None) + ";created=1.5",
            "created",
            "signature parameter must be a non-negative integer",
        ),
        (_params(keyid=None) + ";keyid=7", "keyid", "signature parameter must be a string"),
        (_params(nonce=None) + ";nonce=?1", "nonce", "signature parameter must be a string"),
        (_params() + ";alg=ed25519", "alg", "signature parameter must be a string"),
    ],
    ids=[
        "negative",
        "string-time",
        "decimal",
        "int-keyid",
        "bool-nonce",
        "token-alg",
    ],
)
def test_parameter_types(params: str, parameter: str, message: str) -> None:
    refused = _refused(_signed(params), verifier=_verifier(label="sig1"))
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields, str(refused)) == (
        "bad_parameter",
        {"parameter": parameter},
        message,
    )


def test_created_may_be_zero() -> None:
    verified = _verifier().verify("GET", ORIGIN + "/p", _signed(_params(created=0, expires=30)), b"", now=10)
    assert verified.created == 0


def test_a_tap_keyId_beside_a_keyid_is_a_repeat() -> None:
    params = _params(keyid=TAP_KID, tag="agent-browser-auth") + f';keyId="{TAP_KID}"'
    refused = _refused(_tap(params), verifier=_verifier(leniency=[LENIENT_KEYID_CASE]))
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("bad_parameter", {"parameter": "keyid"})


# -- the clock, precheck and the async path -------------------------------------------------------


def test_now_given_is_the_instant_judged_and_otherwise_the_clock() -> None:
    verifier = _verifier()
    late = NOW + 1000
    for check in (
        lambda headers: verifier.verify("GET", ORIGIN + "/p", headers, b"", now=late),
        lambda headers: verifier.precheck("GET", ORIGIN + "/p", headers, now=late),
        lambda headers: asyncio.run(verifier.averify("GET", ORIGIN + "/p", headers, b"", now=late)),
    ):
        with pytest.raises(ExpiredError):
            check(_signed(_params()))
    assert verifier.precheck("GET", ORIGIN + "/p", _signed(_params())).checked.created == NOW
    assert asyncio.run(verifier.averify("GET", ORIGIN + "/p", _signed(_params()), b"")).created == NOW


def test_a_precheck_is_reused_only_for_the_same_request() -> None:
    verifier = _verifier()
    headers = _signed(_params())
    prechecked = verifier.precheck("GET", ORIGIN + "/p", headers)
    good_signature = headers["Signature"]
    # The same headers object now carries a broken signature: a reused precheck does not read it again.
    headers["Signature"] = "sig1=:" + base64.b64encode(bytes(64)).decode() + ":"

    async def prepare(method: str, url: str, value: dict[str, str]) -> Any:
        return await verifier.aprepare(method, url, value, b"", prechecked=prechecked)

    pending = asyncio.run(prepare("GET", ORIGIN + "/p", headers))
    assert pending.unclaimed.nonce == NONCE
    for method, url, value in (
        ("POST", ORIGIN + "/p", headers),
        ("GET", ORIGIN + "/p?x", headers),
        ("GET", ORIGIN + "/p", dict(headers)),
    ):
        with pytest.raises(SignatureError) as recomputed:
            asyncio.run(prepare(method, url, value))
        assert recomputed.value.code == "bad_signature"
    headers["Signature"] = good_signature
    with pytest.raises(ExpiredError):
        asyncio.run(
            verifier.aprepare("GET", ORIGIN + "/p", headers, b"", now=NOW + 1000, prechecked=prechecked)
        )


def test_a_prepared_request_is_claimed_once_and_only_when_it_has_a_nonce() -> None:
    store = _CountingStore()
    verifier = _verifier(replay_store=store)
    pending = asyncio.run(verifier.aprepare("GET", ORIGIN + "/p", _signed(_params()), b""))
    assert store.claimed == []
    assert asyncio.run(pending.claim()) is pending.unclaimed
    assert store.claimed == [
        f"webagent:urn:ietf:params:oauth:jwk-thumbprint:sha-256:{THUMBPRINT}#{THUMBPRINT}:{NONCE}"
    ]
    with pytest.raises(ReplayError):
        asyncio.run(pending.claim())
    no_nonce = _verifier(replay_store=store, require_nonce=False)
    unsigned_nonce = _signed(_params(nonce=None))
    for _ in range(2):
        assert (
            asyncio.run(
                asyncio.run(no_nonce.aprepare("GET", ORIGIN + "/p", unsigned_nonce, b"")).claim()
            ).nonce
            is None
        )
        assert no_nonce.verify("GET", ORIGIN + "/p", unsigned_nonce, b"").nonce is None
    assert len(store.claimed) == 2


def test_a_covered_body_is_checked_on_both_paths() -> None:
    body = b'{"q":"tea"}'
    digest = "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"
    headers = _signed(
        _params(),
        components=(('"@authority"', AUTHORITY), ('"content-digest"', digest)),
        extra_headers={"Content-Digest": digest},
    )
    verifier = _verifier()
    assert verifier.verify("POST", ORIGIN + "/p", headers, body).body == body
    for tampered in (b'{"q":"coffee"}', b""):
        with pytest.raises(SignatureError) as sync:
            _verifier().verify("POST", ORIGIN + "/p", headers, tampered)
        with pytest.raises(SignatureError) as both:
            asyncio.run(_verifier().averify("POST", ORIGIN + "/p", headers, tampered))
        assert sync.value.code == both.value.code


# -- what is recorded --------------------------------------------------------------------------------


def test_the_replay_key_scope_is_hashed_past_200_characters_and_the_nonce_past_100() -> None:
    def replay_key(identifier: str, nonce: str) -> str:
        checked: Any = type(
            "C",
            (),
            {
                "ref": type("R", (), {"identifier": identifier})(),
                "nonce": nonce,
                "expires": NOW + 30,
                "created": NOW,
            },
        )()
        key, _ = _verifier()._replay(checked, THUMBPRINT)
        assert key is not None
        return key

    fits = "i" * (200 - 1 - len(THUMBPRINT))
    assert replay_key(fits, NONCE) == f"webagent:{fits}#{THUMBPRINT}:{NONCE}"
    over = fits + "i"
    hashed = "sha256:" + hashlib.sha256(f"{over}#{THUMBPRINT}".encode()).hexdigest()
    assert replay_key(over, NONCE) == f"webagent:{hashed}:{NONCE}"
    long_nonce = "n" * 101
    assert replay_key(fits, "n" * 100).endswith(":" + "n" * 100)
    assert replay_key(fits, long_nonce).endswith(":sha256:" + hashlib.sha256(long_nonce.encode()).hexdigest())


def test_the_result_repr_leaves_out_the_nonce_and_body_and_cuts_the_target() -> None:
    headers = _signed(_params())
    long_path = "/p" + "x" * 300
    verified = _verifier().verify("GET", ORIGIN + long_path, headers, b"")
    text = repr(verified)
    assert text == (
        f"VerifiedAgentRequest(profile='web-bot-auth', agent={verified.agent!r}, "
        f"thumbprint={THUMBPRINT!r}, tag='web-bot-auth', target_uri={(ORIGIN + long_path)[:200]!r})"
    )
    assert NONCE not in text


def test_the_same_covered_list_read_twice_keeps_its_order() -> None:
    verifier = _verifier(require_nonce=False)
    headers = _signed(_params(nonce=None), components=(('"@authority"', AUTHORITY), ('"@path"', "/p")))
    first = verifier.verify("GET", ORIGIN + "/p", headers, b"")
    second = verifier.verify("GET", ORIGIN + "/p", headers, b"")
    assert first.components == second.components == ("@authority", "@path")


def test_a_remembered_list_is_used_only_for_the_very_items_it_was_read_from() -> None:
    """The memo is keyed by ``id``: an entry left by items whose id is now another's is not used."""
    items = (Item("@path"),)
    _web._COVERED[id(items)] = ((Item("@method"),), ("@method",), frozenset({"@method"}))
    assert _web._covered(items) == (("@path",), frozenset({"@path"}))


def test_the_covered_list_memo_holds_at_most_128_lists() -> None:
    _web._COVERED.clear()
    for index in range(300):
        assert _web._covered((Item(f"c{index}"),))[0] == (f"c{index}",)
        assert len(_web._COVERED) <= 128
    # Emptied each time it is full: 128, then 128 more, then the last 44.
    assert len(_web._COVERED) == 300 - 2 * 128


# -- web_profile_of: cheap dispatch, never an error -------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "profile"),
    [
        ({}, None),
        ({"Signature-Input": "sig1=(("}, None),
        ({"Signature-Input": 'sig1=("@method");tag="mudrika-did"'}, None),
        ({"Signature-Input": 'sig1=("@method");tag=1'}, None),
        ({"Signature-Input": 'sig1=1;tag="web-bot-auth"'}, None),
        ({"Signature-Input": 'sig1=("@method")'}, None),
        ({"Signature-Input": 'a=("@method"), b=("@path");tag="agent-payer-auth"'}, "agent-payer-auth"),
        ({"Signature-Input": 'sig2=("@path");keyId="k";tag="agent-browser-auth"'}, "agent-browser-auth"),
    ],
    ids=["none", "malformed", "did", "int-tag", "item", "untagged", "second", "tap-keyId"],
)
def test_web_profile_of(headers: dict[str, str], profile: str | None) -> None:
    assert web_profile_of(headers) == profile


def test_the_leniency_is_named_as_documented() -> None:
    assert LENIENT_KEYID_CASE == "keyid-mixed-case"
    assert _web.WEB_REPLAY_KEY_PREFIX == "webagent:"


def test_tap_and_web_bot_auth_signers_agree_with_the_hand_signed_requests() -> None:
    """The cases above are signed by hand; mudrika's own signers produce requests the same verifier takes."""
    verifier = _verifier(agents=StaticDirectories({AGENT: {"keys": [PINNED.public_key.to_jwk()]}}))
    web = WebBotAuthSigner(PINNED, signature_agent=AGENT, clock=lambda: NOW).sign("GET", ORIGIN + "/p", {})
    assert verifier.verify("GET", ORIGIN + "/p", web.headers, b"").agent == AGENT
    tap = TrustedAgentSigner(TAP_KEY, TAP_KID, tag="agent-browser-auth", clock=lambda: NOW).sign(
        "GET", ORIGIN + "/p", {}
    )
    assert verifier.verify("GET", ORIGIN + "/p", tap.headers, b"").agent == REGISTRY + "#" + TAP_KID
    assert verifier.verify("GET", ORIGIN + "/p", _tap(), b"").keyid == TAP_KID


def test_a_key_the_directory_lacks_is_named() -> None:
    other = KeyPair.generate(KeyType.ED25519)
    agent = ('"signature-agent";key="sig1"', f'"{AGENT}"')
    keyid = other.public_key.thumbprint()
    headers = _signed(_params(keyid=keyid), components=(('"@authority"', AUTHORITY), agent), key=other)
    refused = _refused({**headers, "Signature-Agent": f'sig1="{AGENT}"'})
    assert isinstance(refused, UntrustedKeyError)
    assert (refused.code, refused.fields) == ("unknown_key", {"kid": keyid})


# -- what each profile requires --------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["created", "expires", "keyid", "nonce"])
def test_each_required_parameter_is_named_when_missing(missing: str) -> None:
    refused = _refused(_signed(_params(**{missing: None})))
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("missing_parameter", {"parameter": missing})


def test_tap_requires_a_nonce_even_when_web_bot_auth_does_not() -> None:
    verifier = _verifier(require_nonce=False)
    assert verifier.verify("GET", ORIGIN + "/p", _signed(_params(nonce=None)), b"").nonce is None
    refused = _refused(_tap(nonce=None), verifier=verifier)
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("missing_parameter", {"parameter": "nonce"})


@pytest.mark.parametrize(("covered", "missing"), [("@authority", "@path"), ("@path", "@authority")])
def test_tap_covers_authority_and_path(covered: str, missing: str) -> None:
    value = {"@authority": AUTHORITY, "@path": "/p"}[covered]
    headers = _signed(
        _params(keyid=TAP_KID, tag="agent-browser-auth"),
        components=((f'"{covered}"', value),),
        key=TAP_KEY,
    )
    refused = _refused(headers)
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields, str(refused)) == (
        "missing_component",
        {"component": missing},
        "signature must cover " + missing,
    )


@pytest.mark.parametrize(
    ("keyid", "tap"),
    [
        ("a key id", True),
        ("k" * 257, True),
        ("", True),
        (THUMBPRINT[:-1], False),
        (THUMBPRINT + "A", False),
        ("+" * 43, False),
    ],
    ids=["tap-space", "tap-257", "tap-empty", "wba-short", "wba-long", "wba-alphabet"],
)
def test_keyid_shapes(keyid: str, tap: bool) -> None:
    headers = _tap(keyid=keyid) if tap else _signed(_params(keyid=keyid))
    refused = _refused(headers)
    assert isinstance(refused, InvalidInput)
    assert refused.code == "bad_keyid"


def test_web_bot_auth_covers_authority_or_target_uri() -> None:
    by_target = _signed(_params(), components=(('"@target-uri"', ORIGIN + "/p"),))
    assert _verifier().verify("GET", ORIGIN + "/p", by_target, b"").components == ("@target-uri",)
    by_path = _signed(_params(), components=(('"@path"', "/p"),))
    refused = _refused(by_path)
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("missing_component", {"component": "@authority"})


def test_a_covered_signature_agent_must_be_sent() -> None:
    headers = _signed(
        _params(),
        components=(('"@authority"', AUTHORITY), ('"signature-agent";key="sig1"', f'"{AGENT}"')),
    )
    assert (
        _verifier().verify("GET", ORIGIN + "/p", {**headers, "Signature-Agent": f'sig1="{AGENT}"'}, b"").agent
        == AGENT
    )
    refused = _refused(headers)
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("missing_component", {"component": "signature-agent"})
    malformed = _refused({**headers, "Signature-Agent": "sig1=((("})
    assert isinstance(malformed, InvalidInput)
    assert (malformed.code, malformed.fields["field"]) == ("bad_structured_field", "signature-agent")


@pytest.mark.parametrize(
    "nonce", ["short", "n" * 257, "has space in it and is long enough", "a" * 22 + "==="]
)
def test_a_nonce_of_the_wrong_shape_is_refused(nonce: str) -> None:
    refused = _refused(_signed(_params(nonce=nonce)))
    assert isinstance(refused, InvalidInput)
    assert refused.code == "bad_nonce"


def test_a_window_of_one_instant_is_valid_and_a_reversed_one_is_not() -> None:
    assert (
        _verifier(leeway=0).verify("GET", ORIGIN + "/p", _signed(_params(expires=NOW + 1)), b"").expires
        == NOW + 1
    )
    same = _signed(_params(expires=NOW))
    assert _verifier().verify("GET", ORIGIN + "/p", same, b"").expires == NOW
    refused = _refused(_signed(_params(expires=NOW - 1)))
    assert isinstance(refused, InvalidInput)
    assert (refused.code, str(refused)) == ("bad_time_window", "expires is before created")


def test_a_non_canonical_tap_input_is_verified_over_its_serialisation() -> None:
    """RFC 9421 §2.3: ``@signature-params`` is the serialised inner list, whatever spacing was sent;
    only TAP's ``keyId`` (which has no serialisation) is taken as received."""
    headers = _tap()
    spaced = headers["Signature-Input"].replace(";", "; ")
    assert spaced != headers["Signature-Input"]
    verified = _verifier().verify("GET", ORIGIN + "/p", {**headers, "Signature-Input": spaced}, b"")
    assert verified.keyid == TAP_KID


# -- audience, algorithm, digest, time -------------------------------------------------------------


def test_a_request_to_another_origin_is_wrong_audience() -> None:
    refused = _refused(_signed(_params()), url="https://elsewhere.example/p")
    assert isinstance(refused, BindingError)
    assert (refused.code, str(refused)) == ("wrong_audience", "request addressed to another origin")


@pytest.mark.parametrize(
    ("alg", "allowed", "shown"),
    [
        ("hmac-sha256", REGISTERED_ALGORITHMS, "hmac-sha256"),
        ("ed25519", frozenset({"rsa-pss-sha512"}), "ed25519"),
        ("x" * 40, REGISTERED_ALGORITHMS, "x" * 32),
    ],
    ids=["unknown", "not-allowed", "long"],
)
def test_an_algorithm_outside_the_allow_list_is_named(alg: str, allowed: frozenset[str], shown: str) -> None:
    refused = _refused(_signed(_params(alg=alg)), verifier=_verifier(algorithms=allowed))
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("alg_not_allowed", {"alg": shown})


def test_an_algorithm_named_must_fit_the_key_and_absent_it_is_the_keys_default() -> None:
    assert (
        _verifier().verify("GET", ORIGIN + "/p", _signed(_params(alg="ed25519")), b"").algorithm == "ed25519"
    )
    assert _verifier().verify("GET", ORIGIN + "/p", _signed(_params()), b"").algorithm == "ed25519"
    refused = _refused(_signed(_params(alg="ecdsa-p256-sha256")))
    assert isinstance(refused, SignatureError)
    assert (refused.code, refused.fields) == (
        "alg_key_mismatch",
        {"alg": "ecdsa-p256-sha256", "key_type": "ed25519"},
    )


def test_a_covered_content_digest_must_be_sent() -> None:
    headers = _signed(
        _params(), components=(('"@authority"', AUTHORITY), ('"content-digest"', "sha-256=:AAAA:"))
    )
    refused = _refused(headers)
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("missing_component", {"component": "content-digest"})


LEEWAY = 5


@pytest.mark.parametrize(
    ("now", "error", "code"),
    [
        (NOW - LEEWAY - 1, NotYetValidError, "created_in_future"),
        (NOW - LEEWAY, None, None),
        (NOW + 60 + LEEWAY - 1, None, None),  # just inside max_age + leeway
        (NOW + 60 + LEEWAY, ExpiredError, "signature_too_old"),
    ],
    ids=["future", "earliest", "latest", "too-old"],
)
def test_the_time_window_at_its_instants(now: int, error: type[Exception] | None, code: str | None) -> None:
    verifier = _verifier(leeway=LEEWAY, max_age=60)
    headers = _signed(_params(expires=NOW + 3600))
    if error is None:
        assert verifier.verify("GET", ORIGIN + "/p", headers, b"", now=now).created == NOW
        return
    refused = _refused(headers, verifier=verifier, now=now)
    assert isinstance(refused, error)
    assert refused.code == code


@pytest.mark.parametrize(("now", "expired"), [(NOW + 30 + LEEWAY - 1, False), (NOW + 30 + LEEWAY, True)])
def test_expires_plus_leeway_is_the_first_instant_refused(now: int, expired: bool) -> None:
    verifier = _verifier(leeway=LEEWAY, max_age=3600)
    headers = _signed(_params(expires=NOW + 30))
    if not expired:
        assert verifier.verify("GET", ORIGIN + "/p", headers, b"", now=now).expires == NOW + 30
        return
    refused = _refused(headers, verifier=verifier, now=now)
    assert isinstance(refused, ExpiredError)
    assert (refused.code, str(refused)) == ("signature_expired", "signature expired")


def test_a_default_algorithm_outside_the_allow_list_is_refused() -> None:
    refused = _refused(_signed(_params()), verifier=_verifier(algorithms=["rsa-pss-sha512"]))
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("alg_not_allowed", {"alg": "ed25519"})


# -- the profiles' names and shapes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "profile"),
    [
        ("web-bot-auth", "web-bot-auth"),
        ("agent-browser-auth", "agent-browser-auth"),
        ("agent-payer-auth", "agent-payer-auth"),
        ("mudrika-did", "mudrika-did"),
        ("something-else", "mudrika-did"),
        (None, "mudrika-did"),
    ],
)
def test_a_tag_selects_its_profile_and_anything_else_the_did_profile(tag: str | None, profile: str) -> None:
    assert profile_for_tag(tag) == profile


def test_the_profile_names_and_the_directory_media_type() -> None:
    """The draft's names (tags, the registered directory media type) as peers send them."""
    assert frozenset({"mudrika-did", "web-bot-auth", "agent-browser-auth", "agent-payer-auth"}) == PROFILES
    assert PROFILES - {"mudrika-did"} == WEB_PROFILES
    assert DIRECTORY_MEDIA_TYPE == "application/http-message-signatures-directory+json"


@pytest.mark.parametrize(("length", "accepted"), [(2048, True), (2049, False)])
def test_a_signature_agent_url_is_at_most_2048_characters(length: int, accepted: bool) -> None:
    prefix = "https://crawler.example/"
    url = prefix + "k" * (length - len(prefix))
    if accepted:
        assert agent_ref(url, "jwks_uri").url == url
        return
    with pytest.raises(InvalidInput) as caught:
        agent_ref(url, "jwks_uri")
    assert caught.value.code == "bad_signature_agent"


# -- Signature-Agent URLs -----------------------------------------------------------------------------


def test_the_shape_checks_return_what_they_checked() -> None:
    assert check_web_nonce(NONCE) == NONCE
    assert check_web_keyid(TAP_KID) == TAP_KID
    assert check_thumbprint_keyid(THUMBPRINT) == THUMBPRINT
    assert key_ref(THUMBPRINT).type == "key"


@pytest.mark.parametrize(
    ("url", "agent_type", "fetched", "identifier", "origin"),
    [
        (
            "https://Crawler.Example",
            "directory",
            AGENT + DIRECTORY_WELL_KNOWN,
            AGENT + DIRECTORY_WELL_KNOWN,
            AGENT,
        ),
        (
            "https://crawler.example/",
            "directory",
            AGENT + DIRECTORY_WELL_KNOWN,
            AGENT + DIRECTORY_WELL_KNOWN,
            AGENT,
        ),
        (
            "https://crawler.example:443",
            "directory",
            AGENT + DIRECTORY_WELL_KNOWN,
            AGENT + DIRECTORY_WELL_KNOWN,
            AGENT,
        ),
        (
            "https://crawler.example:444",
            "directory",
            AGENT + ":444" + DIRECTORY_WELL_KNOWN,
            AGENT + ":444" + DIRECTORY_WELL_KNOWN,
            AGENT + ":444",
        ),
        (
            "https://[::1]:8443",
            "directory",
            "https://[::1]:8443" + DIRECTORY_WELL_KNOWN,
            "https://[::1]:8443" + DIRECTORY_WELL_KNOWN,
            "https://[::1]:8443",
        ),
        (
            "https://crawler.example/keys.json?v=2",
            "jwks_uri",
            AGENT + "/keys.json?v=2",
            AGENT + "/keys.json",
            AGENT,
        ),
        ("https://crawler.example", "cimd", AGENT + "/", AGENT + "/", AGENT),
    ],
    ids=["directory", "slash", "port-443", "port-444", "ipv6", "jwks-query", "cimd"],
)
def test_agent_references(url: str, agent_type: str, fetched: str, identifier: str, origin: str) -> None:
    ref = agent_ref(url, agent_type)
    assert (ref.type, ref.url, ref.identifier, ref.origin) == (agent_type, fetched, identifier, origin)
    assert ref.agent == (origin if agent_type == "directory" else identifier)


@pytest.mark.parametrize(
    ("url", "agent_type", "message"),
    [
        (None, "directory", "Signature-Agent URL missing or too long"),
        ("https://crawlér.example", "directory", "Signature-Agent URL missing or too long"),
        ("https://crawler.example:99999", "directory", "Signature-Agent is not a URL"),
        ("http://crawler.example", "directory", "Signature-Agent must be an https URL"),
        ("https://crawler.example/a b", "jwks_uri", "Signature-Agent URL has forbidden characters"),
        ("https://crawler.example/a\tb", "jwks_uri", "Signature-Agent URL has forbidden characters"),
        ("https://crawler.example/a\rb", "jwks_uri", "Signature-Agent URL has forbidden characters"),
        ("https://crawler.example/a\nb", "jwks_uri", "Signature-Agent URL has forbidden characters"),
        ("https://crawler.example/a\\b", "jwks_uri", "Signature-Agent URL has forbidden characters"),
        ("https://crawler.example/keys", "directory", "a directory Signature-Agent must be an origin"),
        ("https://crawler.example/?v=1", "directory", "a directory Signature-Agent must be an origin"),
        ("https://crawler.example?", "directory", "a directory Signature-Agent must be an origin"),
        ("https://crawler.example#", "directory", "a directory Signature-Agent must be an origin"),
        ("https://crawler.example/#top", "directory", "a directory Signature-Agent must be an origin"),
        ("https://crawler.example/keys#top", "jwks_uri", "Signature-Agent URL has a fragment"),
    ],
    ids=[
        "none",
        "non-ascii",
        "bad-port",
        "http",
        "space",
        "tab",
        "cr",
        "lf",
        "backslash",
        "dir-path",
        "dir-query",
        "dir-empty-query",
        "dir-empty-fragment",
        "dir-fragment",
        "jwks-fragment",
    ],
)
def test_agent_reference_refusals(url: Any, agent_type: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        agent_ref(url, agent_type)
    assert (caught.value.code, str(caught.value)) == ("bad_signature_agent", message)


def test_an_unsupported_agent_type_is_named_in_32_characters() -> None:
    with pytest.raises(InvalidInput) as caught:
        agent_ref(AGENT, "t" * 40)
    assert (caught.value.code, caught.value.fields) == ("unsupported_agent_type", {"type": "t" * 32})


# -- the Signature-Agent member a signature covers ----------------------------------------------------


def _covering(*params: tuple[str, Any]) -> InnerList:
    return InnerList((Item("@authority"), Item("signature-agent", params)))


@pytest.mark.parametrize(
    ("value", "covered", "message"),
    [
        (f'"{AGENT}"', _covering(("key", "sig1")), "legacy Signature-Agent is covered whole"),
        (f'"{AGENT}";a=1', _covering(), "Signature-Agent must be a string"),
        (
            f'sig1="{AGENT}"',
            _covering(),
            'a dictionary Signature-Agent is covered as "signature-agent";key="<member>"',
        ),
        (
            f'sig1="{AGENT}"',
            _covering(("key", 1)),
            'a dictionary Signature-Agent is covered as "signature-agent";key="<member>"',
        ),
        (
            f'sig1="{AGENT}"',
            _covering(("key", "sig1"), ("other", 1)),
            'a dictionary Signature-Agent is covered as "signature-agent";key="<member>"',
        ),
        (
            f'sig1="{AGENT}"',
            _covering(("key", "sig2")),
            "covered Signature-Agent member missing or not a string",
        ),
        ("sig1=7", _covering(("key", "sig1")), "covered Signature-Agent member missing or not a string"),
        (
            f'sig1="{AGENT}";type="jwks_uri"',
            _covering(("key", "sig1")),
            "Signature-Agent type must be a token",
        ),
    ],
    ids=[
        "legacy-with-key",
        "legacy-params",
        "dict-bare",
        "dict-int-key",
        "dict-extra",
        "dict-other-member",
        "dict-int",
        "type-string",
    ],
)
def test_signature_agent_refusals(value: str, covered: InnerList, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_signature_agent(value, covered)
    assert (caught.value.code, str(caught.value)) == ("bad_signature_agent", message)


@pytest.mark.parametrize(
    ("value", "key"), [('"(((', ()), ("sig1=(((", (("key", "sig1"),))], ids=["legacy", "dictionary"]
)
def test_a_malformed_signature_agent_names_its_field(value: str, key: tuple[tuple[str, str], ...]) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_signature_agent(value, _covering(*key))
    assert (caught.value.code, caught.value.fields["field"]) == ("bad_structured_field", "signature-agent")


def test_a_typed_member_is_read_with_its_type() -> None:
    agent = parse_signature_agent(f'sig1="{AGENT}/keys.json";type=jwks_uri', _covering(("key", "sig1")))
    assert (agent.key, agent.ref.type, agent.ref.url) == ("sig1", "jwks_uri", AGENT + "/keys.json")
    legacy = parse_signature_agent(f'"{AGENT}"', _covering())
    assert (legacy.key, legacy.ref.type) == (None, "directory")


def test_the_members_read_memo_holds_at_most_1024() -> None:
    _webprofile._agents_read.clear()
    for index in range(1100):
        agent = parse_signature_agent(f'sig1="https://a{index}.example"', _covering(("key", "sig1")))
        assert agent.ref.origin == f"https://a{index}.example"
        assert len(_webprofile._agents_read) <= 1024
    assert len(_webprofile._agents_read) == 1100 - 1024


def test_a_keyid_beside_a_signature_agent_must_be_a_thumbprint() -> None:
    """With a Signature-Agent the keyid is looked up in the agent's directory: its shape is still
    refused first, by name, not reported as a key the directory lacks."""
    agent = ('"signature-agent";key="sig1"', f'"{AGENT}"')
    headers = _signed(_params(keyid="not-a-thumbprint"), components=(('"@authority"', AUTHORITY), agent))
    refused = _refused({**headers, "Signature-Agent": f'sig1="{AGENT}"'})
    assert isinstance(refused, InvalidInput)
    assert refused.code == "bad_keyid"


def test_a_missing_covered_signature_agent_is_refused_before_the_time_is_judged() -> None:
    """Step 4's order: what the signature covers is settled before its time window."""
    agent = ('"signature-agent";key="sig1"', f'"{AGENT}"')
    headers = _signed(
        _params(created=NOW - 100, expires=NOW - 50), components=(('"@authority"', AUTHORITY), agent)
    )
    refused = _refused(headers)
    assert isinstance(refused, InvalidInput)
    assert (refused.code, refused.fields) == ("missing_component", {"component": "signature-agent"})


@pytest.mark.parametrize(
    "covered",
    [
        InnerList((Item("@authority"),)),
        InnerList((Item("signature-agent", (("key", "sig1"),)), Item("signature-agent", (("key", "sig2"),)))),
    ],
    ids=["none", "two"],
)
def test_a_signature_covers_exactly_one_signature_agent_member(covered: InnerList) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_signature_agent(f'sig1="{AGENT}", sig2="{AGENT}"', covered)
    assert (caught.value.code, caught.value.fields) == ("missing_component", {"component": "signature-agent"})
