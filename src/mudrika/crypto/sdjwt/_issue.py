"""Turning claims into an SD-JWT payload plus Disclosures (RFC 9901 §4.1, §4.2).

Why paths are checked against the claims before anything is built: a typo in a disclosable path
would otherwise leave a claim in plaintext that the Issuer meant to hide, which is a privacy failure
nobody would notice.  An unknown path is therefore an error, not a no-op.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mudrika.crypto.jcs import canonicalize
from mudrika.crypto.sdjwt._disclosure import SaltSource, digest_of, encode_disclosure
from mudrika.crypto.sdjwt._pointer import parse_pointer
from mudrika.crypto.sdjwt._process import ELLIPSIS, RESERVED_NAMES, SD
from mudrika.errors import InvalidInput

__all__ = ["MAX_DECOYS", "NEVER_DISCLOSABLE", "PackedClaims", "pack_claims"]

#: Top-level claims that control validity or binding and so are never made selectively disclosable
#: (RFC 9901 §9.7; SD-JWT VC adds ``vct`` and ``status``).
NEVER_DISCLOSABLE: Final = frozenset({"iss", "aud", "exp", "nbf", "cnf", "vct", "status"})
MAX_DECOYS: Final = 64
_INDEX = re.compile(r"0|[1-9][0-9]*")


@dataclass(frozen=True, slots=True)
class PackedClaims:
    payload: dict[str, Any]
    disclosures: tuple[str, ...]


def _check_names(node: Any) -> None:
    # §4.1 item 7: the input may not already use the names SD-JWT reserves for digests.
    if isinstance(node, Mapping):
        for name, value in node.items():
            if not isinstance(name, str):
                raise InvalidInput("claim names must be strings", code="non_string_key")
            if name in RESERVED_NAMES:
                raise InvalidInput(
                    "claims use a name reserved by SD-JWT", code="reserved_claim_name", name=name
                )
            _check_names(value)
    elif isinstance(node, list | tuple):
        for item in node:
            _check_names(item)


def _resolve(claims: Mapping[str, Any], tokens: tuple[str, ...], pointer: str) -> None:
    node: Any = claims
    for token in tokens:
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list | tuple) and _INDEX.fullmatch(token) and int(token) < len(node):
            node = node[int(token)]
        else:
            raise InvalidInput("disclosable path names no claim", code="unknown_path", path=pointer[:64])


class _Packer:
    def __init__(self, marks: frozenset[tuple[str, ...]], decoys: int, salt: SaltSource) -> None:
        self.marks = marks
        self.decoys = decoys
        self.salt = salt
        self.disclosures: list[str] = []

    def _disclose(self, name: str | None, value: Any) -> str:
        encoded = encode_disclosure(self.salt(), name, value)
        self.disclosures.append(encoded)
        return digest_of(encoded)

    def pack(self, node: Any, path: tuple[str, ...]) -> Any:
        if isinstance(node, Mapping):
            out: dict[str, Any] = {}
            digests: list[str] = []
            for name, value in node.items():
                packed = self.pack(value, (*path, name))
                if (*path, name) in self.marks:
                    # §4.2.1 Disclosure, §4.2.4.1 digest into this object's _sd array.
                    digests.append(self._disclose(name, packed))
                else:
                    out[name] = packed
            if self.decoys and (digests or not path):
                # §4.2.5: decoy digests are hashes over fresh random salts.
                digests.extend(digest_of(self.salt()) for _ in range(self.decoys))
            if digests:
                # §4.2.4.1: hide the original order of the claims.
                out[SD] = sorted(digests)
            return out
        if isinstance(node, list | tuple):
            items: list[Any] = []
            for index, element in enumerate(node):
                packed = self.pack(element, (*path, str(index)))
                if (*path, str(index)) in self.marks:
                    # §4.2.2 Disclosure, §4.2.4.2 {"...": digest} in the element's place.
                    items.append({ELLIPSIS: self._disclose(None, packed)})
                else:
                    items.append(packed)
            return items
        return node


def pack_claims(
    claims: Mapping[str, Any], disclosable: Collection[str], *, decoys: int, salt: SaltSource
) -> PackedClaims:
    """Build the SD-JWT payload (without ``_sd_alg``/``cnf``) and its Disclosures, children first.

    A path and one of its ancestors may both be listed: the inner claim becomes a Disclosure inside
    the outer one (recursive disclosure, §4.2.6).
    """
    if not isinstance(claims, Mapping):
        raise InvalidInput("claims must be a JSON object", code="malformed_claims")
    if isinstance(disclosable, str):
        raise InvalidInput("disclosable must be a collection of paths, not one string", code="bad_path")
    if isinstance(decoys, bool) or not isinstance(decoys, int) or not 0 <= decoys <= MAX_DECOYS:
        raise InvalidInput("decoys out of range", code="bad_decoys", limit=MAX_DECOYS)
    # Every value must be exchangeable JSON (I-JSON numbers, no NaN, bounded depth) before walking it.
    canonicalize(dict(claims))
    _check_names(claims)
    marks: set[tuple[str, ...]] = set()
    for pointer in disclosable:
        tokens = parse_pointer(pointer)
        if len(tokens) == 1 and tokens[0] in NEVER_DISCLOSABLE:
            raise InvalidInput(
                "this claim controls validity and may not be selectively disclosable",
                code="not_disclosable",
                path=pointer,
            )
        _resolve(claims, tokens, pointer)
        marks.add(tokens)
    packer = _Packer(frozenset(marks), decoys, salt)
    payload = packer.pack(claims, ())
    return PackedClaims(payload=payload, disclosures=tuple(packer.disclosures))
