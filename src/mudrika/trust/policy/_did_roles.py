"""Roles and tenants for callers that authenticate with a DID (RFC 9421 signatures, signed cards).

Why a table in the policy file: a DID-signed request proves *which* DID signed it, not what that DID
may do.  Without a mapping every DID caller has no role and is denied (``no_role``); with one, the
operator states per DID — or per family of did:web DIDs — which roles and tenants it holds.

Pattern rules (checked when the policy loads, so a typo fails at start-up, not per request):

* Any DID method: an exact DID (``did:key:z6Mk…``, ``did:jwk:…``, ``did:web:agents.example.com``).
  did:key and did:jwk are self-certifying key material, so they are matched **only exactly**: a
  ``*`` in them is refused.
* did:web only: ``did:web:*.example.com`` matches any host *below* ``example.com`` (one or more
  labels; never ``example.com`` itself; the fixed part needs two labels or more, so ``*.com`` is
  refused) with no path; ``did:web:example.com:*`` matches any path
  below that host (one or more segments; not the bare host); both combine
  (``did:web:*.example.com:agents:*``).  Host labels compare case-insensitively (DNS), path segments
  and ports exactly.
* Path segments obey the did:web driver's segment rule (:func:`mudrika.identity.did.path_segment_refusal`)
  in patterns (refused at load) and in the DIDs matched against them (no grant): ``%2E%2E``,
  ``%2F``, ``%252E`` never reach a comparison, so a pattern cannot be escaped by a spelling the web
  server decodes differently.
* An exact entry for a DID wins over every pattern; otherwise the roles and tenants of all matching
  patterns are united.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from mudrika.errors import InvalidInput
from mudrika.identity.did import parse_did, path_segment_refusal

__all__ = ["DidGrant", "DidRoleTable"]

_EMPTY: frozenset[str] = frozenset()
_MAX_PATTERNS: Final = 10_000
# Any caller can mint did:key identities, so the per-DID memo stays small; it is cleared when full.
_MEMO_LIMIT: Final = 4096
_LABEL: Final = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_PORT: Final = re.compile(r"%3[Aa][0-9]{1,5}")


@dataclass(frozen=True, slots=True)
class DidGrant:
    """What the policy file grants one DID: its roles and the tenants it belongs to."""

    roles: frozenset[str] = _EMPTY
    tenants: frozenset[str] = _EMPTY


@dataclass(frozen=True, slots=True)
class _WebPattern:
    host_suffix: str  # ".example.com" for "*.example.com", else the exact host (lower case)
    wildcard_host: bool
    port: str  # "" or "%3A8443" exactly as written
    path: tuple[str, ...]
    wildcard_path: bool
    grant: DidGrant


def _split_web(msid: str) -> tuple[str, str, list[str]]:
    first, *segments = msid.split(":")
    host, sep, port = first.partition("%")
    return host.lower(), (sep + port) if sep else "", segments


def _compile_web(pattern: str, msid: str, grant: DidGrant) -> _WebPattern:
    host, port, segments = _split_web(msid)
    wildcard_host = host.startswith("*.")
    bare = host[2:] if wildcard_host else host
    labels = bare.split(".")
    if len(labels) < 2 or not all(_LABEL.fullmatch(label) for label in labels):
        raise InvalidInput(
            f"did_roles pattern {pattern!r}: the host must be a DNS name, optionally after '*.'",
            code="invalid_policy",
            pattern=pattern[:200],
        )
    wildcard_path = bool(segments) and segments[-1] == "*"
    fixed = segments[:-1] if wildcard_path else segments
    if "*" in port or any("*" in segment for segment in fixed):
        raise InvalidInput(
            f"did_roles pattern {pattern!r}: '*' is allowed only as the first host label or as the whole "
            "final path segment",
            code="invalid_policy",
            pattern=pattern[:200],
        )
    if port and not _PORT.fullmatch(port):
        raise InvalidInput(
            f"did_roles pattern {pattern!r}: a port is '%3A' followed by digits",
            code="invalid_policy",
            pattern=pattern[:200],
        )
    _check_segments(pattern, fixed)
    return _WebPattern(
        host_suffix="." + bare if wildcard_host else bare,
        wildcard_host=wildcard_host,
        port=port,
        path=tuple(fixed),
        wildcard_path=wildcard_path,
        grant=grant,
    )


def _check_segments(pattern: str, segments: list[str]) -> None:
    """Refuse at load a pattern whose path no DID could match (the DID would be refused per request)."""
    for segment in segments:
        reason = path_segment_refusal(segment)
        if reason is not None:
            raise InvalidInput(
                f"did_roles pattern {pattern!r}: path segment {segment[:64]!r} is not allowed ({reason})",
                code="invalid_policy",
                pattern=pattern[:200],
                reason=reason,
            )


def _web_matches(pattern: _WebPattern, host: str, port: str, segments: list[str]) -> bool:
    if pattern.wildcard_host:
        if not host.endswith(pattern.host_suffix) or len(host) <= len(pattern.host_suffix):
            return False
    elif host != pattern.host_suffix:
        return False
    if port != pattern.port:
        return False
    fixed = len(pattern.path)
    if pattern.wildcard_path:
        return len(segments) > fixed and tuple(segments[:fixed]) == pattern.path
    return tuple(segments) == pattern.path


class DidRoleTable:
    """The compiled ``did_roles`` mapping; :meth:`grant_for` answers per DID (memoised, bounded)."""

    __slots__ = ("_exact", "_memo", "_web")

    def __init__(self, entries: Mapping[str, tuple[Iterable[str], Iterable[str]]]) -> None:
        if len(entries) > _MAX_PATTERNS:
            raise InvalidInput("too many did_roles entries", code="invalid_policy", limit=_MAX_PATTERNS)
        self._exact: dict[str, DidGrant] = {}
        self._web: list[_WebPattern] = []
        self._memo: dict[str, DidGrant | None] = {}
        for pattern, (roles, tenants) in entries.items():
            grant = DidGrant(roles=frozenset(roles), tenants=frozenset(tenants))
            if "*" not in pattern:
                self._exact[self._normalise(pattern)] = grant
                continue
            try:
                did = parse_did(pattern.replace("*", "wildcard"))
            except InvalidInput:
                raise InvalidInput(
                    f"did_roles pattern {pattern!r} is not a DID",
                    code="invalid_policy",
                    pattern=pattern[:200],
                ) from None
            if did.method != "web":
                raise InvalidInput(
                    f"did_roles pattern {pattern!r}: only did:web DIDs may use '*' (did:{did.method} is "
                    "matched exactly)",
                    code="invalid_policy",
                    pattern=pattern[:200],
                )
            self._web.append(_compile_web(pattern, pattern.removeprefix("did:web:"), grant))

    @staticmethod
    def _normalise(did_text: str) -> str:
        try:
            did = parse_did(did_text)
        except InvalidInput:
            raise InvalidInput(
                f"did_roles key {did_text!r} is not a DID", code="invalid_policy", pattern=did_text[:200]
            ) from None
        if did.method == "web":
            host, port, segments = _split_web(did.method_specific_id)
            _check_segments(did_text, segments)
            return "did:web:" + ":".join([host + port, *segments])
        return str(did)

    def __len__(self) -> int:
        return len(self._exact) + len(self._web)

    def grant_for(self, did: str) -> DidGrant | None:
        """The roles and tenants the table gives ``did``, or None when no entry matches (deny)."""
        if did in self._memo:
            return self._memo[did]
        try:
            key = self._normalise(did)
        except InvalidInput:
            # Not a DID, or a did:web whose path the driver would refuse to fetch (``%2E%2E``): nothing
            # is granted (and nothing remembered for junk input).
            return None
        grant = self._exact.get(key)
        if grant is None and self._web and key.startswith("did:web:"):
            host, port, segments = _split_web(key.removeprefix("did:web:"))
            matched = [p.grant for p in self._web if _web_matches(p, host, port, segments)]
            if matched:
                grant = DidGrant(
                    roles=frozenset().union(*(m.roles for m in matched)),
                    tenants=frozenset().union(*(m.tenants for m in matched)),
                )
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        self._memo[did] = grant
        return grant
