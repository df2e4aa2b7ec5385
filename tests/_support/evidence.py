"""Shared pieces of the AP2 mandate and evidence-bundle tests: the fixture chain builder, the fixture
bundle, and a guard that makes any network use fail the test."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from mudrika.payments.profile import PAYMENT_CREDENTIAL_VCT
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from tests._support.paths import FIXTURES

__all__ = ["BUNDLE", "NONCE", "TRUST_ROOT", "evidence_builder", "trust_root_for"]

BUNDLE = FIXTURES / "evidence" / "bundle.json"
"""The checked-in evidence bundle (its chain verifies at its evidence time)."""
TRUST_ROOT = FIXTURES / "evidence" / "trust-root.json"
"""The checked-in analyst trust root that pins the genuine issuer and merchant of :data:`BUNDLE`."""
NONCE = "kb-nonce-7d1e5b0c9a3f"
"""The processor's nonce for the fixture payment (the analyst's record, not the bundle's word)."""

_BUILDER_MODULE = "mudrika_evidence_builder"


def evidence_builder() -> ModuleType:
    """``fixtures/evidence/make_bundle.py`` loaded once per process (it is a script, not a package):
    it builds signed intent/cart/payment chains and the merchant's DID document."""
    if _BUILDER_MODULE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            _BUILDER_MODULE, FIXTURES / "evidence" / "make_bundle.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_BUILDER_MODULE] = module
        spec.loader.exec_module(module)
    return sys.modules[_BUILDER_MODULE]


def trust_root_for(
    *,
    issuers: Mapping[str, Mapping[str, Any]] | None = None,
    merchants: Mapping[str, Mapping[str, Any]] | None = None,
    **policy: Any,
) -> TrustRoot:
    """A trust root pinning ``issuers`` (iss → entry such as ``{"jwks": ...}``) and ``merchants``
    (DID → ``{"did_document": ...}``), accepting the profile's credential type; ``policy`` members
    (``leeway_seconds``, ``accept_legacy_unbound_intent`` …) are merged in."""
    document: dict[str, Any] = {
        "format": "mudrika.trust-root/v1",
        "issuers": dict(issuers or {}),
        "merchants": dict(merchants or {}),
        "accepted_vct": [PAYMENT_CREDENTIAL_VCT],
        **policy,
    }
    return parse_trust_root(document)
