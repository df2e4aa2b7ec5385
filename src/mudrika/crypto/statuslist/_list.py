"""The Status List itself: a packed array of 1, 2, 4 or 8-bit values, DEFLATE/ZLIB-compressed and
base64url-encoded (draft-ietf-oauth-status-list-20 §4.1 "Compressed Byte Array", §4.2 JSON form).

Why the bit arithmetic is spelt out once, here: the draft's own security section (§11.1) warns that
implementations "check the index on the wrong data or miscalculate the bit and byte index".  Index
``i`` lives in byte ``i * bits // 8``, at bit offset ``(i * bits) % 8`` counted from the least
significant bit; nothing else in mudrika computes a position.

Why decoding is capped and strict: ``lst`` arrives from a server we do not control.  A few kilobytes
of DEFLATE can inflate to gigabytes, so the decompressor is given an output limit and a list that
would exceed it is refused without ever being held in memory.  A ZLIB stream that does not end, or
that is followed by extra bytes, is refused too: two different ``lst`` values must not be able to
claim the same list.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterator, Mapping
from enum import IntEnum
from typing import Final

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.errors import InvalidInput

__all__ = [
    "ALLOWED_BITS",
    "DEFAULT_MAX_LIST_BYTES",
    "StatusList",
    "StatusType",
    "check_bits",
]

#: §4.1 step 1: the only widths a Status List may use.
ALLOWED_BITS: Final = frozenset({1, 2, 4, 8})
#: The largest *uncompressed* byte array we agree to hold: 4 MiB is 33.5 million 1-bit entries,
#: thirty-two times the draft's 2^20-entry test vectors.  Callers may lower or raise it.
DEFAULT_MAX_LIST_BYTES: Final = 4 * 1024 * 1024
#: ZLIB level 9: §4.1 step 4 recommends "the highest compression level available", and the draft's
#: test vectors are byte-for-byte what zlib produces at level 9.
_LEVEL: Final = 9


class StatusType(IntEnum):
    """The Status Type values registered by §7.1 (IANA "OAuth Status Types").

    ``0x03`` and ``0x0C``-``0x0F`` are application specific; every other value above ``0x02`` is
    reserved for future registration.  A list may still carry any value that fits its ``bits``:
    what a value *means* is the verifier's policy, not the decoder's.
    """

    VALID = 0x00
    INVALID = 0x01
    SUSPENDED = 0x02
    APPLICATION_SPECIFIC = 0x03


def check_bits(bits: object) -> int:
    """``bits`` if it is 1, 2, 4 or 8 (an int, not a bool), else InvalidInput ``bad_bits``."""
    if isinstance(bits, bool) or not isinstance(bits, int) or bits not in ALLOWED_BITS:
        raise InvalidInput("status list 'bits' must be 1, 2, 4 or 8", code="bad_bits")
    return bits


def _check_size(size: object) -> int:
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidInput("a status list holds at least one entry", code="bad_size")
    return size


class StatusList:
    """A mutable Status List of ``size`` entries of ``bits`` bits each, all ``VALID`` (0) at first.

    ``size`` is the number of entries the issuer manages.  The byte array is ``ceil(size * bits /
    8)`` bytes (§4.1 step 2); a list decoded from ``lst`` has no size of its own, so it holds every
    entry its bytes can (``len(bytes) * 8 // bits``).
    """

    __slots__ = ("_bits", "_data", "_mask", "_size")

    def __init__(self, size: int, bits: int, *, max_bytes: int = DEFAULT_MAX_LIST_BYTES) -> None:
        self._bits = check_bits(bits)
        self._mask = (1 << bits) - 1
        self._size = _check_size(size)
        length = -(-size * bits // 8)
        if length > max_bytes:
            raise InvalidInput("status list larger than allowed", code="too_large", limit=max_bytes)
        self._data = bytearray(length)

    # -- construction from the wire --------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes, bits: int, *, size: int | None = None) -> StatusList:
        """A list over the uncompressed byte array ``data`` (§4.1 steps 2-3).

        ``size`` (optional) is the number of managed entries; it must fit in ``data`` and may leave
        at most the unused tail of the last byte.
        """
        check_bits(bits)
        capacity = len(data) * 8 // bits
        if size is None:
            size = capacity
        _check_size(size)
        if size > capacity or -(-size * bits // 8) != len(data):
            raise InvalidInput("size does not match the byte array", code="bad_size", size=size)
        built = cls.__new__(cls)
        built._bits = bits
        built._mask = (1 << bits) - 1
        built._size = size
        built._data = bytearray(data)
        return built

    @classmethod
    def decode(
        cls,
        lst: object,
        bits: object,
        *,
        size: int | None = None,
        max_bytes: int = DEFAULT_MAX_LIST_BYTES,
    ) -> StatusList:
        """Decode the JSON form's ``lst`` (§4.2): strict base64url, then ZLIB (RFC 1950) inflated to
        at most ``max_bytes`` bytes, with nothing after the end of the stream.

        InvalidInput ``bad_lst`` for a value that is not such a stream, ``too_large`` past the cap,
        ``bad_bits`` for a width other than 1, 2, 4, 8.
        """
        width = check_bits(bits)
        if not isinstance(lst, str) or not lst:
            raise InvalidInput("status list 'lst' must be a non-empty string", code="bad_lst")
        # base64url of a ZLIB stream at most as long as the inflated cap (plus a small margin for
        # an incompressible list): anything longer cannot be a list we would accept.
        compressed = b64url_decode(lst, max_len=max_bytes * 2 + 1024)
        inflater = zlib.decompressobj(wbits=15)
        try:
            data = inflater.decompress(compressed, max_bytes + 1)
        except zlib.error:
            raise InvalidInput("status list 'lst' is not a ZLIB stream", code="bad_lst") from None
        if len(data) > max_bytes:
            raise InvalidInput("status list larger than allowed", code="too_large", limit=max_bytes)
        if not inflater.eof or inflater.unused_data or inflater.unconsumed_tail:
            raise InvalidInput("status list 'lst' is truncated or has trailing data", code="bad_lst")
        if not data:
            raise InvalidInput("status list is empty", code="bad_lst")
        return cls.from_bytes(data, width, size=size)

    @classmethod
    def from_json(cls, value: object, *, max_bytes: int = DEFAULT_MAX_LIST_BYTES) -> StatusList:
        """The ``status_list`` object of a Status List Token (§4.2: ``bits`` and ``lst`` required;
        ``aggregation_uri`` optional and not followed)."""
        if not isinstance(value, Mapping):
            raise InvalidInput("'status_list' must be a JSON object", code="bad_status_list")
        if "bits" not in value or "lst" not in value:
            raise InvalidInput("'status_list' needs 'bits' and 'lst'", code="bad_status_list")
        return cls.decode(value["lst"], value["bits"], max_bytes=max_bytes)

    # -- reading and writing entries --------------------------------------------------------------
    @property
    def bits(self) -> int:
        return self._bits

    @property
    def size(self) -> int:
        return self._size

    def __len__(self) -> int:
        return self._size

    def _place(self, index: object) -> tuple[int, int]:
        if isinstance(index, bool) or not isinstance(index, int):
            raise InvalidInput("a status list index is a non-negative integer", code="bad_index")
        if not 0 <= index < self._size:
            raise InvalidInput(
                "index outside the status list", code="index_out_of_range", index=index, size=self._size
            )
        position = index * self._bits
        return position // 8, position % 8  # §4.1 step 3: byte, then bit from the LSB

    def get(self, index: int) -> int:
        """The status value at ``index``; InvalidInput ``index_out_of_range`` past the end.

        The hot path of every status check: an exact ``int`` in range is read inline (§4.1 step 3:
        byte ``position >> 3``, bit ``position & 7`` from the LSB); anything else goes through
        :meth:`_place`, which refuses it with the precise error.
        """
        if type(index) is int and 0 <= index < self._size:
            position = index * self._bits
            return (self._data[position >> 3] >> (position & 7)) & self._mask
        byte, shift = self._place(index)
        return (self._data[byte] >> shift) & self._mask

    __getitem__ = get

    def set(self, index: int, value: int) -> None:
        """Set ``index`` to ``value`` (0 .. 2**bits - 1); InvalidInput ``bad_status_value`` otherwise."""
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << self._bits):
            raise InvalidInput(
                "status value does not fit the list's bits", code="bad_status_value", bits=self._bits
            )
        byte, shift = self._place(index)
        mask = ((1 << self._bits) - 1) << shift
        self._data[byte] = (self._data[byte] & ~mask & 0xFF) | (value << shift)

    __setitem__ = set

    def __iter__(self) -> Iterator[int]:
        for index in range(self._size):
            yield self.get(index)

    def counts(self) -> dict[int, int]:
        """How many entries hold each value (values that occur only), for summaries."""
        if self._bits == 8:
            return dict(sorted(Counter(self._data[: self._size]).items()))
        return dict(sorted(Counter(iter(self)).items()))

    # -- to the wire --------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The uncompressed byte array (§4.1 step 3)."""
        return bytes(self._data)

    def encode(self) -> str:
        """``lst``: base64url (no padding) of the ZLIB stream at level 9 (§4.1 step 4, §4.2)."""
        return b64url_encode(zlib.compress(bytes(self._data), _LEVEL))

    def to_json(self) -> dict[str, int | str]:
        """The JSON ``StatusList`` object (§4.2)."""
        return {"bits": self._bits, "lst": self.encode()}

    def copy(self) -> StatusList:
        return StatusList.from_bytes(bytes(self._data), self._bits, size=self._size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StatusList):
            return NotImplemented
        return (self._bits, self._size, self._data) == (other._bits, other._size, other._data)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"StatusList(size={self._size}, bits={self._bits})"
