"""The delegate SD-JWT chain wire form: ``<root SD-JWT>~<disclosures>~~<KB-SD-JWT hop>~<disclosures>~…``.

Why a module of its own: splitting is where length, count and shape limits apply, before a single
byte is base64-decoded, and it fixes the exact ASCII each hop's ``sd_hash`` must cover.  AP2 joins
the tokens of a chain with an empty disclosure (``~~``): every token but the last has lost its
closing ``~`` in the join and gets it back here; the last one must end with ``~`` (a hop never
carries a separate KB-JWT: the next hop *is* the key binding).  Following the official SDK's
``MandateClient.present``/``chain.verify_chain`` shape (draft-gco-oauth-delegate-sd-jwt-00 §6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mudrika.crypto.compact import compact_text
from mudrika.crypto.sdjwt import ParsedSdJwt, SdJwtLimits, digest_of, parse
from mudrika.errors import InvalidInput
from mudrika.payments.v02.profile import CHAIN_SEPARATOR, MAX_CHAIN_BYTES, MAX_HOPS

__all__ = ["CHAIN_LIMITS", "ParsedChain", "join_chain", "parse_chain", "sd_digest"]

#: Per-token caps (a chain's tokens share :data:`MAX_CHAIN_BYTES`).
CHAIN_LIMITS = SdJwtLimits(max_bytes=MAX_CHAIN_BYTES, max_disclosures=256, max_disclosure_bytes=128 * 1024)


#: base64url(SHA-256(ASCII text)) without padding: how ``sd_hash``, ``issuer_jwt_hash``,
#: ``checkout_hash``, ``transaction_id`` and receipt ``reference`` values are computed (``_sd_alg``
#: sha-256, the only one this profile accepts); the SD-JWT layer's own digest, under this profile's name.
sd_digest = digest_of


@dataclass(frozen=True, slots=True)
class ParsedChain:
    """A chain split into its tokens; nothing is verified yet.  ``tokens[0]`` is the root."""

    tokens: tuple[ParsedSdJwt, ...]
    raw: str = field(repr=False)

    @property
    def hop_count(self) -> int:
        return len(self.tokens) - 1


def parse_chain(
    text: str | bytes, *, max_bytes: int = MAX_CHAIN_BYTES, max_hops: int = MAX_HOPS
) -> ParsedChain:
    """Split a chain into root and hops (``InvalidInput`` codes: ``too_large``, ``malformed_chain``,
    ``too_many_hops`` and those of :func:`mudrika.crypto.sdjwt.parse`)."""
    text = compact_text(text, name="chain", malformed_code="malformed_chain", max_bytes=max_bytes).strip()
    segments = text.split(CHAIN_SEPARATOR)
    if len(segments) < 2:
        raise InvalidInput("not a delegation chain (no '~~' between tokens)", code="malformed_chain")
    if len(segments) - 1 > max_hops:
        raise InvalidInput("too many hops", code="too_many_hops", limit=max_hops)
    last = segments[-1]
    if not last.endswith("~") or last.endswith("~~"):
        # A trailing KB-JWT after the last hop is not part of the AP2 profile: refuse it.
        raise InvalidInput("the last hop must end with '~'", code="malformed_chain")
    tokens: list[ParsedSdJwt] = []
    for index, segment in enumerate(segments):
        if not segment or segment.startswith("~"):
            raise InvalidInput("empty token in chain", code="malformed_chain", index=index)
        wire = segment if index == len(segments) - 1 else segment + "~"
        parsed = parse(wire, limits=CHAIN_LIMITS)
        if parsed.kb_jwt is not None:  # pragma: no cover - every wire form here ends with '~'
            raise InvalidInput("a chain token carries a KB-JWT", code="malformed_chain", index=index)
        tokens.append(parsed)
    return ParsedChain(tokens=tuple(tokens), raw=text)


def join_chain(tokens: list[str] | tuple[str, ...]) -> str:
    """Join SD-JWTs (each ``<jwt>~<disclosures>~``) into the chain wire form."""
    if len(tokens) < 2:
        raise InvalidInput("a chain has a root and at least one hop", code="malformed_chain")
    for token in tokens:
        if not token.endswith("~"):
            raise InvalidInput("every chain token ends with '~'", code="malformed_chain")
    return CHAIN_SEPARATOR.join(token[:-1] for token in tokens[:-1]) + CHAIN_SEPARATOR + tokens[-1]
