"""Read-only JSON containers: parsed JSON that can be read, hashed and sent, but never changed.

Why: a signature or hash binding is computed over the JSON object *as received* (every AP2 binding,
for instance, is such a hash — see ``mudrika.payments.models.Received``).  If any code could mutate that
object after it was received, a hash computed later would no longer describe what the peer sent.  So
the raw object is deep-copied once into these containers and can only be read afterwards.

They subclass ``dict`` and ``list`` (not ``MappingProxyType``/``tuple``) on purpose: ``json.dumps``
and ``isinstance(x, dict)`` checks keep working on them, and RFC 8785 canonicalisation
(:mod:`mudrika.crypto.jcs`) treats them exactly like ``dict``/``list`` on its fast path, so hashing a
received object needs no mutable copy.  Every
mutating method raises ``TypeError`` (a programming error, not bad input).  Pickling (a process pool
in dispute batches) and copying are supported.
"""

from __future__ import annotations

from typing import Any, Final, NoReturn, Self, SupportsIndex

from mudrika.errors import InvalidInput

__all__ = [
    "EncoderReadyDict",
    "EncoderReadyList",
    "FrozenJSONDict",
    "FrozenJSONList",
    "OrjsonReadyDict",
    "OrjsonReadyList",
    "freeze",
    "thaw",
]


def _read_only(name: str) -> NoReturn:
    raise TypeError(f"received JSON is read-only ({name}); use .plain() for a mutable copy")


class _SelfCopying:
    """``copy.copy`` and ``copy.deepcopy`` of a read-only container return the container itself:
    nothing can change either "copy", so sharing it is safe and costs nothing."""

    __slots__ = ()

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self


class FrozenJSONDict(_SelfCopying, dict[str, Any]):
    """A JSON object that cannot be changed after it was built."""

    __slots__ = ()

    def __setitem__(self, key: str, value: Any) -> NoReturn:
        _read_only("item assignment")

    def __delitem__(self, key: str) -> NoReturn:
        _read_only("item deletion")

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _read_only("|=")

    def clear(self) -> NoReturn:
        _read_only("clear")

    def pop(self, *args: Any, **kwargs: Any) -> NoReturn:
        _read_only("pop")

    def popitem(self) -> NoReturn:
        _read_only("popitem")

    def setdefault(self, *args: Any, **kwargs: Any) -> NoReturn:
        _read_only("setdefault")

    def update(self, *args: Any, **kwargs: Any) -> NoReturn:
        _read_only("update")

    def __reduce__(self) -> tuple[type[FrozenJSONDict], tuple[dict[str, Any]]]:
        return (FrozenJSONDict, (dict(self),))


class FrozenJSONList(_SelfCopying, list[Any]):
    """A JSON array that cannot be changed after it was built."""

    __slots__ = ()

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        _read_only("item assignment")

    def __delitem__(self, index: Any) -> NoReturn:
        _read_only("item deletion")

    def __iadd__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _read_only("+=")

    def __imul__(self, other: SupportsIndex) -> NoReturn:
        _read_only("*=")

    def append(self, value: Any) -> NoReturn:
        _read_only("append")

    def extend(self, values: Any) -> NoReturn:
        _read_only("extend")

    def insert(self, index: SupportsIndex, value: Any) -> NoReturn:
        _read_only("insert")

    def pop(self, index: SupportsIndex = -1) -> NoReturn:
        _read_only("pop")

    def remove(self, value: Any) -> NoReturn:
        _read_only("remove")

    def clear(self) -> NoReturn:
        _read_only("clear")

    def sort(self, *args: Any, **kwargs: Any) -> NoReturn:
        _read_only("sort")

    def reverse(self) -> NoReturn:
        _read_only("reverse")

    def __reduce__(self) -> tuple[type[FrozenJSONList], tuple[list[Any]]]:
        return (FrozenJSONList, (list(self),))


class EncoderReadyDict(FrozenJSONDict):
    """A read-only JSON object from a document the strict parser vouched for (module docstring)."""

    __slots__ = ()


class EncoderReadyList(FrozenJSONList):
    """A read-only JSON array from a document the strict parser vouched for (module docstring)."""

    __slots__ = ()


class OrjsonReadyDict(FrozenJSONDict):
    """A read-only JSON object from a document the strict parser vouched for *for orjson only*: it holds
    floats outside the shortest-form range, which orjson writes as RFC 8785 does except in a few
    magnitude bands.  ``patches`` names the members to replace before encoding: a float orjson
    misprints (in such a band, or integral), or a container with patches.  Made and read only by
    mudrika.crypto.jcs._serialize ("Orjson-ready values")."""

    __slots__ = ("patches",)

    patches: tuple[str, ...]


class OrjsonReadyList(FrozenJSONList):
    """The array counterpart of :class:`OrjsonReadyDict`; ``patches`` holds indexes."""

    __slots__ = ("patches",)

    patches: tuple[int, ...]


def freeze(value: Any, *, max_depth: int) -> Any:
    """Deep-copy a JSON value (already checked to be JSON) into read-only containers.

    ``max_depth`` counts containers like :func:`mudrika.crypto.jcs.loads_strict` does (the top-level
    container is depth 1); deeper input is ``InvalidInput(code="too_deep")``.
    """
    return _frozen(value, max_depth, FrozenJSONDict, FrozenJSONList)


def freeze_encoder_ready(value: Any, *, max_depth: int) -> Any:
    """:func:`freeze` into :class:`EncoderReadyDict`/:class:`EncoderReadyList`.

    For :mod:`mudrika.crypto.jcs` only, on a value its strict parser has just found encoder-ready:
    the type is the claim, and canonicalisation trusts it without looking.
    """
    return _frozen(value, max_depth, EncoderReadyDict, EncoderReadyList)


def _frozen(
    value: Any, max_depth: int, dict_type: type[FrozenJSONDict], list_type: type[FrozenJSONList]
) -> Any:
    """:func:`_freeze` from the top, a nesting the interpreter cannot follow refused like one past
    ``max_depth``: a caller may allow more levels than Python's recursion limit leaves room for (the
    strict parser maps the same RecursionError to the same code)."""
    try:
        return _freeze(value, 1, max_depth, dict_type, list_type)
    except RecursionError:
        raise InvalidInput(
            "JSON nested deeper than can be copied", code="too_deep", limit=max_depth
        ) from None


def _freeze(
    value: Any, depth: int, max_depth: int, dict_type: type[FrozenJSONDict], list_type: type[FrozenJSONList]
) -> Any:
    # A JSON scalar is kept as it is without a call: most members are scalars, and a call per member
    # was most of the copy's cost.
    if isinstance(value, dict):
        _check_depth(depth, max_depth)
        return dict_type(
            {
                key: item
                if type(item) in _SCALARS
                else _freeze(item, depth + 1, max_depth, dict_type, list_type)
                for key, item in value.items()
            }
        )
    if isinstance(value, list | tuple):
        _check_depth(depth, max_depth)
        return list_type(
            [
                item if type(item) in _SCALARS else _freeze(item, depth + 1, max_depth, dict_type, list_type)
                for item in value
            ]
        )
    return value


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _check_depth(depth: int, max_depth: int) -> None:
    if depth > max_depth:
        raise InvalidInput(f"JSON nested deeper than {max_depth} levels", code="too_deep", limit=max_depth)


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy (``dict``/``list``) of a frozen or plain JSON value."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value
