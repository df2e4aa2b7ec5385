"""AccessTokenVerifier: claims, principal, verified-token cache, introspection fallback, config."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from mudrika.errors import IdpUnavailable, InvalidInput
from mudrika.trust.jsonrpc import AuthenticationRequired, InvalidToken, TokenExpired
from mudrika.trust.keycloak.jwks import JwksCache
from mudrika.trust.keycloak.tokens import AccessTokenVerifier, token_id
from tests._support.tokenfactory import Clock, LocalRealm


def _verifier(realm: LocalRealm, jwks: JwksCache, clock: Clock, **options: Any) -> AccessTokenVerifier:
    settings: dict[str, Any] = {"audience": realm.audience, "azp_allowlist": None}
    settings.update(options)
    return AccessTokenVerifier(issuer=realm.issuer, jwks=jwks, clock=clock, **settings)


class FakeIntrospector:
    def __init__(self, answer: dict[str, Any] | Exception) -> None:
        self.answer = answer
        self.calls = 0

    def introspect(self, token: str) -> dict[str, Any]:
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return dict(self.answer)

    async def aintrospect(self, token: str) -> dict[str, Any]:
        return self.introspect(token)


def test_valid_token_gives_principal(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    verified = verifier.verify(realm.token())
    principal = verified.principal
    assert principal.subject == "5f1c1c7e-8e2a-4a0e-9d53-7c5b0f1f2a10"
    assert principal.roles == frozenset(
        {"agent", "offline_access", "agent-api/invoke", "account/view-profile"}
    )
    assert principal.permissions == frozenset({"profile", "email"})
    assert principal.identity_provider == "keycloak"
    assert verified.source == "jwt"
    assert verified.kid == "k1"
    assert verified.claims["azp"] == "agent-gateway"
    assert principal.token_claims is not None
    assert principal.token_claims["azp"] == "agent-gateway"


def test_groups_claim_becomes_groups(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    principal = verifier.verify(realm.token(groups=["/agents/admins"])).principal
    assert principal.groups == frozenset({"/agents/admins"})


@pytest.mark.anyio
async def test_async_verify(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    verified = await verifier.averify(realm.token())
    assert verified.principal.subject.startswith("5f1c")


def test_cache_hit_skips_verification(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    token = realm.token()
    first = verifier.verify(token)
    assert verifier.cache_len == 0  # a JWT's result is stored when its token comes again
    stored = verifier.verify(token)
    assert stored is not first
    assert verifier.cache_len == 1
    assert not verifier._seen  # its first sighting is forgotten once the result is stored
    assert verifier.verify(token) is stored


def test_distinct_tokens_store_nothing(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    """A token met once cannot be served from the cache again, so its result is never stored."""
    verifier = _verifier(realm, jwks, clock)
    for n in range(20):
        verifier.verify(realm.token(jti=f"once-{n}"))
    assert verifier.cache_len == 0


def test_first_sightings_are_remembered_within_the_cache_size(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier = _verifier(realm, jwks, clock, cache_size=3)
    first, *others = (realm.token(jti=f"t{n}") for n in range(5))
    verifier.verify(others[0])
    verifier.verify(others[1])
    verifier.verify(others[0])  # seen two tokens ago: the record holds more than the last one
    assert verifier.cache_len == 1
    verifier.clear_cache()
    assert (verifier.cache_len, len(verifier._seen)) == (0, 0)
    verifier.verify(first)
    for token in others:  # three more first sightings: the record is full and starts again
        verifier.verify(token)
        assert len(verifier._seen) <= 3
    verifier.verify(first)
    assert verifier.cache_len == 0  # its first sighting was forgotten: this one counts as first
    verifier.verify(first)
    assert verifier.cache_len == 1


def test_cache_entry_expires_with_token(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock, leeway=0)
    token = realm.token(exp=int(clock()) + 20)
    verifier.verify(token)
    verifier.verify(token)
    assert verifier.cache_len == 1
    clock.advance(21)
    with pytest.raises(TokenExpired):
        verifier.verify(token)


def test_cache_ttl_bounds_entry(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock, cache_ttl=5)
    token = realm.token()
    verifier.verify(token)
    first = verifier.verify(token)
    assert verifier.verify(token) is first
    clock.advance(6)
    second = verifier.verify(token)
    assert second is not first
    assert second.principal == first.principal
    assert verifier.verify(token) is second  # its expired entry showed it in use: stored at once


def test_cache_emptied_on_key_set_change(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    old = realm.token()
    verifier.verify(old)
    verifier.verify(old)
    assert verifier.cache_len == 1
    realm.rotate("k2")
    realm.retire("k1")
    new = realm.token()
    verifier.verify(new)  # unknown kid k2 -> refresh -> new generation
    verifier.verify(new)
    assert jwks.generation == 2
    assert verifier.cache_len == 1  # the k1 entry is gone
    with pytest.raises(InvalidToken) as info:
        verifier.verify(old)  # k1 was retired: no cache hit resurrects it
    assert info.value.code == "unknown_kid"


def test_cache_is_bounded_lru(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock, cache_size=3)
    tokens = [realm.token(jti=f"t{n}") for n in range(5)]
    for token in tokens:
        verifier.verify(token)
        verifier.verify(token)
    assert verifier.cache_len == 3


def test_cache_keys_are_hashes(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    token = realm.token()
    verifier.verify(token)
    verifier.verify(token)
    assert verifier.cache_len == 1
    assert all(isinstance(key, bytes) and len(key) == 32 for key in verifier._cache)
    assert all(isinstance(key, bytes) and len(key) == 32 for key in verifier._seen)
    assert token.encode() not in verifier._cache


@pytest.mark.parametrize(
    ("allowlist", "reason"),
    [
        ([""], "empty"),
        (["agent-gateway", ""], "empty"),
        ([" "], "leading or trailing whitespace"),
        (["agent-gateway "], "leading or trailing whitespace"),
        (["agent\x00gateway"], "control character"),
        ([7], "not a string"),
    ],
)
def test_azp_allowlist_entries_must_be_client_ids(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, allowlist: list[Any], reason: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        _verifier(realm, jwks, clock, audience=None, azp_allowlist=allowlist)
    assert (info.value.code, info.value.fields["reason"]) == ("bad_config", reason)
    assert "azp_allowlist entry" in info.value.message


def test_azp_allowlist_mode(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock, audience=None, azp_allowlist={"agent-gateway"})
    assert verifier.verify(realm.token(aud=None)).principal.subject
    with pytest.raises(InvalidToken) as info:
        verifier.verify(realm.token(azp="intruder"))
    assert info.value.code == "wrong_azp"


def test_audience_as_string_claim(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    assert verifier.verify(realm.token(aud="agent-api")).source == "jwt"


@pytest.mark.parametrize(
    ("claims", "code"),
    [
        ({"typ": "ID"}, "wrong_typ"),
        ({"typ": None}, "wrong_typ"),
        ({"iat": None}, "missing_claim"),
        ({"sub": None}, "malformed_claim"),
        ({"realm_access": {"roles": "admin"}}, "malformed_claim"),
        ({"resource_access": {"x": ["admin"]}}, "malformed_claim"),
        ({"scope": 7}, "malformed_claim"),
        ({"exp": "tomorrow"}, "malformed_claim"),
        ({"iat": 1_700_000_000 + 3600}, "iat_in_future"),
    ],
)
def test_claim_failures(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, claims: dict[str, Any], code: str
) -> None:
    verifier = _verifier(realm, jwks, clock)
    with pytest.raises(InvalidToken) as info:
        verifier.verify(realm.token(**claims))
    assert info.value.code == code


def test_no_token_and_garbage(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    with pytest.raises(AuthenticationRequired):
        verifier.verify("")
    with pytest.raises(InvalidToken):
        verifier.verify("not a token")
    with pytest.raises(InvalidToken):
        verifier.verify("opaque-token-without-dots")
    with pytest.raises(InvalidToken):
        verifier.verify("a.b.c")


def test_failures_are_not_cached(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock)
    with pytest.raises(InvalidToken):
        verifier.verify(realm.token(typ="ID"))
    assert verifier.cache_len == 0


def test_token_never_logged(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    verifier = _verifier(realm, jwks, clock)
    token = realm.token(aud="elsewhere")
    with caplog.at_level(logging.DEBUG, logger="mudrika"), pytest.raises(InvalidToken):
        verifier.verify(token)
    assert token_id(token) in caplog.text
    assert token not in caplog.text
    assert token.split(".")[2] not in caplog.text


# --- introspection ---------------------------------------------------------------------------------


def _introspection(realm: LocalRealm, **overrides: Any) -> dict[str, Any]:
    answer = {**realm.claims(), "active": True, "client_id": "agent-gateway", "token_type": "Bearer"}
    for name, value in overrides.items():
        if value is None:
            answer.pop(name, None)
        else:
            answer[name] = value
    return answer


def test_opaque_token_is_introspected_and_cached(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    introspector = FakeIntrospector(_introspection(realm))
    verifier = _verifier(realm, jwks, clock, introspector=introspector)
    verified = verifier.verify("opaque-abc123")
    assert verified.source == "introspection"
    assert "agent-api/invoke" in verified.principal.roles
    verifier.verify("opaque-abc123")
    assert introspector.calls == 1
    clock.advance(61)  # introspection results live 60 s by default
    verifier.verify("opaque-abc123")
    assert introspector.calls == 2


@pytest.mark.anyio
async def test_opaque_token_async(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    introspector = FakeIntrospector(_introspection(realm))
    verifier = _verifier(realm, jwks, clock, introspector=introspector)
    assert (await verifier.averify("opaque-xyz")).source == "introspection"


def test_inactive_token_is_invalid(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock, introspector=FakeIntrospector({"active": False}))
    with pytest.raises(InvalidToken) as info:
        verifier.verify("opaque-dead")
    assert info.value.code == "inactive"


def test_introspection_answer_with_a_null_expiry_is_refused(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    answer = {**_introspection(realm), "exp": None}
    verifier = _verifier(realm, jwks, clock, introspector=FakeIntrospector(answer))
    with pytest.raises(InvalidToken) as info:
        verifier.verify("opaque-token")
    assert info.value.code == "malformed_claim"


@pytest.mark.parametrize(
    ("overrides", "error", "code"),
    [
        ({"typ": "Refresh"}, InvalidToken, "wrong_typ"),
        ({"token_type": "refresh_token"}, InvalidToken, "wrong_typ"),
        ({"iss": "https://evil.test/realms/x"}, InvalidToken, "wrong_iss"),
        ({"aud": "elsewhere"}, InvalidToken, "wrong_aud"),
        ({"exp": None}, InvalidToken, "missing_claim"),
        ({"exp": 1_700_000_000 - 120}, TokenExpired, "expired"),
        ({"nbf": 1_700_000_000 + 120}, InvalidToken, "not_yet_valid"),  # not yet valid: -32010, not -32011
        ({"active": "true"}, InvalidToken, "inactive"),
    ],
)
def test_introspection_checks(
    realm: LocalRealm,
    jwks: JwksCache,
    clock: Clock,
    overrides: dict[str, Any],
    error: type[Exception],
    code: str,
) -> None:
    verifier = _verifier(
        realm, jwks, clock, introspector=FakeIntrospector(_introspection(realm, **overrides))
    )
    with pytest.raises(error) as info:
        verifier.verify("opaque-token")
    assert getattr(info.value, "code", None) == code


def test_lightweight_jwt_is_introspected(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    introspector = FakeIntrospector(_introspection(realm))
    verifier = _verifier(realm, jwks, clock, introspector=introspector)
    light = realm.token(sub=None, aud=None, realm_access=None, resource_access=None)
    verified = verifier.verify(light)
    assert verified.source == "introspection"
    assert introspector.calls == 1
    assert "agent" in verified.principal.roles


def test_lightweight_jwt_without_introspector_is_refused(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier = _verifier(realm, jwks, clock)
    with pytest.raises(InvalidToken):
        verifier.verify(realm.token(aud=None))


def test_jwt_without_roles_and_no_introspector_has_no_roles(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier = _verifier(realm, jwks, clock)
    principal = verifier.verify(realm.token(realm_access=None, resource_access=None)).principal
    assert principal.roles == frozenset()


def test_introspection_failure_fails_closed(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    down = FakeIntrospector(IdpUnavailable("down", code="idp_unreachable"))
    verifier = _verifier(realm, jwks, clock, introspector=down)
    with pytest.raises(IdpUnavailable):
        verifier.verify("opaque-token")
    broken = FakeIntrospector(RuntimeError("boom"))
    verifier = _verifier(realm, jwks, clock, introspector=broken)
    with pytest.raises(IdpUnavailable) as info:
        verifier.verify("opaque-token")
    assert info.value.code == "introspection_failed"


def test_idp_down_no_keys_fails_closed(realm: LocalRealm, clock: Clock) -> None:
    realm.fail = True
    with httpx.Client(transport=realm.transport()) as client:
        jwks = JwksCache(jwks_uri=realm.jwks_uri, algorithms={"RS256"}, clock=clock, http_client=client)
        verifier = _verifier(realm, jwks, clock)
        with pytest.raises(IdpUnavailable):
            verifier.verify(realm.token())


# --- construction ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"audience": None, "azp_allowlist": None},
        {"audience": "agent-api", "azp_allowlist": {"agent-gateway"}},
        {"audience": [], "azp_allowlist": None},
        {"audience": None, "azp_allowlist": "agent-gateway"},
        {"leeway": 61},
        {"leeway": -1},
        {"algorithms": {"none"}},
        {"algorithms": set()},
        {"issuer": ""},
    ],
)
def test_bad_configuration_refused(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, options: dict[str, Any]
) -> None:
    settings: dict[str, Any] = {"issuer": realm.issuer, "audience": "agent-api", "azp_allowlist": None}
    settings.update(options)
    with pytest.raises(InvalidInput):
        AccessTokenVerifier(jwks=jwks, clock=clock, **settings)


def test_leeway_sixty_is_the_maximum(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    verifier = _verifier(realm, jwks, clock, leeway=60)
    assert verifier.leeway == 60
    assert "agent-api" in repr(verifier)


@pytest.mark.parametrize(
    ("aud", "accepted"),
    [
        ("agent-api", True),
        (["account", "agent-api"], True),
        (["account", 7, "agent-api"], True),  # a non-string entry is skipped, not matched
        (["account"], False),
        ([], False),
        ([["agent-api"]], False),
        ({"agent-api": True}, False),
        (7, False),
        ("agent-api-2", False),
    ],
)
def test_audience_claim_shapes(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, aud: object, accepted: bool
) -> None:
    verifier = _verifier(realm, jwks, clock, cache_size=0)
    token = realm.token(aud=aud)
    if accepted:
        assert verifier.verify(token).principal.subject
    else:
        with pytest.raises(InvalidToken) as info:
            verifier.verify(token)
        assert info.value.code == "wrong_aud"


def test_token_id_of_a_result_is_the_log_label(realm: LocalRealm, jwks: JwksCache, clock: Clock) -> None:
    token = realm.token()
    assert _verifier(realm, jwks, clock).verify(token).token_id == token_id(token)


@pytest.mark.parametrize("iss", [["https://idp.test/realms/mudrika"], {"iss": 1}, 7, None])
def test_issuer_claim_that_is_not_the_issuer_string_is_wrong_iss(
    realm: LocalRealm, jwks: JwksCache, clock: Clock, iss: object
) -> None:
    verifier = _verifier(realm, jwks, clock, cache_size=0)
    with pytest.raises(InvalidToken) as info:
        verifier.verify(realm.token(iss=iss))
    assert info.value.code == "wrong_iss"


def test_holds_says_whether_the_cache_keeps_that_very_result(
    realm: LocalRealm, jwks: JwksCache, clock: Clock
) -> None:
    verifier = _verifier(realm, jwks, clock)
    token, other = realm.token(jti="h1"), realm.token(jti="h2")
    first = verifier.verify(token)
    assert not verifier.holds(token, first)  # met once: not kept
    kept = verifier.verify(token)
    assert verifier.holds(token, kept)
    assert not verifier.holds(token, first)  # another result for the same token
    assert not verifier.holds(other, kept)  # the right result under another token
    assert not verifier.holds("a.b\ud800.c", kept)  # a token no UTF-8 can carry: held by nothing
