"""What the chain verifier takes from the analyst's trust root, read once per root object.

Why a module of its own: :func:`~mudrika.payments.chain.verify_chain` and
:func:`~mudrika.payments.chain.verify_cart` both start from a trust root, and a root is immutable
once built, so its allow-list, leeway and maximum ages are read (and checked) once per root, not
once per mandate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from mudrika.errors import InvalidInput
from mudrika.payments.chain._common import DEFAULT_ALGORITHMS, check_leeway
from mudrika.payments.profile import KB_MAX_AGE, PAYMENT_CREDENTIAL_VCT
from mudrika.payments.trustroot import StatusRules, TrustRoot, UnsafeNoTrustRoot

__all__ = ["Trust"]


@dataclass(frozen=True, slots=True)
class Trust:
    """What the verifier takes from the trust root (or, unsafely, from the evidence's word)."""

    root: TrustRoot | None
    trusts_issuer: Callable[[str], bool]
    accepted_vct: Callable[[str], frozenset[str]]
    algorithms: frozenset[str]
    leeway: float
    kb_max_age: float
    intent_max_age: float | None
    accept_legacy: bool
    status: StatusRules
    """How a credential's status list is judged as of the purchase."""

    @classmethod
    def of(cls, trust_root: TrustRoot | UnsafeNoTrustRoot) -> Trust:
        if isinstance(trust_root, TrustRoot):
            # A root is immutable once built, so what the verifier takes from it is read once per
            # root object (kept in the entry, so that its id cannot be reused while remembered).
            remembered = _TRUST_OF_ROOT.get(id(trust_root))
            if remembered is not None and remembered.root is trust_root:
                return remembered
            ages = trust_root.max_age_seconds
            trust = cls(
                root=trust_root,
                trusts_issuer=trust_root.trusts_issuer,
                accepted_vct=trust_root.accepted_vct_of,
                algorithms=trust_root.algorithm_set,
                leeway=check_leeway(trust_root.leeway_seconds),
                kb_max_age=ages.key_binding,
                intent_max_age=ages.intent,
                accept_legacy=trust_root.accept_legacy_unbound_intent,
                status=trust_root.status_rules,
            )
            if len(_TRUST_OF_ROOT) >= _MAX_REMEMBERED_ROOTS:
                _TRUST_OF_ROOT.clear()
            _TRUST_OF_ROOT[id(trust_root)] = trust
            return trust
        if isinstance(trust_root, UnsafeNoTrustRoot):
            asserted = trust_root.asserted_issuers
            return cls(
                root=None,
                trusts_issuer=asserted.__contains__,
                accepted_vct=lambda _iss: frozenset({PAYMENT_CREDENTIAL_VCT}),
                algorithms=DEFAULT_ALGORITHMS,
                leeway=0.0,
                kb_max_age=KB_MAX_AGE,
                intent_max_age=None,
                accept_legacy=False,
                status=StatusRules(),
            )
        raise InvalidInput("trust_root must be a TrustRoot (or UnsafeNoTrustRoot)", code="bad_policy")


_TRUST_OF_ROOT: dict[int, Trust] = {}
_MAX_REMEMBERED_ROOTS: Final = 64
