"""AP2 mandates inside A2A messages: the DataPart keys, extraction and wrapping.

AP2 v0.1 "A2A Extension for AP2" (``docs/a2a-extension.md``): an IntentMandate Message, a CartMandate
Artifact and a PaymentMandate Message each carry a DataPart whose ``data`` object has the key
``ap2.mandates.IntentMandate`` / ``ap2.mandates.CartMandate`` / ``ap2.mandates.PaymentMandate`` and
the mandate as its value.  Other keys (``risk_data``) may sit beside it.

Two part shapes are read:

* A2A 0.3 (JSON-RPC, as the AP2 samples send it): ``{"kind": "data", "data": {...}}``;
  ``"kind": "text"`` / ``"file"`` parts are skipped.
* A2A 1.0 (protobuf ``Part`` rendered as JSON): no ``kind``; exactly one of ``text``, ``raw``,
  ``url``, ``data`` is set, and ``data`` is any JSON value (only objects can hold mandates).  A 1.0
  peer routes numbers through ``google.protobuf.Value``, so integers arrive as ``30.0``; that does not
  change a mandate hash, because RFC 8785 writes ``30.0`` as ``30``.

Decisions (see ``docs/payments.md``): each mandate is parsed into a
:class:`~mudrika.payments.models.Received` exactly like a standalone one (its raw object is what gets
hashed); keys that start with ``ap2.`` but are not one of the three are *reported* in
:attr:`ExtractedMandates.unknown_ap2_keys` and not parsed (a later AP2 version may add types; the
caller decides whether to refuse them); other keys are ignored.  Malformed parts are errors, never
skipped silently.  Parts and mandates per message are capped.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from mudrika.crypto.jcs import DEFAULT_MAX_BYTES, loads_strict
from mudrika.errors import InvalidInput
from mudrika.payments.models import Ap2Model, CartMandate, IntentMandate, PaymentMandate, Received, receive

__all__ = [
    "AP2_EXTENSION_URI",
    "AP2_EXTENSION_URIS",
    "AP2_V02_EXTENSION_URI",
    "CART_MANDATE_KEY",
    "INTENT_MANDATE_KEY",
    "MAX_MANDATES",
    "MAX_PARTS",
    "PAYMENT_MANDATE_KEY",
    "ExtractedMandates",
    "extract_mandates",
    "wrap_mandates",
]

AP2_EXTENSION_URI = "https://github.com/google-agentic-commerce/ap2/tree/v0.1"
#: The extension URI AP2 v0.2 agents declare in their card and send in ``A2A-Extensions``.
AP2_V02_EXTENSION_URI = "https://github.com/google-agentic-commerce/ap2/v1"
#: Every AP2 extension URI this module understands (v0.1 first), for card and header checks.
AP2_EXTENSION_URIS: frozenset[str] = frozenset({AP2_EXTENSION_URI, AP2_V02_EXTENSION_URI})
INTENT_MANDATE_KEY = "ap2.mandates.IntentMandate"
CART_MANDATE_KEY = "ap2.mandates.CartMandate"
PAYMENT_MANDATE_KEY = "ap2.mandates.PaymentMandate"

MAX_PARTS = 64
"""More parts than this in one message is refused (``too_many_parts``)."""

MAX_MANDATES = 16
"""More mandates than this in one message is refused (``too_many_mandates``)."""

_A2A_1_CONTENT = ("text", "raw", "url", "data")


@dataclass(frozen=True, slots=True)
class ExtractedMandates:
    """The mandates found in one A2A message or artifact, in part order."""

    intents: tuple[Received[IntentMandate], ...] = ()
    carts: tuple[Received[CartMandate], ...] = ()
    payments: tuple[Received[PaymentMandate], ...] = ()
    unknown_ap2_keys: tuple[str, ...] = ()
    """``ap2.*`` DataPart keys that are not AP2 v0.1 mandates (reported, not parsed)."""

    def as_dict(self) -> dict[str, list[Received[Any]]]:
        """The same mandates keyed by DataPart key (keys with no mandate are left out)."""
        result: dict[str, list[Received[Any]]] = {}
        for key, found in (
            (INTENT_MANDATE_KEY, self.intents),
            (CART_MANDATE_KEY, self.carts),
            (PAYMENT_MANDATE_KEY, self.payments),
        ):
            if found:
                result[key] = list(found)
        return result


def extract_mandates(
    message: bytes | str | Mapping[str, Any],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_parts: int = MAX_PARTS,
    max_mandates: int = MAX_MANDATES,
) -> ExtractedMandates:
    """Pull every AP2 v0.1 mandate out of an A2A ``Message`` or ``Artifact`` (anything with ``parts``).

    ``bytes``/``str`` are parsed with :func:`~mudrika.crypto.jcs.loads_strict` first (so a duplicate
    key anywhere in the message is refused); a ``Mapping`` is taken as already-parsed JSON.

    Raises :class:`~mudrika.errors.InvalidInput`: ``not_a_message`` (no ``parts`` array),
    ``bad_part`` (a part that is not an object, a 0.3 data part whose ``data`` is not an object, a
    1.0 part with two contents), ``too_many_parts``, ``too_many_mandates``, and every code of
    :func:`~mudrika.payments.models.receive` for a mandate that does not parse.
    """
    if isinstance(message, bytes | bytearray | str):
        message = loads_strict(message, max_bytes=max_bytes)
    if not isinstance(message, Mapping):
        raise InvalidInput("A2A message must be a JSON object", code="not_a_message")
    parts = message.get("parts")
    if not isinstance(parts, Sequence) or isinstance(parts, str | bytes):
        raise InvalidInput("A2A message has no parts array", code="not_a_message")
    if len(parts) > max_parts:
        raise InvalidInput(
            f"A2A message has more than {max_parts} parts", code="too_many_parts", limit=max_parts
        )

    intents: list[Received[IntentMandate]] = []
    carts: list[Received[CartMandate]] = []
    payments: list[Received[PaymentMandate]] = []
    unknown: list[str] = []
    count = 0
    for index, part in enumerate(parts):
        data = _data_of(part, index)
        if data is None:
            continue
        for key, value in data.items():
            if key == INTENT_MANDATE_KEY:
                intents.append(_parse(IntentMandate, value, key, index, max_bytes))
            elif key == CART_MANDATE_KEY:
                carts.append(_parse(CartMandate, value, key, index, max_bytes))
            elif key == PAYMENT_MANDATE_KEY:
                payments.append(_parse(PaymentMandate, value, key, index, max_bytes))
            else:
                if isinstance(key, str) and key.startswith("ap2.") and key not in unknown:
                    unknown.append(key)
                continue
            count += 1
            if count > max_mandates:
                raise InvalidInput(
                    f"A2A message carries more than {max_mandates} mandates",
                    code="too_many_mandates",
                    limit=max_mandates,
                )
    return ExtractedMandates(tuple(intents), tuple(carts), tuple(payments), tuple(unknown))


def _data_of(part: Any, index: int) -> Mapping[str, Any] | None:
    """The ``data`` object of a data part, ``None`` for a part that cannot hold mandates."""
    if not isinstance(part, Mapping):
        raise InvalidInput(f"part {index} is not an object", code="bad_part", part=index)
    if "kind" in part:
        # A2A 0.3: the discriminator decides; only data parts carry mandates.
        if part["kind"] != "data":
            return None
        data = part.get("data")
        if not isinstance(data, Mapping):
            raise InvalidInput(
                f"part {index} is a data part whose data is not an object", code="bad_part", part=index
            )
        return data
    # A2A 1.0: the content is a oneof; two contents in one part is a malformed part.
    present = [name for name in _A2A_1_CONTENT if name in part]
    if len(present) > 1:
        raise InvalidInput(
            f"part {index} has more than one content ({', '.join(present)})", code="bad_part", part=index
        )
    data = part.get("data")
    return data if isinstance(data, Mapping) else None


_M = TypeVar("_M", bound=Ap2Model)


def _parse(model: type[_M], value: Any, key: str, index: int, max_bytes: int) -> Received[_M]:
    """Receive one mandate; say which part and key it came from when it fails."""
    if not isinstance(value, Mapping):
        # Already-parsed JSON: a string here is a value, never JSON text to be parsed again.
        raise InvalidInput(
            f"{key} in part {index} is not a JSON object", code="not_an_object", part=index, key=key
        )
    try:
        return receive(model, value, max_bytes=max_bytes)
    except InvalidInput as exc:
        exc.fields.setdefault("part", index)
        exc.fields.setdefault("key", key)
        raise


_KEY_OF: dict[type[Any], str] = {
    IntentMandate: INTENT_MANDATE_KEY,
    CartMandate: CART_MANDATE_KEY,
    PaymentMandate: PAYMENT_MANDATE_KEY,
}


def wrap_mandates(
    *mandates: Received[Any],
    role: Literal["agent", "user"] = "agent",
    message_id: str | None = None,
    context_id: str | None = None,
    task_id: str | None = None,
    a2a_version: Literal["0.3", "1.0"] = "0.3",
) -> dict[str, Any]:
    """An A2A message with one DataPart per mandate, carrying each mandate's raw object unchanged.

    The raw objects (not model dumps) are sent, so the receiver's hashes equal ours.  ``message_id``
    defaults to a random UUID.  ``a2a_version="0.3"`` writes ``kind``-tagged parts and ``role``
    ``"agent"``/``"user"``; ``"1.0"`` writes protobuf-JSON parts (``mediaType``) and ``ROLE_AGENT``/
    ``ROLE_USER``.  Raises :class:`~mudrika.errors.InvalidInput` ``not_a_mandate`` for a Received
    that is not an Intent-, Cart- or PaymentMandate, and ``no_mandates`` when given none.
    """
    if not mandates:
        raise InvalidInput("wrap_mandates needs at least one mandate", code="no_mandates")
    parts: list[dict[str, Any]] = []
    for mandate in mandates:
        key = _KEY_OF.get(type(mandate.model))
        if key is None:
            raise InvalidInput(
                f"{type(mandate.model).__name__} is not an AP2 mandate",
                code="not_a_mandate",
                type=type(mandate.model).__name__,
            )
        data = {key: mandate.plain()}
        if a2a_version == "0.3":
            parts.append({"kind": "data", "data": data})
        else:
            parts.append({"data": data, "mediaType": "application/json"})
    message: dict[str, Any] = {
        "messageId": message_id if message_id is not None else str(uuid.uuid4()),
        "role": role if a2a_version == "0.3" else f"ROLE_{role.upper()}",
        "parts": parts,
    }
    if a2a_version == "0.3":
        message["kind"] = "message"
    if context_id is not None:
        message["contextId"] = context_id
    if task_id is not None:
        message["taskId"] = task_id
    return message
