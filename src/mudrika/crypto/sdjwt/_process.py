"""Processing of Disclosures against an Issuer-signed payload (RFC 9901 §7.1 steps 3-5).

Why it is stricter than the reference libraries: §7.1 step 5 rejects a Disclosure that no digest
references, and §4.1 forbids a repeated digest anywhere, including inside Disclosures; both
@sd-jwt/core 0.19.0 and sd-jwt (Python) 0.10.4 accept an unreferenced Disclosure, and the
JavaScript one also lets a disclosed claim silently overwrite a plain claim of the same name.  Every
one of those is refused here, each with its own error code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mudrika.crypto.sdjwt._disclosure import DecodedDisclosure, Disclosure
from mudrika.errors import InvalidInput, VerificationError

__all__ = ["ELLIPSIS", "RESERVED_NAMES", "SD", "SD_ALG_CLAIM", "ProcessedPayload", "process"]

SD: Final = "_sd"
ELLIPSIS: Final = "..."
SD_ALG_CLAIM: Final = "_sd_alg"
#: Claim names a Disclosure may not carry: §7.1 step 3.3.2.2 names ``_sd`` and ``...``; ``_sd_alg``
#: is refused too because it would masquerade as the hash-function claim (§4.1.1).
RESERVED_NAMES: Final = frozenset({SD, ELLIPSIS, SD_ALG_CLAIM})


@dataclass(frozen=True, slots=True)
class ProcessedPayload:
    """The Processed SD-JWT Payload (§7.1) and the Disclosures in the order they were presented.

    :attr:`disclosures` (each with its path and parent) is built on first use: a verifier that only
    needs the processed claims does not pay for one object per Disclosure.  Everything it is built
    from is fixed when the payload is processed, so it is what an eager build would have returned.
    """

    payload: dict[str, Any]
    decoded: tuple[DecodedDisclosure, ...] = field(repr=False)
    """The Disclosures as decoded, in the order presented."""
    placed: Mapping[str, tuple[str, str | None]] = field(repr=False)
    """Digest -> (RFC 6901 path in the processed payload, digest of the parent Disclosure or None)."""
    _built: tuple[Disclosure, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def disclosures(self) -> tuple[Disclosure, ...]:
        built = self._built
        if built is None:
            placed = self.placed
            disclosures = []
            for item in self.decoded:
                path, parent = placed[item.digest]
                disclosures.append(
                    Disclosure(item.digest, path, item.name, parent, item.encoded, item.salt, item.value)
                )
            built = tuple(disclosures)
            object.__setattr__(self, "_built", built)  # the same value on every call: a lazy field
        return built


def _escaped(name: str) -> str:
    """One RFC 6901 reference token (``~`` is ``~0``, ``/`` is ``~1``): :func:`format_pointer` of a
    path is the concatenation of ``"/" + _escaped(token)`` over its tokens."""
    return name.replace("~", "~0").replace("/", "~1")


class _Walker:
    """Steps 3.2-3.4 over one payload.  The path of each node travels as its RFC 6901 pointer text
    (extended by one token per level), so placing a Disclosure costs one concatenation rather than
    formatting the whole path again."""

    __slots__ = ("by_digest", "max_depth", "placed", "seen")

    def __init__(self, by_digest: Mapping[str, DecodedDisclosure], max_depth: int) -> None:
        self.by_digest = by_digest
        self.max_depth = max_depth
        self.seen: set[str] = set()
        # digest -> (path, parent digest)
        self.placed: dict[str, tuple[str, str | None]] = {}

    def _claim_digest(self, digest: str) -> DecodedDisclosure | None:
        # §7.1 step 4: any digest encountered more than once rejects the SD-JWT.
        seen = self.seen
        if digest in seen:
            raise VerificationError("a digest appears more than once", code="duplicate_digest")
        seen.add(digest)
        # §7.1 step 3.3.1: a digest with no matching Disclosure (undisclosed or decoy) is ignored.
        return self.by_digest.get(digest)

    def walk(self, node: Any, pointer: str, parent: str | None, depth: int) -> Any:
        if depth > self.max_depth:
            raise InvalidInput("SD-JWT payload nested too deeply", code="too_deep", limit=self.max_depth)
        if isinstance(node, dict):
            return self._object(node, pointer, parent, depth)
        if isinstance(node, list):
            return self._array(node, pointer, parent, depth)
        return node

    def _object(self, node: dict[str, Any], pointer: str, parent: str | None, depth: int) -> Any:
        # (*) step 3.2.1: an object's _sd key must refer to an array of strings.
        digests: Any = ()  # most objects (cnf, a JWK) carry no '_sd': nothing to check
        if SD in node:
            digests = node[SD]
            if not isinstance(digests, list) or not all(isinstance(item, str) for item in digests):
                raise InvalidInput("'_sd' must be an array of digest strings", code="malformed_sd")
        # A value nested below the limit is walked (and refused) even when it is a leaf.
        leaves_deeper = depth >= self.max_depth
        out: dict[str, Any] = {}
        for name, value in node.items():
            if name in RESERVED_NAMES:  # one lookup for the common case: an ordinary claim name
                if name == SD:
                    continue
                if name == ELLIPSIS:
                    # §4.1 item 7: '...' may only appear as the single key of an array-element digest.
                    raise InvalidInput(
                        "'...' used outside an array-element digest", code="misplaced_ellipsis"
                    )
                if depth != 0:
                    # §4.1.1: _sd_alg MUST NOT be used in any nested object.
                    raise InvalidInput("'_sd_alg' in a nested object", code="misplaced_sd_alg")
                continue  # step 3.6: _sd_alg is removed from the processed payload
            if leaves_deeper or isinstance(value, dict | list):
                out[name] = self.walk(value, pointer + "/" + _escaped(name), parent, depth + 1)
            else:
                out[name] = value  # what walk() returns for a leaf within the depth limit
        # (**) step 3.3: each embedded digest in this object's _sd array (_claim_digest, inlined:
        # this loop runs once per digest of the payload).
        seen, by_digest, placed = self.seen, self.by_digest, self.placed
        for digest in digests:
            # §7.1 step 4: any digest encountered more than once rejects the SD-JWT.
            if digest in seen:
                raise VerificationError("a digest appears more than once", code="duplicate_digest")
            seen.add(digest)
            # §7.1 step 3.3.1: a digest with no matching Disclosure (undisclosed or decoy) is ignored.
            found = by_digest.get(digest)
            if found is None:
                continue
            claim = found.name
            # step 3.3.2.1: a digest in _sd must point to a [salt, name, value] Disclosure.
            if claim is None:
                raise VerificationError(
                    "array-element disclosure referenced from an object", code="disclosure_shape_mismatch"
                )
            # step 3.3.2.2: the claim name must not be _sd or '...'.
            if claim in RESERVED_NAMES:
                raise VerificationError("disclosure uses a reserved claim name", code="reserved_claim_name")
            # step 3.3.2.3: the claim name must not already exist at this level.
            if claim in out:
                raise VerificationError(
                    "disclosed claim clashes with an existing claim", code="claim_name_clash"
                )
            member = pointer + "/" + claim.replace("~", "~0").replace("/", "~1")  # _escaped, inlined
            placed[digest] = (member, parent)
            # steps 3.3.2.4-5: insert, then process the disclosed value recursively.
            value = found.value
            if leaves_deeper or isinstance(value, dict | list):
                out[claim] = self.walk(value, member, digest, depth + 1)
            else:
                out[claim] = value
        return out

    def _array(self, node: list[Any], pointer: str, parent: str | None, depth: int) -> Any:
        out: list[Any] = []
        for element in node:
            # (*) step 3.2.2: an element that is an object with the single key '...' naming a string.
            if isinstance(element, dict) and ELLIPSIS in element:
                digest = element[ELLIPSIS]
                if len(element) != 1 or not isinstance(digest, str):
                    raise InvalidInput("malformed array-element digest", code="misplaced_ellipsis")
                found = self._claim_digest(digest)
                if found is None:
                    continue  # step 3.4: remove elements whose digest was not disclosed
                # step 3.3.3.1: a digest in an array must point to a [salt, value] Disclosure.
                if found.name is not None:
                    raise VerificationError(
                        "object-member disclosure referenced from an array", code="disclosure_shape_mismatch"
                    )
                element_pointer = f"{pointer}/{len(out)}"
                self.placed[digest] = (element_pointer, parent)
                # steps 3.3.3.2-3: replace the element, then process its value recursively.
                out.append(self.walk(found.value, element_pointer, digest, depth + 1))
                continue
            out.append(self.walk(element, f"{pointer}/{len(out)}", parent, depth + 1))
        return out


def process(
    issuer_payload: Mapping[str, Any], disclosures: Sequence[DecodedDisclosure], *, max_depth: int
) -> ProcessedPayload:
    """Run §7.1 steps 3-5 over a payload whose signature has already been checked."""
    by_digest: dict[str, DecodedDisclosure] = {}
    for item in disclosures:
        # §4: a Holder MUST NOT send a Disclosure more than once.
        if item.digest in by_digest:
            raise VerificationError("the same disclosure was sent twice", code="duplicate_disclosure")
        by_digest[item.digest] = item
    walker = _Walker(by_digest, max_depth)
    payload = walker.walk(
        issuer_payload if type(issuer_payload) is dict else dict(issuer_payload), "", None, 0
    )
    placed = walker.placed
    # §7.1 step 5: every Disclosure must be referenced, directly or through another Disclosure.  A
    # digest is placed at most once (step 4) and only when it is a presented one, so all of them were
    # placed exactly when the counts agree.
    if len(placed) != len(disclosures):
        unreferenced = [item.digest for item in disclosures if item.digest not in placed]
        raise VerificationError(
            "a disclosure is not referenced by the issuer-signed JWT",
            code="unreferenced_disclosure",
            digests=unreferenced[:8],
        )
    return ProcessedPayload(payload=payload, decoded=tuple(disclosures), placed=placed)
