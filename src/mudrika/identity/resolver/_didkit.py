"""didkit (spruceid, Rust via pyo3) as the driver for DID methods mudrika does not implement natively.

Why didkit: methods such as did:pkh are well covered there, and an independent implementation is a
useful cross-check.  Why lazily imported: didkit publishes wheels for CPython 3.10-3.12 only (the
project depends on it with an environment marker), so on 3.13+ it is simply absent and every method
that needs it answers ``methodNotSupported`` with a message that says why.

didkit may use the network for some methods (did:web, did:ion …), so the driver reports
``uses_network`` and an offline resolver never uses it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from types import ModuleType
from typing import Final

from mudrika.crypto.jcs import loads_strict
from mudrika.errors import InvalidInput, ResolutionError
from mudrika.identity.did import DID
from mudrika.identity.document import DIDDocument
from mudrika.identity.resolution import ResolutionResult, result

__all__ = ["DidkitDriver", "load_didkit"]

_MAX_DOCUMENT: Final = 1024 * 1024
_log = logging.getLogger(__name__)
# didkit raises DIDKitException(<DID Resolution error code>); these are the codes we pass on as such.
_RESOLUTION_CODES: Final = frozenset({"notFound", "methodNotSupported", "representationNotSupported"})


def load_didkit() -> ModuleType:
    """Import didkit or raise ``methodNotSupported`` explaining why it is missing."""
    try:
        import didkit
    except ImportError:
        raise ResolutionError(
            "this DID method needs didkit, which is not installed (didkit ships wheels for Python "
            "3.10-3.12 only; use one of those to resolve methods mudrika does not implement natively)",
            code="methodNotSupported",
            reason="didkit_unavailable",
        ) from None
    module: ModuleType = didkit
    return module


class DidkitDriver:
    """Fallback driver: any method not registered natively is handed to ``didkit.resolve_did``."""

    @property
    def methods(self) -> frozenset[str]:
        return frozenset()

    @property
    def uses_network(self) -> bool:
        return True

    async def aresolve(self, did: DID) -> ResolutionResult:
        didkit = load_didkit()
        text = str(did)
        try:
            raw = await didkit.resolve_did(text, "{}")
        except didkit.DIDKitException as exc:
            code = str(exc.args[0]) if exc.args else "internalError"
            if code == "invalidDid":
                raise InvalidInput("didkit: invalid DID", code="invalidDid", reason="didkit") from None
            if code in _RESOLUTION_CODES:
                raise ResolutionError(f"didkit: {code}", code=code) from None
            _log.warning("didkit failed to resolve %s: %s", text[:128], code[:200])
            raise ResolutionError("didkit could not resolve the DID", code="internalError") from None
        try:
            doc = DIDDocument.from_json(loads_strict(raw, max_bytes=_MAX_DOCUMENT))
        except InvalidInput as exc:
            raise ResolutionError(
                "didkit returned an invalid DID document", code="invalidDidDocument", reason=exc.code
            ) from None
        return result(doc, driver="didkit")

    def resolve(self, did: DID) -> ResolutionResult:
        """Run :meth:`aresolve` to completion; from inside a running event loop, on a helper thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.aresolve(did))
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.aresolve(did)).result()
