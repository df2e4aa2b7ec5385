"""Reading the JSON documents of the payments wing (evidence bundles, trust roots) from disk.

Why one place: every loader reads through :func:`mudrika.net.limits.read_capped` and turns a pydantic
:class:`~pydantic.ValidationError` into :class:`~mudrika.errors.InvalidInput` whose ``errors``
list gives the location and message of every violation but never the offending values.
"""

from __future__ import annotations

from typing import Annotated, TypeVar

from pydantic import AfterValidator, BaseModel, Field, ValidationError

from mudrika.errors import InvalidInput
from mudrika.payments._values import parse_timestamp

DocumentT = TypeVar("DocumentT", bound=BaseModel)


def validation_errors(exc: ValidationError, *, top_level: str = "") -> list[dict[str, str]]:
    """Location and message of each violation (``top_level`` stands for an empty location)."""
    return [
        {"loc": ".".join(str(part) for part in err["loc"]) or top_level, "msg": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False, include_context=False)
    ]


def validate_document(model_type: type[DocumentT], value: object, *, document: str, code: str) -> DocumentT:
    """``model_type.model_validate(value)``, a violation raised as :class:`InvalidInput` ``code``.

    The message names the first violation, ``malformed <document>: <loc>: <msg>``, followed by
    ``(and N more)`` when there are more; ``errors`` lists every violation.  An empty location
    reads ``(top level)`` in both.  The pydantic exception itself is dropped (``from None``) so no
    input value leaks through it.
    """
    try:
        return model_type.model_validate(value)
    except ValidationError as exc:
        errors = validation_errors(exc, top_level="(top level)")
        first = errors[0]
        message = f"malformed {document}: {first['loc']}: {first['msg']}"
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more)"
        raise InvalidInput(message, code=code, errors=errors) from None


def validate_bundle(model_type: type[DocumentT], value: object, *, bundle_format: str) -> DocumentT:
    """An evidence bundle of ``bundle_format`` from strictly parsed JSON: ``not_a_bundle`` when it
    declares another format (or none), ``bad_bundle`` listing every violation of its schema."""
    if not isinstance(value, dict) or value.get("format") != bundle_format:
        raise InvalidInput(f"not a {bundle_format} evidence bundle", code="not_a_bundle")
    return validate_document(model_type, value, document="evidence bundle", code="bad_bundle")


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
