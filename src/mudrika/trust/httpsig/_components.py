"""Message components and the signature base of RFC 9421 (§2.1 fields, §2.2 derived components, §2.5).

Why it is its own module: signer and verifier must build the *same bytes* from two different views of
one request (an ``httpx.Request`` on one side, an ASGI scope on the other).  Everything that decides
those bytes lives here, once: how the target URI is normalised (scheme and host lowercased, default
port elided, empty path is ``/``), how field lines are combined (each trimmed, joined with ``", "``),
and what is refused (control characters, non-ASCII, components we do not implement).

Supported derived components: ``@method``, ``@target-uri``, ``@authority``, ``@scheme``,
``@request-target``, ``@path``, ``@query`` and, for responses, ``@status``.  ``@query-param`` is
refused.  Component parameters are refused by default (the DID profile never needs them and each one
is more parsing an attacker can steer); the open-web profiles (Web Bot Auth, the directory response
signature) need three, and only a caller that passes ``component_parameters=True`` gets them:
``key`` (§2.1.2: one member of a Dictionary field, re-serialised), ``sf`` (§2.1.1: a Dictionary field
re-serialised strictly) and ``req`` (§2.4: the component of the request a response answers).  ``bs``
and ``tr`` stay refused.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol, TypeAlias, cast

from mudrika.errors import InvalidInput
from mudrika.trust.httpsig._sf import (
    InnerList,
    Item,
    parse_dictionary,
    serialize_dictionary,
    serialize_inner_list,
    serialize_item,
    serialize_params,
)

__all__ = [
    "DERIVED_COMPONENTS",
    "MAX_COMPONENTS",
    "HeaderInput",
    "MessageView",
    "TargetURI",
    "parse_target_uri",
    "signature_base",
]

MAX_COMPONENTS: Final = 32
MAX_URL_LENGTH: Final = 8192
MAX_HEADER_LINES: Final = 256

DERIVED_COMPONENTS: Final = frozenset(
    {"@method", "@target-uri", "@authority", "@scheme", "@request-target", "@path", "@query", "@status"}
)
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|{_PCT})"
_URL_RE: Final = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://"
    rf"(?P<host>\[[0-9A-Fa-f:.]+\]|(?:[A-Za-z0-9._~!$&'()*+,;=-]|{_PCT})+)"
    r"(?::(?P<port>[0-9]{1,5}))?"
    rf"(?P<path>(?:/{_PCHAR}*)*)"
    rf"(?:\?(?P<query>(?:{_PCHAR}|[/?])*))?"
)
_METHOD_RE: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}")
_FIELD_NAME_RE: Final = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]{1,128}")
_BAD_VALUE_RE: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Fields whose structured type (Dictionary) we know, so ``;key`` and ``;sf`` can parse them.
DICTIONARY_FIELDS: Final = frozenset(
    {"signature-agent", "signature-input", "signature", "content-digest", "repr-digest", "accept-signature"}
)
_COMPONENT_PARAMETERS: Final = frozenset({"key", "sf", "req"})


@dataclass(frozen=True, slots=True)
class TargetURI:
    """An absolute ``http``/``https`` target URI, normalised as RFC 9421 §2.2 derives components from it.

    ``port`` is ``None`` when absent or the scheme's default (elided, §2.2.3); ``path`` is never empty
    (an empty path means ``/``, RFC 9110 §4.2.3); ``query`` is ``None`` when absent, ``""`` when the URL
    ends in a bare ``?``.  Percent-encoding is kept exactly as sent: it is part of what was signed.
    """

    scheme: str
    host: str
    port: int | None
    path: str
    query: str | None

    @property
    def authority(self) -> str:
        """``@authority`` (§2.2.3): lowercased host, ``:port`` only when not the default."""
        return self.host if self.port is None else f"{self.host}:{self.port}"

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.authority}"

    @property
    def target_uri(self) -> str:
        """``@target-uri`` (§2.2.2)."""
        return self.origin + self.request_target

    @property
    def request_target(self) -> str:
        """``@request-target`` (§2.2.5) in origin-form."""
        return self.path if self.query is None else f"{self.path}?{self.query}"

    @property
    def query_component(self) -> str:
        """``@query`` (§2.2.7): the query with its leading ``?``; an absent query is ``?`` alone."""
        return "?" + (self.query or "")


def parse_target_uri(url: str) -> TargetURI:
    """Parse an encoded absolute URL (no user info, no fragment) and normalise it for signing.

    Raises :class:`InvalidInput` (``bad_target_uri``) for anything else, including schemes other
    than http/https, ports outside 1..65535 or with leading zeros, and bad IPv6 literals.
    """
    if not isinstance(url, str) or len(url) > MAX_URL_LENGTH:
        raise InvalidInput("target URI missing or too long", code="bad_target_uri", limit=MAX_URL_LENGTH)
    match = _URL_RE.fullmatch(url)
    if match is None:
        raise InvalidInput("target URI is not an encoded absolute http(s) URL", code="bad_target_uri")
    scheme = match["scheme"].lower()
    if scheme not in _DEFAULT_PORTS:
        raise InvalidInput("target URI scheme must be http or https", code="bad_target_uri")
    host = match["host"].lower()
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise InvalidInput("invalid IPv6 literal in target URI", code="bad_target_uri") from None
    port: int | None = None
    if match["port"] is not None:
        text = match["port"]
        if text.startswith("0") or not 1 <= int(text) <= 65535:
            raise InvalidInput("invalid port in target URI", code="bad_target_uri")
        port = None if int(text) == _DEFAULT_PORTS[scheme] else int(text)
    return TargetURI(scheme, host, port, match["path"] or "/", match["query"])


class _MultiItems(Protocol):
    """Header containers that keep repeated field lines (``httpx.Headers``)."""

    def multi_items(self) -> list[tuple[str, str]]: ...


HeaderInput: TypeAlias = (
    "Mapping[str, str] | Iterable[tuple[str, str]] | Iterable[tuple[bytes, bytes]] | _MultiItems"
)


def _field_lines(headers: HeaderInput) -> dict[str, list[str]]:
    """Field lines by lowercased name, in order.  Bytes are decoded as Latin-1 (checked later)."""
    # Duck-typed rather than isinstance() on the Protocol: runtime protocol checks cost microseconds.
    multi_items = getattr(headers, "multi_items", None)
    pairs: Iterable[tuple[str | bytes, str | bytes]]
    if callable(multi_items):
        pairs = multi_items()
    elif isinstance(headers, Mapping):
        pairs = headers.items()
    else:
        pairs = cast("Iterable[tuple[str | bytes, str | bytes]]", headers)
    lines: dict[str, list[str]] = {}
    for count, (raw_name, raw_value) in enumerate(pairs):
        if count >= MAX_HEADER_LINES:
            raise InvalidInput("too many header lines", code="too_large", limit=MAX_HEADER_LINES)
        name = raw_name.decode("latin-1") if isinstance(raw_name, bytes) else raw_name
        value = raw_value.decode("latin-1") if isinstance(raw_value, bytes) else raw_value
        lines.setdefault(name.lower(), []).append(value)
    return lines


def _checked(value: str, component: str) -> str:
    # §2.5 step 4: the signature base is ASCII, and a newline inside a value would forge a line.
    if not value.isascii() or _BAD_VALUE_RE.search(value):
        raise InvalidInput(
            "component value has control or non-ASCII characters",
            code="bad_component_value",
            component=component[:64],
        )
    return value


@dataclass(frozen=True, slots=True)
class MessageView:
    """What a signature can cover in one message: request line parts or status, and field lines."""

    fields: Mapping[str, list[str]]
    method: str | None = None
    target: TargetURI | None = None
    status: int | None = None
    #: For a response: the request it answers, which ``;req`` components read (RFC 9421 §2.4).
    request_view: MessageView | None = None
    #: Dictionary fields already parsed for this message (a ``;key`` component and the profile
    #: check read the same ``Signature-Agent``: parse it once).
    parsed: dict[str, dict[str, Item | InnerList]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def request(cls, method: str, url: str, headers: HeaderInput) -> MessageView:
        if not isinstance(method, str) or _METHOD_RE.fullmatch(method) is None:
            raise InvalidInput("invalid HTTP method", code="bad_method")
        return cls(_field_lines(headers), method=method, target=parse_target_uri(url))

    @classmethod
    def response(
        cls, status: int, headers: HeaderInput, *, request: MessageView | None = None
    ) -> MessageView:
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 999:
            raise InvalidInput("invalid HTTP status", code="bad_status")
        return cls(_field_lines(headers), status=status, request_view=request)

    def field(self, name: str) -> str | None:
        """§2.1: the field's lines, each with leading/trailing OWS removed, joined with ``", "``."""
        lines = self.fields.get(name)
        if lines is None:
            return None
        if len(lines) == 1:  # the usual case, without a generator and a join
            return lines[0].strip(" \t")
        return ", ".join(line.strip(" \t") for line in lines)

    def component_value(self, component: Item, *, parameters: bool = False) -> str:
        """The value of one covered component (§2.1 for fields, §2.2 for derived components).

        ``parameters`` allows the component parameters ``key``, ``sf`` and ``req`` (module docstring).
        """
        name = component.value
        if type(name) is not str:
            raise InvalidInput("component identifier must be an sf-string", code="bad_component")
        if component.params:
            if not parameters:
                raise InvalidInput(
                    "component parameters are not supported",
                    code="unsupported_component",
                    component=name[:64],
                )
            return self._parameterised(name, component.params)
        if name.startswith("@"):
            return _checked(self._derived(name), name)
        if _FIELD_NAME_RE.fullmatch(name) is None:
            raise InvalidInput("invalid covered field name", code="bad_component", component=name[:64])
        value = self.field(name)
        if value is None:
            raise InvalidInput("covered field is missing", code="missing_component", component=name)
        return _checked(value, name)

    def dictionary(self, name: str, value: str) -> dict[str, Item | InnerList]:
        """The Dictionary field ``name`` (whose combined value is ``value``), parsed once per message."""
        members = self.parsed.get(name)
        if members is None:
            members = parse_dictionary(value, field=name)
            self.parsed[name] = members
        return members

    def _parameterised(self, name: str, params: tuple[tuple[str, object], ...]) -> str:
        given = dict(params)
        if not given.keys() <= _COMPONENT_PARAMETERS:
            raise InvalidInput(
                "unsupported component parameter", code="unsupported_component", component=name[:64]
            )
        key, sf, req = given.get("key"), given.get("sf"), given.get("req")
        # sf and req are Boolean flags (§2.1.1, §2.4); key names a member as an sf-string (§2.1.2).
        if (sf is not None and sf is not True) or (req is not None and req is not True):
            raise InvalidInput("component flag must be true", code="bad_component", component=name[:64])
        if key is not None and (type(key) is not str or sf is not None):
            raise InvalidInput("invalid key parameter", code="bad_component", component=name[:64])
        source = self
        if req is not None:
            # §2.4: only a response signature may cover its request's components.
            if self.request_view is None:
                raise InvalidInput("req needs a response and its request", code="bad_component")
            source = self.request_view
        if name.startswith("@"):
            if key is not None or sf is not None or name == "@status":
                raise InvalidInput("parameter not valid here", code="bad_component", component=name[:64])
            return _checked(source._derived(name), name)
        if _FIELD_NAME_RE.fullmatch(name) is None:
            raise InvalidInput("invalid covered field name", code="bad_component", component=name[:64])
        value = source.field(name)
        if value is None:
            raise InvalidInput("covered field is missing", code="missing_component", component=name)
        if key is None and sf is None:
            return _checked(value, name)
        if name not in DICTIONARY_FIELDS:
            raise InvalidInput(
                "structured type of this field is unknown", code="unsupported_component", component=name
            )
        members = source.dictionary(name, value)
        if sf is not None:
            return serialize_dictionary(members)  # §2.1.1: strict re-serialisation
        assert isinstance(key, str)
        member = members.get(key)
        if member is None:
            raise InvalidInput(
                "covered dictionary member is missing", code="missing_component", component=name
            )
        # §2.1.2: the member value (with its parameters), serialised.
        return serialize_inner_list(member) if isinstance(member, InnerList) else serialize_item(member)

    def _derived(self, name: str) -> str:
        if name == "@status":
            if self.status is None:
                raise InvalidInput("@status only exists in a response", code="bad_component")
            return str(self.status)
        if name not in DERIVED_COMPONENTS:
            raise InvalidInput(
                "unsupported derived component", code="unsupported_component", component=name[:64]
            )
        if self.method is None or self.target is None:
            raise InvalidInput(
                "request component in a response signature", code="bad_component", component=name
            )
        target = self.target
        if name == "@method":
            return self.method  # §2.2.1: the method name, case-sensitive
        if name == "@target-uri":
            return target.target_uri
        if name == "@authority":
            return target.authority
        if name == "@scheme":
            return target.scheme
        if name == "@request-target":
            return target.request_target
        if name == "@path":
            return target.path
        return target.query_component  # "@query"


def signature_base(
    view: MessageView,
    signature_params: InnerList,
    *,
    component_parameters: bool = False,
    params_text: str | None = None,
) -> bytes:
    """Build the signature base of RFC 9421 §2.5 for the covered components in ``signature_params``.

    ``component_parameters`` allows ``key``/``sf``/``req`` (module docstring).  ``params_text`` replaces
    the serialised ``@signature-params`` value with the member text as received: for a documented
    leniency whose signer signed text that cannot be re-serialised (``_web.LENIENT_KEYID_CASE``), or
    for text the parser proved canonical (``DictionaryMembers.canonical``: it *is* the serialisation).
    """
    if len(signature_params.items) > MAX_COMPONENTS:
        raise InvalidInput("too many covered components", code="too_large", limit=MAX_COMPONENTS)
    # 1. Let the output be an empty string.
    lines: list[str] = []
    identifiers: list[str] = []
    seen: set[str] = set()
    # 2. For each message component item in the covered components set (in order):
    for component in signature_params.items:
        identifier = serialize_item(component)
        # 2.1 If the component identifier is "@signature-params", produce an error.
        if component.value == "@signature-params":
            raise InvalidInput("@signature-params cannot be covered", code="bad_component")
        # A component listed twice would sign the same value twice; RFC 9421 §2.5 calls that an error.
        if identifier in seen:
            raise InvalidInput(
                "component covered twice", code="duplicate_component", component=identifier[:64]
            )
        seen.add(identifier)
        identifiers.append(identifier)
        # 2.2-2.7 identifier, ":", " ", the component value, "\n".
        value = view.component_value(component, parameters=component_parameters)
        lines.append(f"{identifier}: {value}\n")
    # 3. The signature parameters line: identifier, ":", " ", the serialised inner list (§2.3) —
    # RFC 8941 §4.1.1.1 over the identifiers serialised above (the same items: serialised once).
    params_line = (
        "(" + " ".join(identifiers) + ")" + serialize_params(signature_params.params)
        if params_text is None
        else _checked(params_text, "@signature-params")
    )
    lines.append(f'"@signature-params": {params_line}')
    output = "".join(lines)
    # 4. Non-ASCII output is an error (values were checked above; keyid/nonce strings are sf-strings).
    return output.encode("ascii")
