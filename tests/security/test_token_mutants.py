"""Boundaries of the access-token verifier that the mutation check found unpinned.

Why: each test here fails when one small change is made to ``trust/keycloak/tokens.py`` — a size
cap or lifetime moved by one, a refusal dropped, a cache step skipped — that no other test noticed
(``bash scripts/mutation.sh --module trust/keycloak/tokens.py``).  Opaque tokens answered by a
stand-in introspector keep the cache tests cheap; the JWT tests use the local realm's keys.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from mudrika.crypto import jose
from mudrika.errors import IdpUnavailable, InvalidInput
from mudrika.trust.jsonrpc import AuthenticationRequired, InvalidToken, TokenExpired
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier, token_id
from tests._support.tokenfactory import Clock, LocalRealm, realm_jwks

#: The documented limits, written out so that moving one is a visible change.
MAX_TOKEN_CHARS = 16 * 1024
MAX_ROLES = 1024
MAX_ROLE_CHARS = 256


class Answers:
    """An introspector that calls every opaque token active for ``lifetime`` seconds."""

    def __init__(self, clock: Clock, realm: LocalRealm, **claims: Any) -> None:
        self.clock = clock
        self.realm = realm
        self.claims = claims
        self.calls = 0

    def introspect(self, token: str) -> dict[str, Any]:
        self.calls += 1
        answer: dict[str, Any] = {"active": True, **self.realm.claims(), "token_type": "Bearer"}
        answer.update(self.claims)
        return {name: value for name, value in answer.items() if value is not None}

    async def aintrospect(self, token: str) -> dict[str, Any]:
        return self.introspect(token)


class Failing:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def introspect(self, token: str) -> dict[str, Any]:
        raise self.error

    async def aintrospect(self, token: str) -> dict[str, Any]:
        raise self.error


def _verifier(realm: LocalRealm, jwks: JwksCache, clock: Clock, **options: Any) -> AccessTokenVerifier:
    settings: dict[str, Any] = {"audience": realm.audience, "azp_allowlist": None}
    settings.update(options)
    return AccessTokenVerifier(issuer=realm.issuer, jwks=jwks, clock=clock, **settings)


@pytest.fixture
def long_lived_jwks(realm: LocalRealm) -> Iterator[JwksCache]:
    """A JWKS cache whose TTL (1 h) does not shorten the verifier's own cache lifetime."""
    with realm_jwks(realm, ttl=3600) as cache:
        yield cache


# --- token_id -------------------------------------------------------------------------------------


def test_token_id_is_the_first_12_hex_digits_of_the_sha256_of_the_token() -> None:
    assert token_id("abc") == hashlib.sha256(b"abc").hexdigest()[:12]
    assert token_id(b"abc") == token_id("abc")
    assert token_id("\udc80") == hashlib.sha256("\udc80".encode("utf-8", "surrogatepass")).hexdigest()[:12]


def test_a_verified_token_carries_its_token_id(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    token = realm.token()
    assert _verifier(realm, jwks, clock).verify(token).token_id == token_id(token)


def test_a_rejection_is_logged_by_token_id_and_code(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    verifier = _verifier(realm, jwks, clock)
    wrong_typ = realm.token(typ="ID")
    opaque = "opaque-token"
    with caplog.at_level(logging.INFO, logger="mudrika.trust.keycloak.tokens"):
        with pytest.raises(InvalidToken):
            verifier.verify(wrong_typ)
        with pytest.raises(InvalidToken):
            verifier.verify(opaque)
    assert f"credential sha256:{token_id(wrong_typ)} rejected: wrong_typ" in caplog.text
    assert f"credential sha256:{token_id(opaque)} rejected: malformed_token" in caplog.text


@pytest.mark.anyio
async def test_an_async_rejection_is_logged_by_token_id_and_code(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    verifier = _verifier(realm, jwks, clock)
    wrong_typ = realm.token(typ="Refresh")
    with caplog.at_level(logging.INFO, logger="mudrika.trust.keycloak.tokens"), pytest.raises(InvalidToken):
        await verifier.averify(wrong_typ)
    assert f"credential sha256:{token_id(wrong_typ)} rejected: wrong_typ" in caplog.text


# --- sizes ----------------------------------------------------------------------------------------


def test_the_default_size_cap_is_16_kib(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    with pytest.raises(InvalidToken) as at_cap:
        verifier.verify("a" * MAX_TOKEN_CHARS)
    assert at_cap.value.code == "malformed_token"  # read, then refused as no JWT
    with pytest.raises(InvalidToken) as over:
        verifier.verify("a" * (MAX_TOKEN_CHARS + 1))
    assert over.value.code == "too_large"


@pytest.mark.parametrize("token", ["", None, b"a.b.c", 42])
def test_an_empty_or_non_text_token_is_authentication_required(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, token: object
) -> None:
    """A caller passing ``None`` (no header) must get the typed refusal, never an AttributeError."""
    with pytest.raises(AuthenticationRequired) as caught:
        _verifier(realm, jwks, clock).verify(token)  # type: ignore[arg-type]
    assert caught.value.code == "no_token"


def _realm_roles(count: int, length: int = 8) -> dict[str, Any]:
    return {"roles": [f"{n:0{length}d}" for n in range(count)]}


@pytest.mark.parametrize(
    ("claims", "code", "claim"),
    [
        ({"realm_access": _realm_roles(MAX_ROLES + 1)}, "malformed_claim", "realm_access"),
        ({"realm_access": {"roles": ["x" * (MAX_ROLE_CHARS + 1)]}}, "malformed_claim", "realm_access"),
        ({"realm_access": {"roles": [""]}}, "malformed_claim", "realm_access"),
        ({"realm_access": {"roles": "agent"}}, "malformed_claim", "realm_access"),
        ({"realm_access": ["agent"]}, "malformed_claim", "realm_access"),
        ({"realm_access": {"roles": ["a/b"]}}, "role_name_slash", "realm_access"),
        (
            {"resource_access": {f"c{n}": {"roles": ["r"]} for n in range(MAX_ROLES + 1)}},
            "malformed_claim",
            "resource_access",
        ),
        ({"resource_access": ["agent-api"]}, "malformed_claim", "resource_access"),
        ({"resource_access": {"": {"roles": ["r"]}}}, "malformed_claim", "resource_access"),
        (
            {"resource_access": {"c" * (MAX_ROLE_CHARS + 1): {"roles": ["r"]}}},
            "malformed_claim",
            "resource_access",
        ),
        ({"resource_access": {"api": ["r"]}}, "malformed_claim", "resource_access"),
        ({"resource_access": {"a/b": {"roles": ["r"]}}}, "role_name_slash", "resource_access"),
        ({"resource_access": {"api": {"roles": ["x/y"]}}}, "role_name_slash", "resource_access"),
        (
            {"realm_access": _realm_roles(600), "resource_access": {"api": _realm_roles(425)}},
            "malformed_claim",
            "roles",
        ),
        ({"sub": "s" * (MAX_ROLE_CHARS + 1)}, "malformed_claim", "sub"),
        ({"sub": 7}, "malformed_claim", "sub"),
        ({"sub": ""}, "malformed_claim", "sub"),
        ({"scope": "s" * (64 * MAX_ROLE_CHARS + 1)}, "malformed_claim", "scope"),
        ({"scope": ["profile"]}, "malformed_claim", "scope"),
        ({"groups": "/admins"}, "malformed_claim", "groups"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_claim_shapes_and_caps_are_refused_with_the_claim_named(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, claims: dict[str, Any], code: str, claim: str
) -> None:
    verifier = _verifier(realm, jwks, clock, max_token_bytes=1 << 20)
    with pytest.raises(InvalidToken) as caught:
        verifier.verify(realm.token(**claims))
    assert (caught.value.code, caught.value.fields["claim"]) == (code, claim)


def test_claims_exactly_at_their_caps_are_accepted(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock, max_token_bytes=1 << 20)
    token = realm.token(
        sub="s" * MAX_ROLE_CHARS,
        scope="s" * (64 * MAX_ROLE_CHARS),
        realm_access=_realm_roles(MAX_ROLES - 1),
        resource_access={"c" * MAX_ROLE_CHARS: {"roles": ["r" * MAX_ROLE_CHARS]}},
    )
    principal = verifier.verify(token).principal
    assert len(principal.roles) == MAX_ROLES
    assert "c" * MAX_ROLE_CHARS + "/" + "r" * MAX_ROLE_CHARS in principal.roles
    assert principal.subject == "s" * MAX_ROLE_CHARS
    full = realm.token(realm_access=_realm_roles(MAX_ROLES), resource_access=None)
    assert len(verifier.verify(full).principal.roles) == MAX_ROLES


def test_the_principal_keeps_a_short_claim_summary_and_the_provider(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    claims = realm.claims(client_id="agent-gateway", groups=[], scope="")
    token = realm.token(**{k: v for k, v in claims.items() if k not in {"jti"}})
    principal = _verifier(realm, jwks, clock).verify(token).principal
    assert principal.token_claims is not None
    assert dict(principal.token_claims) == {
        name: claims[name] for name in ("iss", "sub", "azp", "client_id", "exp", "iat")
    }
    assert principal.identity_provider == "keycloak"
    assert principal.groups == frozenset()
    assert principal.permissions == frozenset()


# --- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"issuer": ""}, "bad_config"),
        ({"audience": None, "azp_allowlist": None}, "bad_config"),
        ({"azp_allowlist": ["agent-gateway"]}, "bad_config"),
        ({"audience": []}, "bad_config"),
        ({"audience": ["agent-api", ""]}, "bad_config"),
        ({"audience": None, "azp_allowlist": "agent-gateway"}, "bad_config"),
        ({"audience": None, "azp_allowlist": []}, "bad_config"),
        ({"audience": None, "azp_allowlist": ["ok", ""]}, "bad_config"),
        ({"leeway": -0.5}, "bad_leeway"),
        ({"leeway": 60.5}, "bad_leeway"),
        ({"algorithms": []}, "bad_config"),
        ({"algorithms": ["RS256", "None"]}, "bad_config"),
        ({"cache_size": -1}, "bad_config"),
        ({"cache_ttl": -0.5}, "bad_config"),
        ({"introspection_cache_ttl": -0.5}, "bad_config"),
        ({"max_token_bytes": 0}, "bad_config"),
    ],
    ids=lambda value: repr(value)[:40],
)
def test_bad_configuration_is_refused(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, options: dict[str, Any], code: str
) -> None:
    settings: dict[str, Any] = {"issuer": realm.issuer, "audience": realm.audience, "azp_allowlist": None}
    settings.update(options)
    with pytest.raises(InvalidInput) as caught:
        AccessTokenVerifier(jwks=jwks, clock=clock, **settings)
    assert caught.value.code == code


def test_the_edges_of_every_setting_are_accepted(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    for options in (
        {"leeway": 0},
        {"leeway": 60},
        {"cache_size": 0, "cache_ttl": 0, "introspection_cache_ttl": 0, "max_token_bytes": 1},
        {"audience": None, "azp_allowlist": ["agent-gateway"]},
    ):
        _verifier(realm, jwks, clock, **options)


def test_the_default_algorithm_is_rs256_only(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    assert verifier.algorithms == frozenset({"RS256"})
    assert verifier.verify(realm.token()).source == "jwt"


def test_repr_names_the_issuer_and_the_audience_or_the_clients(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    by_audience = _verifier(realm, jwks, clock, audience=["b", "a"])
    assert repr(by_audience) == f"AccessTokenVerifier(issuer={realm.issuer!r}, audience=['a', 'b'])"
    by_azp = _verifier(realm, jwks, clock, audience=None, azp_allowlist=["gw"])
    assert repr(by_azp) == f"AccessTokenVerifier(issuer={realm.issuer!r}, azp=['gw'])"


# --- time -------------------------------------------------------------------------------------------


def test_the_default_leeway_is_30_seconds(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock, cache_size=0)
    now = int(clock())
    assert verifier.verify(realm.token(exp=now - 29)).principal.subject
    with pytest.raises(TokenExpired):
        verifier.verify(realm.token(exp=now - 30))


# --- the verified-token cache -------------------------------------------------------------------------


def test_a_jwt_result_is_cached_for_300_seconds_by_default(
    realm: LocalRealm, long_lived_jwks: JwksCache, clock: Clock
) -> None:
    verifier = _verifier(realm, long_lived_jwks, clock)
    token = realm.token(exp=int(clock()) + 3000)
    verifier.verify(token)
    first = verifier.verify(token)  # stored: the token came again
    clock.advance(299.5)
    assert verifier.verify(token) is first
    clock.advance(0.5)
    assert verifier.verify(token) is not first


def test_a_jwt_result_never_outlives_the_jwks_ttl(realm: LocalRealm, clock: Clock) -> None:
    with realm_jwks(realm, ttl=100) as jwks:
        verifier = _verifier(realm, jwks, clock)
        token = realm.token(exp=int(clock()) + 3000)
        verifier.verify(token)
        first = verifier.verify(token)
        clock.advance(99.5)
        assert verifier.verify(token) is first
        clock.advance(0.5)
        assert verifier.verify(token) is not first


def _opaque_verifier(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, **options: Any
) -> tuple[AccessTokenVerifier, Answers]:
    answers = Answers(clock, realm, exp=int(clock()) + 3000)
    return _verifier(realm, jwks, clock, introspector=answers, **options), answers


def test_an_introspection_result_is_cached_for_60_seconds_by_default(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier, answers = _opaque_verifier(realm, jwks, clock)
    first = verifier.verify("opaque-a")
    assert (first.source, first.kid) == ("introspection", None)
    assert "active" not in first.claims
    clock.advance(59.5)
    assert verifier.verify("opaque-a") is first
    clock.advance(0.5)
    assert verifier.verify("opaque-a") is not first
    assert answers.calls == 2


def test_the_cache_holds_10000_results_by_default(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier, _ = _opaque_verifier(realm, jwks, clock)
    for n in range(10_001):
        verifier.verify(f"opaque-{n}")
    assert verifier.cache_len == 10_000


def test_the_cache_evicts_the_least_recently_used_result(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier, answers = _opaque_verifier(realm, jwks, clock, cache_size=2)
    verifier.verify("opaque-a")
    verifier.verify("opaque-b")
    assert verifier.cache_len == 2
    verifier.verify("opaque-a")  # a hit: now the most recently used
    verifier.verify("opaque-c")  # evicts b
    assert answers.calls == 3
    verifier.verify("opaque-a")
    verifier.verify("opaque-c")
    assert answers.calls == 3
    verifier.verify("opaque-b")
    assert answers.calls == 4


def test_a_cache_of_size_zero_keeps_nothing(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier, answers = _opaque_verifier(realm, jwks, clock, cache_size=0)
    verifier.verify("opaque-a")
    verifier.verify("opaque-a")
    assert (verifier.cache_len, answers.calls) == (0, 2)


def test_clear_cache_forgets_every_result(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier, answers = _opaque_verifier(realm, jwks, clock)
    verifier.verify("opaque-a")
    verifier.clear_cache()
    assert verifier.cache_len == 0
    verifier.verify("opaque-a")
    assert answers.calls == 2


def test_a_header_is_parsed_once_per_token_and_once_per_key(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verifier reads the header to choose the key and verifies the token it opened: the
    header is decoded once for a new header, and not again for further tokens carrying it."""
    decoded: list[str] = []
    original = jose.decode_protected_header

    def counting(encoded: str) -> dict[str, Any]:
        decoded.append(encoded)
        return original(encoded)

    monkeypatch.setattr(jose, "decode_protected_header", counting)
    verifier = _verifier(realm, jwks, clock, cache_size=0)
    fresh = {"x-test": token_id(realm.token())}  # a header no earlier test produced
    for n in range(3):
        assert verifier.verify(realm.token(header=fresh, jti=f"p{n}")).source == "jwt"
    assert len(decoded) == 1


def test_distinct_tokens_leave_only_digests_behind(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    """What a token verified once leaves in the verifier is its 32-byte digest, bounded by the cache
    size, and no result."""
    verifier = _verifier(realm, jwks, clock, cache_size=2)
    for n in range(5):
        verifier.verify(realm.token(jti=f"d{n}"))
        assert verifier.cache_len == 0
        assert len(verifier._seen) <= 2
    assert all(isinstance(digest, bytes) and len(digest) == 32 for digest in verifier._seen)


# --- opaque tokens and introspection --------------------------------------------------------------


@pytest.mark.parametrize("token", ["one.dot", "three.dots.in.it", "no-dots"])
def test_a_token_without_exactly_two_dots_is_introspected(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, token: str
) -> None:
    verifier, answers = _opaque_verifier(realm, jwks, clock)
    assert verifier.verify(token).source == "introspection"
    assert answers.calls == 1


def test_an_opaque_token_outside_the_b64token_syntax_is_refused_unasked(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier, answers = _opaque_verifier(realm, jwks, clock)
    with pytest.raises(InvalidToken) as caught:
        verifier.verify("not a token")
    assert caught.value.code == "malformed_token"
    assert answers.calls == 0


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ({"active": "true"}, "inactive"),
        ({"active": False}, "inactive"),
        ({"token_type": "refresh_token"}, "wrong_typ"),
        ({"token_type": 1}, "wrong_typ"),
        ({"typ": "ID"}, "wrong_typ"),
        ({"typ": "Bearer", "token_type": "refresh"}, "wrong_typ"),
        ({"exp": None}, "missing_claim"),
        ({"iss": "https://elsewhere.test/realms/x"}, "wrong_iss"),
        ({"aud": "another-api"}, "wrong_aud"),
        ({"aud": [1, "another-api"]}, "wrong_aud"),
    ],
    ids=lambda value: repr(value)[:40],
)
def test_introspection_answers_are_checked_like_jwts(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, answer: dict[str, Any], code: str
) -> None:
    answers = Answers(clock, realm, exp=int(clock()) + 3000)
    answers.claims.update(answer)
    verifier = _verifier(realm, jwks, clock, introspector=answers)
    with pytest.raises(InvalidToken) as caught:
        verifier.verify("opaque-token")
    assert caught.value.code == code


@pytest.mark.parametrize(
    "answer",
    [{"token_type": "bearer"}, {"token_type": None, "typ": None}, {"iss": None}, {"aud": "agent-api"}],
    ids=lambda value: repr(value)[:40],
)
def test_introspection_answers_that_pass(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, answer: dict[str, Any]
) -> None:
    answers = Answers(clock, realm, exp=int(clock()) + 3000)
    answers.claims.update(answer)
    verified = _verifier(realm, jwks, clock, introspector=answers).verify("opaque-token")
    assert verified.source == "introspection"


def test_an_introspected_token_not_yet_valid_is_invalid_not_expired(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    answers = Answers(clock, realm, exp=int(clock()) + 3000, nbf=int(clock()) + 600)
    with pytest.raises(InvalidToken) as caught:
        _verifier(realm, jwks, clock, introspector=answers).verify("opaque-token")
    assert caught.value.code == "not_yet_valid"
    assert type(caught.value) is InvalidToken
    assert str(caught.value).startswith("token not yet valid")  # says why, not only "invalid token"


def test_an_expired_introspected_token_is_token_expired(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    answers = Answers(clock, realm, exp=int(clock()) - 600)
    with pytest.raises(TokenExpired):
        _verifier(realm, jwks, clock, introspector=answers).verify("opaque-token")


def test_an_azp_verifier_reads_client_id_when_azp_is_absent(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    answers = Answers(clock, realm, exp=int(clock()) + 3000, azp=None, client_id="agent-gateway")
    verifier = _verifier(
        realm, jwks, clock, audience=None, azp_allowlist=["agent-gateway"], introspector=answers
    )
    assert verifier.verify("opaque-token").source == "introspection"
    answers.claims["client_id"] = "another-client"
    with pytest.raises(InvalidToken) as caught:
        verifier.verify("opaque-token-2")
    assert caught.value.code == "wrong_azp"


class _NotAMapping:
    def introspect(self, token: str) -> Any:
        return ["active"]

    async def aintrospect(self, token: str) -> Any:
        return ["active"]


@pytest.mark.parametrize(
    ("introspector", "code"),
    [
        (Failing(IdpUnavailable("down", code="idp_down")), "idp_down"),
        (Failing(RuntimeError("boom")), "introspection_failed"),
        (_NotAMapping(), "introspection_failed"),
    ],
    ids=["idp-unavailable-kept", "other-error-wrapped", "not-a-mapping"],
)
def test_an_introspection_failure_is_idp_unavailable(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, introspector: Any, code: str
) -> None:
    verifier = _verifier(realm, jwks, clock, introspector=introspector)
    with pytest.raises(IdpUnavailable) as caught:
        verifier.verify("opaque-token")
    assert caught.value.code == code


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("introspector", "code"),
    [
        (Failing(IdpUnavailable("down", code="idp_down")), "idp_down"),
        (Failing(RuntimeError("boom")), "introspection_failed"),
        (_NotAMapping(), "introspection_failed"),
    ],
    ids=["idp-unavailable-kept", "other-error-wrapped", "not-a-mapping"],
)
async def test_an_async_introspection_failure_is_idp_unavailable(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, introspector: Any, code: str
) -> None:
    verifier = _verifier(realm, jwks, clock, introspector=introspector)
    with pytest.raises(IdpUnavailable) as caught:
        await verifier.averify("opaque-token")
    assert caught.value.code == code


def test_a_failed_introspection_is_logged_by_exception_type(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    verifier = _verifier(realm, jwks, clock, introspector=Failing(RuntimeError("secret detail")))
    with (
        caplog.at_level(logging.WARNING, logger="mudrika.trust.keycloak.tokens"),
        pytest.raises(IdpUnavailable),
    ):
        verifier.verify("opaque-token")
    assert "introspection failed (RuntimeError)" in caplog.text
    assert "secret detail" not in caplog.text


@pytest.mark.anyio
async def test_async_lightweight_and_opaque_tokens_are_introspected(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    answers = Answers(clock, realm, exp=int(clock()) + 3000)
    verifier = _verifier(realm, jwks, clock, introspector=answers)
    assert (await verifier.averify("opaque-token")).source == "introspection"
    lightweight = realm.token(typ=None, realm_access=None, resource_access=None)
    assert (await verifier.averify(lightweight)).source == "introspection"
    assert (await verifier.averify(realm.token())).source == "jwt"
    assert answers.calls == 2


@pytest.mark.anyio
async def test_async_a_lightweight_token_without_introspection_is_refused(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier = _verifier(realm, jwks, clock)
    with pytest.raises(InvalidToken) as caught:
        await verifier.averify(realm.token(typ=None))
    assert caught.value.code == "wrong_typ"
    with pytest.raises(InvalidToken) as opaque:
        await verifier.averify("opaque-token")
    assert opaque.value.code == "malformed_token"


# --- which JWTs are lightweight ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "missing",
    [
        {"typ": None},
        {"sub": None},
        {"aud": None},
        {"realm_access": None, "resource_access": None},
    ],
    ids="+".join,
)
def test_a_jwt_missing_an_access_token_claim_is_introspected(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, missing: dict[str, Any]
) -> None:
    answers = Answers(clock, realm, exp=int(clock()) + 3000)
    verifier = _verifier(realm, jwks, clock, introspector=answers)
    assert verifier.verify(realm.token(**missing)).source == "introspection"
    assert answers.calls == 1


@pytest.mark.parametrize(
    "present", [{"resource_access": None}, {"realm_access": None}], ids=["realm-only", "client-only"]
)
def test_a_jwt_with_either_role_claim_is_not_lightweight(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, present: dict[str, Any]
) -> None:
    answers = Answers(clock, realm, exp=int(clock()) + 3000)
    verifier = _verifier(realm, jwks, clock, introspector=answers)
    assert verifier.verify(realm.token(**present)).source == "jwt"
    assert answers.calls == 0


def test_an_azp_verifier_calls_a_jwt_without_azp_lightweight(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    answers = Answers(clock, realm, exp=int(clock()) + 3000)
    verifier = _verifier(
        realm, jwks, clock, audience=None, azp_allowlist=["agent-gateway"], introspector=answers
    )
    assert verifier.verify(realm.token(aud=None)).source == "jwt"
    assert verifier.verify(realm.token(azp=None)).source == "introspection"


@pytest.mark.parametrize(
    ("header", "code"),
    [
        ({"jku": "https://evil.test/jwks"}, "forbidden_header"),
        ({"kid": None}, "missing_kid"),
        ({"kid": ""}, "missing_kid"),
        ({"kid": 7}, "missing_kid"),
        ({"alg": 7}, "alg_not_allowed"),
    ],
    ids=lambda value: repr(value)[:30],
)
def test_header_refusals(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, header: dict[str, Any], code: str
) -> None:
    token = realm.token(header=header)
    with pytest.raises(InvalidToken) as caught:
        _verifier(realm, jwks, clock).verify(token)
    assert caught.value.code == code


@pytest.mark.parametrize("aud", ["agent-api", ["other", "agent-api"]], ids=["text", "list"])
def test_the_audience_matches_as_text_or_in_a_list(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, aud: str | list[str]
) -> None:
    assert _verifier(realm, jwks, clock).verify(realm.token(aud=aud)).source == "jwt"


@pytest.mark.parametrize("aud", ["other", ["other", 5], 5], ids=["text", "list", "number"])
def test_another_audience_is_refused(realm: LocalRealm, jwks: JwksCache, clock: Clock, aud: Any) -> None:
    with pytest.raises(InvalidToken) as caught:
        _verifier(realm, jwks, clock).verify(realm.token(aud=aud))
    assert caught.value.code == "wrong_aud"


def test_one_character_roles_and_a_realm_access_without_roles_are_fine(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier = _verifier(realm, jwks, clock)
    principal = verifier.verify(
        realm.token(realm_access={}, resource_access={"a": {"roles": ["b"]}})
    ).principal
    assert principal.roles == frozenset({"a/b"})
    assert verifier.verify(realm.token(realm_access={"roles": ["x"]})).principal.roles >= {"x"}


def test_a_token_without_scope_or_groups_has_none(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    """Both claims are optional: absent, the principal holds no permissions and no groups (an empty
    scope string likewise), never an error."""
    verifier = _verifier(realm, jwks, clock)
    for scope in (None, ""):
        principal = verifier.verify(realm.token(scope=scope, groups=None)).principal
        assert (principal.permissions, principal.groups) == (frozenset(), frozenset())
    principal = verifier.verify(realm.token(scope="read write", groups=["/ops"])).principal
    assert (principal.permissions, principal.groups) == (frozenset({"read", "write"}), frozenset({"/ops"}))


def test_an_empty_azp_allowlist_entry_names_the_option(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    with pytest.raises(InvalidInput) as refused:
        _verifier(realm, jwks, clock, audience=None, azp_allowlist=["ok", ""])
    assert (refused.value.code, refused.value.fields["option"]) == ("bad_config", "azp_allowlist")


def test_a_key_set_refreshed_elsewhere_voids_the_cached_results(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    """The JWKS cache is shared: when another verifier (or a refresh timer) learns that a key was
    retired, this verifier's cached results under the old key set must not be served again, even
    before it stores anything itself."""
    verifier = _verifier(realm, jwks, clock)
    old = realm.token()
    verifier.verify(old)
    verifier.verify(old)
    assert verifier.cache_len == 1
    realm.rotate("k2")
    realm.retire("k1")
    jwks.refresh()  # someone else's refresh: a new generation, k1 gone
    with pytest.raises(InvalidToken) as refused:
        verifier.verify(old)
    assert refused.value.code == "unknown_kid"
    assert verifier.cache_len == 0


def test_resource_access_may_name_exactly_the_cap_of_clients(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier = _verifier(realm, jwks, clock, max_token_bytes=1 << 20)
    at_cap: dict[str, Any] = {f"client-{n}": {"roles": []} for n in range(MAX_ROLES)}
    assert verifier.verify(realm.token(resource_access=at_cap)).principal.subject
    over = {**at_cap, "one-more": {"roles": []}}
    with pytest.raises(InvalidToken) as refused:
        verifier.verify(realm.token(resource_access=over))
    assert (refused.value.code, refused.value.fields["claim"]) == ("malformed_claim", "resource_access")


def test_a_cache_of_one_holds_one_result(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock, cache_size=1)
    a, b = realm.token(jti="a"), realm.token(jti="b")
    verifier.verify(a)
    verifier.verify(a)
    assert verifier.cache_len == 1
    verifier.verify(b)
    verifier.verify(b)
    assert verifier.cache_len == 1
    assert set(verifier._cache) == {hashlib.sha256(b.encode()).digest()}


@pytest.mark.parametrize("name", ["jku", "x5u", "jwk", "x5c"])
def test_a_key_selection_header_is_refused_before_any_key(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, name: str
) -> None:
    value: Any = "https://attacker.example/keys" if name in ("jku", "x5u") else {"kty": "oct"}
    if name == "x5c":
        value = ["MIIB"]
    with pytest.raises(InvalidToken) as refused:
        _verifier(realm, jwks, clock).verify(realm.token(header={name: value}))
    assert refused.value.code == "forbidden_header"


def test_a_token_with_a_lone_surrogate_is_refused_not_crashed(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    with pytest.raises(InvalidToken):
        _verifier(realm, jwks, clock).verify("a.b\ud800.c")


@pytest.mark.anyio
async def test_an_introspection_failure_is_logged_by_its_type_only(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    verifier = _verifier(realm, jwks, clock, introspector=Failing(RuntimeError("secret-detail")))
    with caplog.at_level(logging.WARNING, logger="mudrika.trust.keycloak.tokens"):
        with pytest.raises(IdpUnavailable):
            verifier.verify("opaque-token")
        with pytest.raises(IdpUnavailable):
            await verifier.averify("opaque-token-2")
    failures = [r.getMessage() for r in caplog.records if r.getMessage().startswith("introspection failed")]
    assert failures == ["introspection failed (RuntimeError)"] * 2
    assert "secret-detail" not in caplog.text


@pytest.mark.parametrize(
    "header",
    [{"jku": "https://attacker.example/keys"}, {"alg": "HS256"}, {"crit": ["x-ext"], "x-ext": 1}],
    ids=["jku", "alg-not-allowed", "crit"],
)
def test_a_refused_header_never_costs_a_key_set_fetch(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, header: dict[str, str]
) -> None:
    """The header is judged before the kid is looked up: a token naming an unknown kid cannot make
    the verifier fetch the key set when its header would be refused anyway."""
    verifier = _verifier(realm, jwks, clock)
    verifier.verify(realm.token())  # the key set is loaded once
    fetched = realm.fetches
    with pytest.raises(InvalidToken) as refused:
        verifier.verify(realm.token(kid="k1", header={**header, "kid": "no-such-kid"}))
    expected = {"jku": "forbidden_header", "alg": "alg_not_allowed", "crit": "unknown_crit"}
    assert refused.value.code == next(code for name, code in expected.items() if name in header)
    assert realm.fetches == fetched


def test_a_result_stored_again_is_the_most_recent(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    """LRU order on the store path: a token whose cached result expired and was verified again is
    the newest entry, so the next eviction takes the one not seen since."""
    verifier = _verifier(realm, jwks, clock, cache_size=2, cache_ttl=10)
    a, b, c = (realm.token(jti=name) for name in "abc")
    verifier.verify(a)
    verifier.verify(a)
    clock.advance(1)
    verifier.verify(b)
    verifier.verify(b)
    clock.advance(20)  # both results out of the cache's lifetime, the tokens still valid
    verifier.verify(a)  # verified again and stored again (its old entry shows it in use): the newest
    verifier.verify(c)
    verifier.verify(c)  # evicts the oldest: b
    held = {hashlib.sha256(token.encode()).digest() for token in (a, c)}
    assert set(verifier._cache) == held


def _refusal_in_the_documented_order(header: dict[str, Any]) -> str | None:
    """The verifier's header rules, written out independently: the allow-list, then key-selection
    headers, then the kid, then anything jose does not understand (crit)."""
    alg = header.get("alg")
    if not isinstance(alg, str) or alg != "RS256":
        return "alg_not_allowed"
    if {"jku", "x5u", "x5c", "jwk"} & set(header):
        return "forbidden_header"
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        return "missing_kid"
    if "crit" in header:
        return "unknown_crit"
    return None


_ALGS: list[Any] = ["RS256", "HS256", "none", 7, None]
_KIDS: list[Any] = ["k1", "", 7, None]
_EXTRAS: list[dict[str, Any]] = [
    {},
    {"jku": "https://attacker.example/keys"},
    {"crit": ["x-ext"], "x-ext": 1},
]


@pytest.mark.parametrize("alg", _ALGS)
@pytest.mark.parametrize("kid", _KIDS)
@pytest.mark.parametrize("extra", _EXTRAS, ids=["plain", "jku", "crit"])
def test_the_header_read_once_refuses_what_the_rules_refuse(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, alg: Any, kid: Any, extra: dict[str, Any]
) -> None:
    """Every combination of allow-list, kid and key-selection/crit headers: the refusal code (or the
    acceptance) is the one the documented order of checks gives, whichever check jose meets first."""
    header: dict[str, Any] = {"alg": alg, "kid": kid, **extra}
    token = realm.token(header=header)  # None removes the member; signed with k1 (RS256) either way
    present = {name: value for name, value in header.items() if value is not None}
    expected = _refusal_in_the_documented_order(present)
    verifier = _verifier(realm, jwks, clock, cache_size=0)
    if expected is None:
        assert verifier.verify(token).kid == "k1"
        return
    with pytest.raises(InvalidToken) as refused:
        verifier.verify(token)
    assert refused.value.code == expected
