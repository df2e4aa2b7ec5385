"""Reading the JSON documents of the payments wing (evidence bundles, trust roots) from disk.

Why one place: every loader must read at most ``max_bytes + 1`` bytes (so an oversized file is
refused without being read whole), wrap :class:`OSError` at the boundary, and turn a pydantic
:class:`~pydantic.ValidationError` into :class:`~mudrika.errors.InvalidInput` whose ``errors``
list gives the location and message of every violation but never the offending values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field, ValidationError

from mudrika.errors import InvalidInput
from mudrika.payments._values import parse_timestamp


def read_capped(path: str | Path, *, max_bytes: int, name: str, too_large: str) -> bytes:
    """The bytes of ``path``, refused with ``too_large`` as the message when over ``max_bytes``.

    ``name`` names the document in the ``unreadable`` message; the OS error's text is kept, its
    traceback is not.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InvalidInput(f"cannot read {name} {path}: {exc.strerror}", code="unreadable") from None
    if len(data) > max_bytes:
        raise InvalidInput(too_large, code="too_large", limit=max_bytes)
    return data


def validation_errors(exc: ValidationError, *, top_level: str = "") -> list[dict[str, str]]:
    """Location and message of each violation (``top_level`` stands for an empty location)."""
    return [
        {"loc": ".".join(str(part) for part in err["loc"]) or top_level, "msg": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False, include_context=False)
    ]


def _aware(value: str) -> str:
    # pydantic reports a ValueError as a located violation; our InvalidInput would escape it.
    try:
        parse_timestamp(value)
    except InvalidInput as exc:
        raise ValueError(exc.message) from None
    return value


#: A timestamp member of a loaded document: kept as written (so the JSON round-trips unchanged) but
#: refused at load time unless it parses and carries a UTC offset.
AwareTimestamp = Annotated[str, Field(max_length=64), AfterValidator(_aware)]
