"""The contents a signer hashes, taken from whatever form the caller holds them in.

Why one place: the cart and payment signers both accept their contents as a :class:`Received`
(hashed exactly as it arrived), as a model (sent as ``to_wire()``), or as already-parsed JSON
(received strictly first).  Each form must end up as the raw object that goes on the wire, or the
receiver's hash would differ from the signed one; one function keeps the two signers from drifting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from mudrika.errors import InvalidInput
from mudrika.payments.models import Ap2Model, Received, outgoing, receive

__all__ = ["contents_to_sign"]

ContentsT = TypeVar("ContentsT", bound=Ap2Model)


def contents_to_sign(
    model_type: type[ContentsT],
    contents: Received[ContentsT] | ContentsT | Mapping[str, Any],
    *,
    message: str,
    code: str,
) -> Received[ContentsT]:
    """``contents`` as a :class:`Received` of ``model_type``; ``InvalidInput(message, code)`` otherwise.

    A model of another type is not converted: it is refused by :func:`receive` as not being a JSON
    object, and a :class:`Received` of another type with ``message`` and ``code``.
    """
    if isinstance(contents, Received):
        received = contents
    elif isinstance(contents, model_type):
        received = outgoing(contents)
    else:
        # mypy cannot narrow a type variable by isinstance; what is left is meant to be a mapping,
        # and receive() refuses anything else as not a JSON object.
        received = receive(model_type, cast("Mapping[str, Any]", contents))
    if not isinstance(received.model, model_type):
        raise InvalidInput(message, code=code)
    return received
