"""IETF Token Status List (draft-ietf-oauth-status-list-20), JWT form: build, encode, sign and verify
Status Lists, and the ``status`` claim a Referenced Token (an SD-JWT VC, a mandate) carries.

Why it lives on the crypto floor: the list and its token are pure functions of bytes and keys, so
the SD-JWT issuer (``crypto.sdjwt``) can add a ``status`` claim without importing anything above it,
and a dispute verifier can judge a stored token offline.  Fetching a token over the network (with the
egress policy and a cache) is :mod:`mudrika.identity.statuslist`.

``_list`` holds the packed array (§4.1-4.2), ``_token`` the Status List Token and the Referenced
Token's claim (§5.1, §6.2, §8.3, §8.4).
"""

from __future__ import annotations

from mudrika.crypto.statuslist._list import (
    ALLOWED_BITS,
    DEFAULT_MAX_LIST_BYTES,
    StatusList,
    StatusType,
    check_bits,
)
from mudrika.crypto.statuslist._token import (
    DEFAULT_MAX_TOKEN_BYTES,
    MAX_URI_CHARS,
    MEDIA_TYPE,
    STATUS_LIST_TYP,
    StatusReference,
    VerifiedStatusList,
    check_status,
    read_status_reference,
    sign_status_list_token,
    status_claim,
    verify_status_list_token,
)

__all__ = [
    "ALLOWED_BITS",
    "DEFAULT_MAX_LIST_BYTES",
    "DEFAULT_MAX_TOKEN_BYTES",
    "MAX_URI_CHARS",
    "MEDIA_TYPE",
    "STATUS_LIST_TYP",
    "StatusList",
    "StatusReference",
    "StatusType",
    "VerifiedStatusList",
    "check_bits",
    "check_status",
    "read_status_reference",
    "sign_status_list_token",
    "status_claim",
    "verify_status_list_token",
]
