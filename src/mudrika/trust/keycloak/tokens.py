"""Keycloak access tokens -> a verified :class:`~mudrika.trust.policy.Principal`, in microseconds.

Why not python-keycloak's ``decode_token``: it fetches the JWKS on every call, allows 60 s of clock
skew, and checks neither ``aud``, ``iss`` nor ``typ`` — so a Keycloak *ID token* or *refresh token*,
or an access token minted for another service, passes it.  :class:`AccessTokenVerifier` closes those
gaps (``tests/interop/test_python_keycloak_decode_gaps.py`` shows each one):

1. The token is size-capped and must be an RFC 6750 ``b64token``.
2. A JWT's protected header is read *unverified* only to pick the key: ``alg`` must be in the
   verifier's allow-list (default ``{"RS256"}``), ``kid`` must be present, and ``jku`` / ``x5u`` /
   ``x5c`` / ``jwk`` headers are refused outright (never followed).
3. The key comes from the cached JWKS (:mod:`mudrika.trust.keycloak.jwks`) and the signature is verified by
   :mod:`mudrika.crypto.jose` (the only JOSE verification path), which binds the algorithm to the key.
4. Claims (RFC 7519 §7.2 step 10): ``exp`` and ``iat`` required, ``iss`` exact, ``nbf`` honoured,
   leeway default 30 s (more than 60 s is refused at construction), ``typ == "Bearer"``
   (Keycloak's ID tokens say ``ID``, refresh tokens ``Refresh``), then the audience: either ``aud``
   contains one of ``audience``, or — for realms without an audience mapper — ``azp`` is in
   ``azp_allowlist``.  Exactly one of the two is configured.
5. Opaque tokens, and Keycloak *lightweight* access tokens (signed, but without ``sub``, ``typ``, the
   audience claim or any role claim), are resolved by RFC 7662 introspection through python-keycloak
   (an :class:`Introspector`, e.g. :class:`~mudrika.trust.keycloak.KeycloakAdapter`) when one is
   configured; ``active: false`` is an invalid token.  Without an introspector they are refused.

Results are cached in a bounded LRU keyed by SHA-256 of the token (the token itself is never stored or
logged; logs show :func:`token_id`, a 12-hex-digit prefix of that hash).  An entry lives until the
token's ``exp`` or ``cache_ttl`` (capped at the JWKS cache's ``ttl``; introspection results:
``introspection_cache_ttl``), whichever is sooner, and the whole cache is dropped when the JWKS
generation changes (rotation or retirement).  So a retired key stops vouching for any token within
two JWKS TTLs of its retirement (one to notice, one for the last cached entry), 10 minutes by default.

When a result is stored: a JWT's on the *second* verification of the same token (among the last
``cache_size`` tokens verified), an introspection result at once.  Why: a stored entry costs on every
token (the entry, and every object of the result kept alive for the garbage collector to walk, about
a quarter of a verification), and it pays back only if the token comes again.  A client that reuses
its token for minutes pays one verification more, once; a server that meets every token once (a
fresh token per call, or a flood of distinct ones) stores nothing.  An introspection costs a round
trip to the IdP, so its result is always worth keeping.  What the cache may serve is unchanged: only
results every check passed, never past the token's ``exp``, the entry's lifetime or its key set.

Errors are the typed errors of :mod:`mudrika.trust.jsonrpc`, one per JSON-RPC code: no token
``AuthenticationRequired`` (-32009); malformed, wrong iss/aud/azp/typ, unknown kid, alg not allowed,
missing claim, inactive, ``nbf`` not reached (not yet valid is not expired: "expired" tells the client
to refresh, which cannot help) ``InvalidToken`` (-32010); ``exp`` passed ``TokenExpired`` (-32011);
bad signature ``InvalidSignature`` (-32012).  Time rule (docs/replay.md): a token is valid on
``[nbf - leeway, exp + leeway)`` — at the exact instant ``exp + leeway`` it is expired.  When the IdP is needed and
unreachable (no cached key covers the token, or introspection fails) :class:`~mudrika.errors.
IdpUnavailable` is raised: callers fail closed (the middleware answers HTTP 503).

Roles (documented contract with the policy): realm roles from ``realm_access.roles`` as they are
(``agent``); client roles from ``resource_access.<clientId>.roles`` as ``<clientId>/<role>``
(``agent-api/invoke``), so a client role can never be mistaken for a realm role of the same name.
A realm role, client id or client role containing ``/`` is refused (-32010), as realm import refuses
it: ``realm_access.roles: ["agent-api/invoke"]`` would otherwise read as that client's role.
``groups`` (if the realm maps them) become the principal's groups, ``scope`` its permissions.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal, NamedTuple, Protocol

from mudrika.crypto.jose import (
    FORBIDDEN_HEADERS,
    OpenedJWS,
    TrustedKey,
    check_jwt_claims,
    open_compact,
    parse_unverified_header,
    verify_opened_jwt,
)
from mudrika.errors import (
    ExpiredError,
    IdpUnavailable,
    InvalidInput,
    MudrikaError,
    SignatureError,
)
from mudrika.trust.jsonrpc import (
    A2AAuthError,
    AuthenticationRequired,
    InvalidSignature,
    InvalidToken,
    TokenExpired,
)
from mudrika.trust.keycloak.jwks import KeySource
from mudrika.trust.models import name_refusal
from mudrika.trust.policy import Principal

__all__ = [
    "DEFAULT_MAX_TOKEN_BYTES",
    "MAX_LEEWAY",
    "AccessTokenVerifier",
    "Introspector",
    "VerifiedToken",
    "token_id",
]

_log = logging.getLogger("mudrika.trust.keycloak.tokens")

DEFAULT_MAX_TOKEN_BYTES: Final = 16 * 1024
MAX_LEEWAY: Final = 60.0
_DEFAULT_LEEWAY: Final = 30.0
_MAX_ROLES: Final = 1024
_MAX_ROLE_CHARS: Final = 256
# RFC 6750 §2.1 b64token.
_B64TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_SUMMARY_CLAIMS: Final = ("iss", "sub", "azp", "client_id", "exp", "iat")
_REQUIRED_CLAIMS: Final = ("exp", "iat")
# One shared empty set: every cached principal keeps its sets alive, and a fresh empty frozenset per
# token would be one more object for the garbage collector to walk on every cache miss.
_NONE: Final[frozenset[str]] = frozenset()


def token_id(token: str | bytes) -> str:
    """A short, non-reversible label for logs: the first 12 hex digits of SHA-256(token)."""
    raw = token.encode("utf-8", "surrogatepass") if isinstance(token, str) else token
    return hashlib.sha256(raw).hexdigest()[:12]


def _log_rejection(digest: bytes, exc: A2AAuthError) -> None:
    # The hash label, never the token; the code says which check refused it.
    _log.info("credential sha256:%s rejected: %s", digest.hex()[:12], exc.code)


class Introspector(Protocol):
    """RFC 7662 token introspection (sync and async); :class:`~mudrika.trust.keycloak.KeycloakAdapter`
    fits.  Raise :class:`~mudrika.errors.IdpUnavailable` when the IdP cannot be asked."""

    def introspect(self, token: str) -> dict[str, Any]: ...

    async def aintrospect(self, token: str) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    """A verified access token: the principal for the policy, the claims, and where they came from.

    ``token_id`` is the log label (:func:`token_id`), never the token.
    """

    principal: Principal
    claims: Mapping[str, Any]
    token_id: str
    expires_at: float
    source: Literal["jwt", "introspection"]
    kid: str | None = None


@dataclass(frozen=True, slots=True)
class _Entry:
    result: VerifiedToken
    valid_until: float
    generation: int


class _Plan(NamedTuple):
    """What the cheap checks decided (a tuple: one is built per cache miss, and a frozen dataclass
    costs more to build).  ``generation`` is the key set an introspection result
    belongs to; a JWT's result belongs to the key set its key came from.  ``opened`` is the JWT with
    its header understood (opened once: the same object is verified), ``kid`` the key it names."""

    digest: bytes
    generation: int
    opened: OpenedJWS | None  # None: opaque token, introspect
    kid: str  # "" for an opaque token


class _Checked(NamedTuple):
    """Claims that passed every check, with what caching their result needs (``generation``: the key
    set they belong to; ``now``: when they were checked; ``ttl``: the cache lifetime of their kind)."""

    claims: dict[str, Any]
    generation: int
    now: float
    source: Literal["jwt", "introspection"]
    kid: str | None
    ttl: float


def _auth_error(exc: MudrikaError) -> A2AAuthError:
    """Map a verification failure from jose/keys to the one typed error its JSON-RPC code needs
    (those layers raise only the base error tree, never an ``A2AAuthError``)."""
    if exc.code == "not_yet_valid":
        # Checked before ExpiredError: not yet valid is -32010 invalid_token, never "expired".
        return InvalidToken("token not yet valid", code=exc.code)
    if isinstance(exc, ExpiredError):
        return TokenExpired("token expired", code=exc.code)
    if isinstance(exc, SignatureError):
        return InvalidSignature("signature verification failed", code=exc.code)
    return InvalidToken("invalid token", code=exc.code)


def _as_list(value: Any, claim: str, *, role_names: bool = False) -> list[str]:
    # Plain loops and exact type checks: this runs on every cache miss (no generator for all()).
    if value is None:
        return []
    if type(value) is not list or len(value) > _MAX_ROLES:
        raise InvalidToken("malformed claim", code="malformed_claim", claim=claim)
    for item in value:
        if type(item) is not str or not 0 < len(item) <= _MAX_ROLE_CHARS:
            raise InvalidToken("malformed claim", code="malformed_claim", claim=claim)
        if role_names and "/" in item:
            # "client/role" is how client roles are spelled; a role literally named so is refused.
            raise InvalidToken("role name contains '/'", code="role_name_slash", claim=claim)
    return value


def _roles(claims: Mapping[str, Any]) -> frozenset[str]:
    roles: list[str] = []
    realm_access = claims.get("realm_access")
    if realm_access is not None:
        if type(realm_access) is not dict:
            raise InvalidToken("malformed claim", code="malformed_claim", claim="realm_access")
        roles += _as_list(realm_access.get("roles"), "realm_access", role_names=True)
    resource_access = claims.get("resource_access")
    if resource_access is not None:
        if type(resource_access) is not dict or len(resource_access) > _MAX_ROLES:
            raise InvalidToken("malformed claim", code="malformed_claim", claim="resource_access")
        for client, access in resource_access.items():
            if type(access) is not dict or not client or len(client) > _MAX_ROLE_CHARS:
                raise InvalidToken("malformed claim", code="malformed_claim", claim="resource_access")
            if "/" in client:
                raise InvalidToken("client id contains '/'", code="role_name_slash", claim="resource_access")
            prefix = client + "/"
            names = _as_list(access.get("roles"), "resource_access", role_names=True)
            roles += [prefix + role for role in names]
    if len(roles) > _MAX_ROLES:
        raise InvalidToken("too many roles", code="malformed_claim", claim="roles")
    return frozenset(roles)


def _principal(claims: Mapping[str, Any]) -> Principal:
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub or len(sub) > _MAX_ROLE_CHARS:
        raise InvalidToken("invalid subject", code="malformed_claim", claim="sub")
    scope = claims.get("scope")
    if scope is not None and (not isinstance(scope, str) or len(scope) > 64 * _MAX_ROLE_CHARS):
        raise InvalidToken("malformed claim", code="malformed_claim", claim="scope")
    groups = _as_list(claims.get("groups"), "groups")
    summary = {name: claims[name] for name in _SUMMARY_CLAIMS if name in claims}
    # Positional (subject, roles, groups, permissions, did, identity_provider, tenants, token_claims):
    # built on every cache miss, and keyword arguments cost a dataclass's __init__ half as much again.
    return Principal(
        sub,
        _roles(claims),
        frozenset(groups) if groups else _NONE,
        frozenset(scope.split()) if scope else _NONE,
        None,
        "keycloak",
        _NONE,
        MappingProxyType(summary),
    )


class AccessTokenVerifier:
    """Verify Keycloak access tokens against an issuer, an audience (or azp allow-list) and a JWKS.

    ``issuer``, ``audience``, ``azp_allowlist`` and ``jwks`` have no defaults; exactly one of
    ``audience`` / ``azp_allowlist`` must be non-None.  ``clock`` returns Unix seconds (injectable).
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | Collection[str] | None,
        azp_allowlist: Collection[str] | None,
        jwks: KeySource,
        algorithms: Collection[str] = frozenset({"RS256"}),
        leeway: float = _DEFAULT_LEEWAY,
        clock: Callable[[], float] = time.time,
        introspector: Introspector | None = None,
        cache_size: int = 10_000,
        cache_ttl: float = 300.0,
        introspection_cache_ttl: float = 60.0,
        max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    ) -> None:
        if not isinstance(issuer, str) or not issuer:
            raise InvalidInput("issuer is required", code="bad_config")
        if (audience is None) == (azp_allowlist is None):
            raise InvalidInput("configure exactly one of audience and azp_allowlist", code="bad_config")
        self.audience: frozenset[str] | None = None
        self.azp_allowlist: frozenset[str] | None = None
        if audience is not None:
            self.audience = frozenset({audience} if isinstance(audience, str) else audience)
            if not self.audience or not all(isinstance(a, str) and a for a in self.audience):
                raise InvalidInput("audience must name at least one audience", code="bad_config")
        if azp_allowlist is not None:
            if isinstance(azp_allowlist, str):
                raise InvalidInput("azp_allowlist must be a collection of client ids", code="bad_config")
            self.azp_allowlist = frozenset(azp_allowlist)
            if not self.azp_allowlist:
                raise InvalidInput("azp_allowlist must name at least one client", code="bad_config")
            for entry in sorted(self.azp_allowlist, key=repr):
                # An empty entry would admit a token whose azp is "" (or absent client_id read as "").
                reason = name_refusal(entry)
                if reason is not None:
                    raise InvalidInput(
                        f"azp_allowlist entry {str(entry)[:64]!r} is not a client id ({reason})",
                        code="bad_config",
                        option="azp_allowlist",
                        reason=reason,
                    )
        if not 0 <= leeway <= MAX_LEEWAY:
            raise InvalidInput(f"leeway must be between 0 and {MAX_LEEWAY:.0f} s", code="bad_leeway")
        self.algorithms = frozenset(algorithms)
        if not self.algorithms or "none" in {a.lower() for a in self.algorithms}:
            raise InvalidInput("a non-empty allow-list of real algorithms is required", code="bad_config")
        if cache_size < 0 or cache_ttl < 0 or introspection_cache_ttl < 0 or max_token_bytes <= 0:
            raise InvalidInput("cache limits must not be negative", code="bad_config")
        self.issuer = issuer
        self.leeway = float(leeway)
        self._jwks = jwks
        self._clock = clock
        self._introspector = introspector
        self._cache_size = cache_size
        # An entry must not outlive the key set it was verified against, or a retired key would keep
        # vouching for cached tokens after the JWKS refresh that drops it.
        self._cache_ttl = min(float(cache_ttl), float(getattr(jwks, "ttl", cache_ttl)))
        self._introspection_ttl = float(introspection_cache_ttl)
        self._max_bytes = max_token_bytes
        self._cache: OrderedDict[bytes, _Entry] = OrderedDict()
        self._cache_generation = jwks.generation
        # Digests of tokens verified once whose result was not stored (see _admit).
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        target = (
            f"audience={sorted(self.audience)!r}"
            if self.audience
            else f"azp={sorted(self.azp_allowlist or ())!r}"
        )
        return f"AccessTokenVerifier(issuer={self.issuer!r}, {target})"

    # -- public API -------------------------------------------------------------------------------

    def verify(self, token: str) -> VerifiedToken:
        """Verify ``token`` (the Bearer credential, without the scheme); return it or raise.

        The value returned is built in exactly one place (:meth:`_result`, typed ``VerifiedToken``)
        from claims every check passed, or comes from the cache of such values: no path through
        here returns anything else, whatever happens to the logging of a rejection.
        """
        found = self._cached_or_plan(token)
        if isinstance(found, VerifiedToken):
            return found
        opened = found.opened
        try:
            if opened is not None:
                checked = self._checked_jwt(opened, self._jwks.key_for(found.kid))
                if checked is None:  # signed by the IdP but lightweight: introspect it
                    checked = self._checked_introspection(self._introspect(token), found.generation)
            else:
                checked = self._checked_introspection(self._introspect(token), found.generation)
        except A2AAuthError as exc:
            _log_rejection(found.digest, exc)
            raise
        return self._result(found.digest, checked)

    async def averify(self, token: str) -> VerifiedToken:
        """Async :meth:`verify` (JWKS refresh and introspection without blocking the event loop); the
        same guarantee: the value returned is :meth:`_result`'s or the cache's, never anything else."""
        found = self._cached_or_plan(token)
        if isinstance(found, VerifiedToken):
            return found
        opened = found.opened
        try:
            if opened is not None:
                checked = self._checked_jwt(opened, await self._jwks.akey_for(found.kid))
                if checked is None:  # signed by the IdP but lightweight: introspect it
                    checked = self._checked_introspection(await self._aintrospect(token), found.generation)
            else:
                checked = self._checked_introspection(await self._aintrospect(token), found.generation)
        except A2AAuthError as exc:
            _log_rejection(found.digest, exc)
            raise
        return self._result(found.digest, checked)

    @property
    def cache_len(self) -> int:
        return len(self._cache)

    def holds(self, token: str, result: VerifiedToken) -> bool:
        """Whether the cache keeps ``result`` for ``token``: the same object is then handed back for
        that token while its entry lives, so whatever a caller derives from it is worth keeping too
        (and is not, for a result the cache does not keep)."""
        entry = self._cache.get(hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest())
        return entry is not None and entry.result is result

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self._seen.clear()

    # -- cache --------------------------------------------------------------------------------------

    def _hit(self, digest: bytes) -> VerifiedToken | None:
        entry = self._cache.get(digest)
        if entry is None:
            return None
        if entry.generation != self._jwks.generation:
            self._purge_old_generation()
            return None
        if self._clock() >= entry.valid_until:
            return None
        try:  # noqa: SIM105 - contextlib.suppress adds a context manager to the hot path
            self._cache.move_to_end(digest)
        except KeyError:
            pass  # evicted by another thread meanwhile; the result is still valid
        return entry.result

    def _admit(self, digest: bytes) -> bool:
        """Whether a JWT's result is worth storing: True on the second verification of the same token
        among the last ``cache_size`` first ones, or when its earlier result is still held (module
        docstring: a store costs on every token).

        The first sighting is remembered by its digest alone (32 bytes, nothing for the garbage
        collector to walk); the record is bounded by clearing it when full, like the other memos.
        """
        seen = self._seen
        if digest in seen:
            seen.discard(digest)
            return True
        if digest in self._cache:
            # Its earlier result is still held, past the cache's lifetime: the token is in use.
            return True
        if len(seen) >= self._cache_size:
            seen.clear()
        seen.add(digest)
        return False

    def _store(self, digest: bytes, result: VerifiedToken, generation: int, valid_until: float) -> None:
        with self._lock:
            current = self._sync_generation()
            if generation != current:
                return
            self._cache[digest] = _Entry(result, valid_until, generation)
            self._cache.move_to_end(digest)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _sync_generation(self) -> int:
        # Caller holds the lock.  Key rotation or retirement: nothing verified under the old key set
        # is trusted any more, so the whole cache goes.
        current = self._jwks.generation
        if current != self._cache_generation:
            self._cache.clear()
            self._cache_generation = current
        return current

    def _purge_old_generation(self) -> None:
        with self._lock:
            self._sync_generation()

    # -- steps --------------------------------------------------------------------------------------

    def _cached_or_plan(self, token: str) -> VerifiedToken | _Plan:
        """The cached result for ``token``, or what the cheap checks decided about verifying it.

        The token is hashed once: the digest is the cache key, the log label and, through the plan,
        the key the result is stored under.
        """
        # A non-string (None from a careless caller) hashes as the empty token, which nothing is ever
        # cached under, so the presence check of the plan refuses it as "no token".
        text = token if isinstance(token, str) else ""
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        hit = self._hit(digest)
        if hit is not None:
            return hit
        try:
            return self._plan(token, digest)
        except A2AAuthError as exc:
            _log_rejection(digest, exc)
            raise

    def _plan(self, token: str, digest: bytes) -> _Plan:
        # Step 1: presence, size, syntax.
        if not isinstance(token, str) or not token:
            raise AuthenticationRequired("no token", code="no_token")
        if len(token) > self._max_bytes:
            raise InvalidToken("token too large", code="too_large")
        generation = self._jwks.generation
        if token.count(".") != 2:
            if self._introspector is None:
                raise InvalidToken("not a JWT and no introspection configured", code="malformed_token")
            if not _B64TOKEN.fullmatch(token):
                raise InvalidToken("malformed token", code="malformed_token")
            return _Plan(digest, generation, None, "")
        # Step 2: the unverified header, only to choose the key, read once: jose opens the token
        # (splits it, decodes and understands the header, refusing jku/x5u/x5c/jwk and any crit; the
        # outcome is remembered per exact header segment, which every token a key signs shares), and
        # the very same opened token is verified in step 3.
        try:
            opened = open_compact(token, max_bytes=self._max_bytes)
        except MudrikaError as exc:
            raise self._header_refusal(token, exc) from None
        header = opened.header
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidToken("algorithm not allowed", code="alg_not_allowed")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidToken("token has no kid", code="missing_kid")
        return _Plan(digest, generation, opened, kid)

    def _header_refusal(self, token: str, exc: MudrikaError) -> InvalidToken:
        """Why a header jose would not open is refused, in this verifier's order of checks (the
        allow-list, then key-selection headers, then the kid) so a refusal names the same cause
        whichever check jose met first.  Refusals only: the header is parsed again here."""
        try:
            header = parse_unverified_header(token, max_bytes=self._max_bytes)
        except MudrikaError as malformed:
            return InvalidToken("malformed token", code=malformed.code)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            return InvalidToken("algorithm not allowed", code="alg_not_allowed")
        if FORBIDDEN_HEADERS.intersection(header):
            return InvalidToken("token carries key-selection headers", code="forbidden_header")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            return InvalidToken("token has no kid", code="missing_kid")
        return InvalidToken("invalid token", code=exc.code)

    def _checked_jwt(self, opened: OpenedJWS, key: TrustedKey) -> _Checked | None:
        """Steps 3-4: the claims of a JWT that passed every check.  None means "signed by the IdP but
        lightweight": introspect it."""
        # The entry belongs to the key set ``key`` came from (read after a possible refresh).
        generation = self._jwks.generation
        now = self._clock()
        try:
            claims = verify_opened_jwt(
                opened,
                key=key,
                issuer=self.issuer,
                audience=None,  # checked below, after the lightweight-token decision
                now=now,
                leeway=self.leeway,
                required=_REQUIRED_CLAIMS,
            )
        except MudrikaError as exc:
            raise _auth_error(exc) from None
        typ = claims.get("typ")
        if typ is not None and typ != "Bearer":
            raise InvalidToken("not an access token", code="wrong_typ")
        audience_claim = "aud" if self.audience is not None else "azp"
        lightweight = (
            typ is None
            or "sub" not in claims
            or audience_claim not in claims
            or ("realm_access" not in claims and "resource_access" not in claims)
        )
        if lightweight and self._introspector is not None:
            return None
        if typ is None:
            raise InvalidToken("not an access token", code="wrong_typ")
        self._check_audience(claims)
        return _Checked(claims, generation, now, "jwt", key.kid, self._cache_ttl)

    def _check_audience(self, claims: Mapping[str, Any]) -> None:
        if self.audience is not None:
            aud = claims.get("aud")
            if isinstance(aud, str):
                if aud in self.audience:
                    return
            elif isinstance(aud, list):
                # A plain loop: this runs on every cache miss, and a generator costs more than the test.
                for value in aud:
                    if isinstance(value, str) and value in self.audience:
                        return
            raise InvalidToken("token not issued for this audience", code="wrong_aud")
        else:
            assert self.azp_allowlist is not None
            azp = claims.get("azp", claims.get("client_id"))
            if not isinstance(azp, str) or azp not in self.azp_allowlist:
                raise InvalidToken("token not issued to an allowed client", code="wrong_azp")

    def _result(self, digest: bytes, checked: _Checked) -> VerifiedToken:
        """The one place a :class:`VerifiedToken` is built: from checked claims, then cached."""
        claims = checked.claims
        exp = float(claims["exp"])
        # Positional (principal, claims, token_id, expires_at, source, kid): built on every miss.
        result = VerifiedToken(
            _principal(claims),
            MappingProxyType(claims),
            digest[:6].hex(),  # the 12-hex-digit label of token_id()
            exp,
            checked.source,
            checked.kid,
        )
        if self._cache_size and (checked.source == "introspection" or self._admit(digest)):
            self._store(digest, result, checked.generation, min(exp, checked.now + checked.ttl))
        return result

    def _introspect(self, token: str) -> Mapping[str, Any]:
        introspector = self._introspector
        if introspector is None:
            raise InvalidToken("lightweight token and no introspection configured", code="missing_claim")
        try:
            return introspector.introspect(token)
        except IdpUnavailable:
            raise
        except Exception as exc:
            _log.warning("introspection failed (%s)", type(exc).__name__)
            raise IdpUnavailable("token introspection failed", code="introspection_failed") from None

    async def _aintrospect(self, token: str) -> Mapping[str, Any]:
        introspector = self._introspector
        if introspector is None:
            raise InvalidToken("lightweight token and no introspection configured", code="missing_claim")
        try:
            return await introspector.aintrospect(token)
        except IdpUnavailable:
            raise
        except Exception as exc:
            _log.warning("introspection failed (%s)", type(exc).__name__)
            raise IdpUnavailable("token introspection failed", code="introspection_failed") from None

    def _checked_introspection(self, response: Mapping[str, Any], generation: int) -> _Checked:
        """Step 5: RFC 7662 §2.2 response -> the same checks as for a JWT, on the same time rule.

        ``exp`` (required), ``nbf`` and ``iat`` go through :func:`~mudrika.crypto.jose.check_jwt_claims`,
        the function that checks a JWT's: valid on ``[nbf - leeway, exp + leeway)``, so a token is
        refused at exactly ``exp + leeway`` whichever way it was verified.
        """
        if not isinstance(response, Mapping):
            raise IdpUnavailable("malformed introspection response", code="introspection_failed")
        if response.get("active") is not True:
            raise InvalidToken("token is not active", code="inactive")
        claims = {name: value for name, value in response.items() if name != "active"}
        now = self._clock()
        typ = claims.get("typ")
        token_type = claims.get("token_type")
        if (typ is not None and typ != "Bearer") or (
            token_type is not None and (not isinstance(token_type, str) or token_type.lower() != "bearer")
        ):
            raise InvalidToken("not an access token", code="wrong_typ")
        try:
            check_jwt_claims(
                claims,
                issuer=self.issuer if "iss" in claims else None,  # RFC 7662: iss is optional
                audience=None,  # checked below: aud or the azp allow-list
                now=now,
                leeway=self.leeway,
                required=("exp",),
            )
        except MudrikaError as exc:
            raise _auth_error(exc) from None
        self._check_audience(claims)
        return _Checked(claims, generation, now, "introspection", None, self._introspection_ttl)
