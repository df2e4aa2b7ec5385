"""The mudrika profile of RFC 9421: defaults, limits, and the checks signer and verifier share.

Why one place: the signer must never emit what the verifier refuses (a label, tag or keyid shape, a
lifetime), and the verifier's parameter rules (§2.3: which parameters exist and their types) are the
contract a peer implements against; docs/replay.md documents exactly these values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from mudrika.errors import InvalidInput
from mudrika.identity.did import parse_did_url
from mudrika.trust.httpsig._sf import InnerList

__all__ = [
    "DEFAULT_EXPIRES_IN",
    "DEFAULT_LABEL",
    "DEFAULT_LEEWAY",
    "DEFAULT_MAX_AGE",
    "DEFAULT_MAX_LIFETIME",
    "DEFAULT_TAG",
    "MAX_LEEWAY",
    "NONCE_BYTES",
    "SIGNATURE_FIELDS",
    "TARGET_COMPONENTS",
    "Clock",
    "SignatureParameters",
    "TargetMode",
    "check_keyid",
    "check_label",
    "check_nonce",
    "check_tag",
    "require_components",
]

DEFAULT_LABEL: Final = "sig1"
DEFAULT_TAG: Final = "mudrika-a2a"
DEFAULT_EXPIRES_IN: Final = 60
"""Seconds a signature is valid: long enough for one call through a proxy, short enough that a
captured request is useless soon after, and the replay store holds each nonce only that long."""
DEFAULT_LEEWAY: Final = 5.0
DEFAULT_MAX_AGE: Final = 300.0
DEFAULT_MAX_LIFETIME: Final = 300
MAX_LEEWAY: Final = 30.0
NONCE_BYTES: Final = 16
"""128 random bits: two honest requests of one DID never collide, so a lost claim means a replay."""

SIGNATURE_FIELDS: Final = frozenset({"signature", "signature-input", "content-digest"})

TargetMode = Literal["target-uri", "authority-path-query"]
TARGET_COMPONENTS: Final[Mapping[str, tuple[str, ...]]] = {
    "target-uri": ("@method", "@target-uri"),
    "authority-path-query": ("@method", "@authority", "@path", "@query"),
}
Clock = Callable[[], float]

_NONCE_RE: Final = re.compile(r"[A-Za-z0-9_-]{22,128}")
_LABEL_RE: Final = re.compile(r"[a-z*][a-z0-9_.*-]{0,63}")
_TAG_RE: Final = re.compile(r"[\x20-\x7e]{1,128}")
_INTEGER_PARAMS: Final = frozenset({"created", "expires"})
_STRING_PARAMS: Final = frozenset({"nonce", "keyid", "alg", "tag"})


def check_keyid(keyid: str) -> str:
    """A keyid must be a DID URL naming one verification method (not a bare DID); returns its DID."""
    if not isinstance(keyid, str):
        raise InvalidInput("keyid must be a DID URL", code="bad_keyid")
    try:
        url = parse_did_url(keyid)
    except InvalidInput as exc:
        raise InvalidInput("keyid is not a DID URL", code="bad_keyid", reason=exc.code) from None
    if url.is_bare_did:
        raise InvalidInput("keyid must name a verification method, not a bare DID", code="bad_keyid")
    return url.did_str


def check_label(label: str) -> str:
    if not isinstance(label, str) or _LABEL_RE.fullmatch(label) is None:
        raise InvalidInput("signature label must be a structured-field key", code="httpsig_config")
    return label


def check_tag(tag: str | None) -> str | None:
    if tag is not None and (not isinstance(tag, str) or _TAG_RE.fullmatch(tag) is None):
        raise InvalidInput("tag must be 1..128 printable ASCII characters", code="httpsig_config")
    return tag


def check_nonce(nonce: str) -> str:
    if _NONCE_RE.fullmatch(nonce) is None:
        raise InvalidInput("nonce must be 22..128 base64url characters", code="bad_nonce")
    return nonce


@dataclass(frozen=True, slots=True)
class SignatureParameters:
    """The signature parameters of RFC 9421 §2.3, typed; ``None`` where the signer left one out."""

    created: int | None = None
    expires: int | None = None
    nonce: str | None = None
    keyid: str | None = None
    alg: str | None = None
    tag: str | None = None

    @classmethod
    def parse(cls, signature_input: InnerList) -> SignatureParameters:
        """Read the parameters of one Signature-Input member; unknown or mistyped ones are refused.

        ``created``/``expires`` must be non-negative sf-integers; the others sf-strings (an sf-token such
        as ``keyid=did`` is refused, not coerced).
        """
        ints: dict[str, int] = {}
        strings: dict[str, str] = {}
        for name, value in signature_input.params:
            if name in _INTEGER_PARAMS:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise InvalidInput(
                        "signature parameter must be a non-negative integer",
                        code="bad_parameter",
                        parameter=name,
                    )
                ints[name] = value
            elif name in _STRING_PARAMS:
                if type(value) is not str:
                    raise InvalidInput(
                        "signature parameter must be a string", code="bad_parameter", parameter=name
                    )
                strings[name] = value
            else:
                raise InvalidInput(
                    "unknown signature parameter", code="unknown_parameter", parameter=name[:32]
                )
        return cls(
            created=ints.get("created"),
            expires=ints.get("expires"),
            nonce=strings.get("nonce"),
            keyid=strings.get("keyid"),
            alg=strings.get("alg"),
            tag=strings.get("tag"),
        )


def require_components(components: tuple[str, ...], *, content_type: bool) -> None:
    """The profile's covered-component floor: ``@method``; ``@target-uri`` or ``@authority`` + ``@path`` +
    ``@query``; and ``content-type`` when the request has one (a body re-labelled as another media type
    is another message).  ``content-digest`` is required by the body check, when there is a body."""
    covered = set(components)
    if "@method" not in covered:
        raise InvalidInput("signature must cover @method", code="missing_component", component="@method")
    if "@target-uri" not in covered:
        for name in ("@authority", "@path", "@query"):
            if name not in covered:
                raise InvalidInput(
                    "signature must cover @target-uri, or @authority, @path and @query",
                    code="missing_component",
                    component=name,
                )
    if content_type and "content-type" not in covered:
        raise InvalidInput(
            "signature must cover content-type", code="missing_component", component="content-type"
        )
