"""ECMAScript ``Number::toString`` for finite doubles, as RFC 8785 §3.2.2.3 requires.

Why a private module: the algorithm is the one piece of RFC 8785 that Python's ``json`` gets wrong
(``repr`` switches to exponent form at 1e16 and below 1e-4, writes ``1e-07`` and ``120.0``), so it is
written out once here, step by step as ECMA-262 (6th edition, §7.1.12.1) numbers the steps.

The digit string comes from ``repr(float)``: since Python 3.1 it is the *shortest* decimal string that
reads back to the same double, choosing the closest such string when several are equally short.  That is
exactly the ``s``/``k`` of step 5 (the "k is as small as possible" rule with the note's tie-break), so
only the placement of the decimal point and the exponent notation has to be redone.
"""

from __future__ import annotations

import math

__all__ = ["es_number_from_shortest", "es_number_to_string"]


def es_number_to_string(x: float) -> str:
    """Serialise the finite double ``x`` exactly as ECMAScript ``String(x)`` does.

    Raises ``ValueError`` for NaN and the infinities, which JSON (and so RFC 8785) cannot express;
    callers turn that into ``InvalidInput`` with their own code.
    """
    # Step 1 (NaN) and step 4 (+Infinity); RFC 8785 §3.2.2.3 makes both errors instead of strings.
    if not math.isfinite(x):
        raise ValueError("NaN and Infinity have no JSON representation")
    # Step 2: +0 and -0 both become "0".
    if x == 0.0:
        return "0"
    return es_number_from_shortest(repr(x))


def es_number_from_shortest(text: str) -> str:
    """ECMAScript's text of the non-zero finite number written as ``text``, the shortest decimal digits
    that read back to its double, in any layout (``repr``'s, or a compiled encoder's such as orjson's).

    Why apart from :func:`es_number_to_string`: formatting a double (``repr``) is most of that
    function's cost; a caller holding many numbers already formatted by a compiled encoder
    (mudrika.crypto.jcs._serialize, "Orjson-ready values") only needs the layout redone.
    """
    # Step 3: negative numbers are "-" followed by the string of the magnitude.
    if text[0] == "-":
        return "-" + es_number_from_shortest(text[1:])
    # Step 5: integers n, k, s with k >= 1, 10^(k-1) <= s < 10^k, s * 10^(n-k) == x, k minimal.
    mantissa, _, exponent = text.lower().partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    all_digits = (int_part + frac_part).lstrip("0")
    digits = all_digits.rstrip("0")  # s, without the zeros that repr pads (e.g. "120.0" -> "12")
    k = len(digits)
    # The text's value is int(all_digits) * 10^(exponent - len(frac_part)); s * 10^(n-k) is the same
    # number, and int(all_digits) == s * 10^(len(all_digits) - k), hence:
    n = len(all_digits) + (int(exponent) if exponent else 0) - len(frac_part)
    # Step 6: k <= n <= 21: the k digits of s followed by n-k zeros.
    if k <= n <= 21:
        return digits + "0" * (n - k)
    # Step 7: 0 < n <= 21: the first n digits, a ".", then the remaining k-n digits.
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    # Step 8: -6 < n <= 0: "0.", then -n zeros, then the k digits.
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    # Steps 9 and 10: exponent form; the exponent n-1 is always written with its sign ("e+21", "e-7").
    exp = n - 1
    sign = "+" if exp > 0 else "-"
    # Step 9: a single digit has no ".".
    if k == 1:
        return f"{digits}e{sign}{abs(exp)}"
    # Step 10: first digit, ".", the remaining k-1 digits, then the exponent.
    return f"{digits[0]}.{digits[1:]}e{sign}{abs(exp)}"
