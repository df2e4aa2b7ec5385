"""The ``A2A-Extensions`` service parameter (A2A 1.0 §3.2.6, §14.2.2) and the AP2 extension URIs.

Why here: the middleware honours the header (it records what a caller activated and refuses a call
that omits an extension the agent marks ``required``), and the AP2 extension URIs are what it
recognises there.  ``trust`` may not import ``payments`` (offline dispute verification must not pull
in the middleware), so the two URI strings are duplicated from :mod:`mudrika.payments.a2a` rather
than imported; ``tests/unit/test_a2a_extensions.py`` asserts the copies equal the originals, so they
cannot drift apart.  Moving them down into a shared module would have made ``payments`` depend on a
``trust`` module or created a third home for two strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from mudrika.errors import InvalidInput

__all__ = [
    "AP2_V01_EXTENSION_URI",
    "AP2_V02_EXTENSION_URI",
    "AP2_VERSION_FOR_URI",
    "EXTENSIONS_HEADER",
    "LEGACY_EXTENSIONS_HEADER",
    "MAX_EXTENSIONS",
    "ap2_versions",
    "requested_extensions",
]

#: The header A2A 1.0 clients send; a2a-sdk's v0.3 clients send the ``X-`` form.
EXTENSIONS_HEADER: Final = "A2A-Extensions"
LEGACY_EXTENSIONS_HEADER: Final = "X-A2A-Extensions"
#: Copies of :data:`mudrika.payments.a2a.AP2_EXTENSION_URI` and ``AP2_V02_EXTENSION_URI``.
AP2_V01_EXTENSION_URI: Final = "https://github.com/google-agentic-commerce/ap2/tree/v0.1"
AP2_V02_EXTENSION_URI: Final = "https://github.com/google-agentic-commerce/ap2/v1"
AP2_VERSION_FOR_URI: Final = {AP2_V01_EXTENSION_URI: "0.1", AP2_V02_EXTENSION_URI: "0.2"}
#: At most this many extension URIs per request, each at most ``_MAX_URI`` characters: attacker input.
MAX_EXTENSIONS: Final = 32
_MAX_URI: Final = 512


def requested_extensions(values: Iterable[str]) -> frozenset[str]:
    """The extension URIs a request activates, from its header values (comma-separated, §14.2.2).

    Raises :class:`~mudrika.errors.InvalidInput` (``too_many_extensions``, ``bad_extension_uri``)
    for more than :data:`MAX_EXTENSIONS` URIs or a URI that is too long or contains a control or
    space character, rather than silently dropping part of what the client asked for.
    """
    uris: set[str] = set()
    for value in values:
        for item in value.split(","):
            uri = item.strip()
            if not uri:
                continue
            if len(uri) > _MAX_URI or any(ch <= " " or ch == "\x7f" for ch in uri):
                raise InvalidInput("malformed extension URI", code="bad_extension_uri")
            uris.add(uri)
            if len(uris) > MAX_EXTENSIONS:
                raise InvalidInput("too many extensions", code="too_many_extensions", limit=MAX_EXTENSIONS)
    return frozenset(uris)


def ap2_versions(extensions: Iterable[str]) -> frozenset[str]:
    """The AP2 versions (``"0.1"``, ``"0.2"``) whose extension a request activated."""
    return frozenset(AP2_VERSION_FOR_URI[uri] for uri in extensions if uri in AP2_VERSION_FOR_URI)
