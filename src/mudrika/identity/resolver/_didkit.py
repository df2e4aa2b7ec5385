"""didkit (spruceid, Rust via pyo3) as the driver for DID methods mudrika does not implement natively.

Why didkit: methods such as did:pkh are well covered there, and an independent implementation is a
useful cross-check.  Why lazily imported: didkit publishes wheels for CPython 3.10-3.12 only (the
project depends on it with an environment marker), so on 3.13+ it is simply absent and every method
that needs it answers ``methodNotSupported`` with a message that says why.

didkit may use the network for some methods (did:web, did:ion …), so the driver reports
``uses_network`` and an offline resolver never uses it.

Why every didkit call runs on a private event loop (:class:`_DidkitRunner`): didkit 0.3.3 is built
on pyo3-asyncio 0.18, which completes each awaitable from a tokio worker thread inside
``Python::with_gil`` by calling ``loop.call_soon_threadsafe``.  That call writes to the loop's
self-pipe and so *releases the GIL while the worker is still inside with_gil*.  The awaiting thread
can then see the result, return, and let the interpreter finalise before the worker takes the GIL
back.  CPython then ends the worker with ``pthread_exit``, and the unwind through Rust calls
``PyGILState_Release`` on a thread state that is not current (``Fatal Python error``, exit 134) or
drops Python objects without the GIL (exit 139).  The runner does not hand a result over until
the worker that completed it has detached from the interpreter (:func:`_settle`).  At exit it
cancels any call still in flight and stops the loop before finalisation starts.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Collection
from types import ModuleType
from typing import Final

from mudrika.crypto.jcs import loads_strict
from mudrika.errors import DocumentError, InvalidInput, ResolutionError
from mudrika.identity.did import DID
from mudrika.identity.document import DIDDocument
from mudrika.identity.resolution import ResolutionResult, result

__all__ = ["EGRESS_ONLY_METHODS", "DidkitDriver", "load_didkit"]

#: Methods whose fetches must go through the egress policy: didkit is never configured for them.
EGRESS_ONLY_METHODS: Final = frozenset({"web"})
_METHOD_NAME: Final = re.compile(r"[a-z0-9]{1,64}")

_MAX_DOCUMENT: Final = 1024 * 1024
# How long to wait for a tokio worker to leave the interpreter (it takes microseconds once it has
# the GIL) and for in-flight calls to wind down at exit.  Only a safety net against hanging.
_SETTLE_TIMEOUT: Final = 5.0
_SETTLE_POLL: Final = 0.0002
_log = logging.getLogger(__name__)
# didkit raises DIDKitException(<DID Resolution error code>); these are the codes we pass on as such,
# as DocumentError (the DID has no usable document: a deny).  Any other code is internalError (503).
_RESOLUTION_CODES: Final = frozenset(
    {"notFound", "methodNotSupported", "representationNotSupported", "invalidDidDocument"}
)


def load_didkit() -> ModuleType:
    """Import didkit or raise ``methodNotSupported`` explaining why it is missing."""
    try:
        import didkit
    except ImportError:
        raise DocumentError(
            "this DID method needs didkit, which is not installed (didkit ships wheels for Python "
            "3.10-3.12 only; use one of those to resolve methods mudrika does not implement natively)",
            code="methodNotSupported",
            reason="didkit_unavailable",
        ) from None
    module: ModuleType = didkit
    return module


class _TrackedFuture(asyncio.Future[object]):
    """The future didkit returns, remembering which foreign thread runs pyo3-asyncio's completion.

    Every pyo3-asyncio completion, normal or after a cancel, starts on a tokio worker with
    ``Python::with_gil`` and first calls ``future.cancelled()``.  Recording that caller lets
    :func:`_settle` wait until the worker has left the interpreter.
    """

    def __init__(self, *, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self.owner = threading.get_ident()  # the loop thread; its own calls are not the completion
        self.completer: int | None = None

    def cancelled(self) -> bool:
        ident = threading.get_ident()
        if ident != self.owner:
            self.completer = ident
        return super().cancelled()


class _DidkitLoop(asyncio.SelectorEventLoop):
    """The event loop didkit runs on; pyo3-asyncio creates didkit's futures with ``create_future``."""

    def create_future(self) -> _TrackedFuture:
        return _TrackedFuture(loop=self)


async def _settle(future: object) -> None:
    """Return once the tokio worker that completes ``future`` has no Python thread state left.

    ``PyGILState_Ensure`` gives the worker a thread state, and ``PyGILState_Release`` deletes it
    (while still holding the GIL) only after the worker's last use of the interpreter.
    ``sys._current_exceptions()`` lists every thread state, including such foreign ones, so once
    the worker's ident is gone from it, nothing that worker does can race interpreter finalisation.
    After a cancel, the worker's completion may not have begun yet, so wait for it to start first.
    """
    if not isinstance(future, _TrackedFuture):
        return
    deadline = time.monotonic() + _SETTLE_TIMEOUT
    while future.completer is None or future.completer in sys._current_exceptions():
        if time.monotonic() > deadline:
            _log.warning("didkit: a tokio worker did not leave the interpreter in time")
            return
        await asyncio.sleep(_SETTLE_POLL)  # releases the GIL so the worker can run


async def _run_settled(start: Callable[[], Awaitable[str]]) -> str:
    """Start a didkit call (on the running private loop), await it, return once it has settled."""
    future = start()
    try:
        return await future
    finally:
        await _settle(future)


async def _cancel_others() -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class _DidkitRunner:
    """One private event loop, on a daemon thread, for every didkit call in the process.

    A long-lived loop means didkit futures are never bound to a loop that ``asyncio.run`` has
    already closed.  Results go back to callers through ``concurrent.futures`` only after
    :func:`_settle`.  An ``atexit`` hook (which runs before finalisation) cancels calls still in
    flight, for example after Ctrl-C, and stops the loop.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: _DidkitLoop | None = None
        self._thread: threading.Thread | None = None

    def submit(self, start: Callable[[], Awaitable[str]]) -> concurrent.futures.Future[str]:
        """Run ``start()`` (which must create the didkit awaitable) on the private loop."""
        with self._lock:
            if self._loop is None:
                loop = _DidkitLoop()
                thread = threading.Thread(target=loop.run_forever, name="mudrika-didkit", daemon=True)
                thread.start()
                atexit.register(self._shutdown)
                self._loop, self._thread = loop, thread
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(_run_settled(start), loop)

    def _shutdown(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(_cancel_others(), loop).result(_SETTLE_TIMEOUT)
        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
            _log.warning("didkit: calls still in flight at exit")
        loop.call_soon_threadsafe(loop.stop)
        thread.join(_SETTLE_TIMEOUT)
        if not thread.is_alive():
            loop.close()


_RUNNER: Final = _DidkitRunner()


def _translate(exc: Exception, did: str) -> InvalidInput | DocumentError | ResolutionError:
    code = str(exc.args[0]) if exc.args else "internalError"
    if code == "invalidDid":
        return InvalidInput("didkit: invalid DID", code="invalidDid", reason="didkit")
    if code in _RESOLUTION_CODES:
        return DocumentError(f"didkit: {code}", code=code)
    _log.warning("didkit failed to resolve %s: %s", did[:128], code[:200])
    return ResolutionError("didkit could not resolve the DID", code="internalError")


def _to_result(raw: str) -> ResolutionResult:
    try:
        doc = DIDDocument.from_json(loads_strict(raw, max_bytes=_MAX_DOCUMENT))
    except InvalidInput as exc:
        raise DocumentError(
            "didkit returned an invalid DID document", code="invalidDidDocument", reason=exc.code
        ) from None
    return result(doc, driver="didkit")


class DidkitDriver:
    """Driver for the DID methods the configuration names (``methods``), resolved by ``didkit.resolve_did``.

    Why the methods are named and never implied: didkit dials out by itself, outside the egress
    policy, its timeouts and size caps (``did:onion`` contacts the local Tor proxy on 127.0.0.1:9050).
    A driver that took "every other method" would let whoever writes a ``kid`` choose what it dials;
    one that takes only the methods an operator listed lets nobody else choose.  did:web is refused:
    through didkit it would skip the egress policy altogether.

    Both :meth:`resolve` and :meth:`aresolve` run the call on the process-wide private loop
    (see the module docstring for why awaiting didkit on the caller's own loop can crash the
    interpreter at exit).
    """

    uses_network: Final = True

    def __init__(self, methods: Collection[str]) -> None:
        if isinstance(methods, str):
            raise InvalidInput("didkit methods must be a collection of method names", code="bad_config")
        named = frozenset(methods)
        if not named:
            raise InvalidInput("name the DID methods didkit may resolve", code="bad_config")
        bad = sorted(m for m in named if not isinstance(m, str) or not _METHOD_NAME.fullmatch(m))
        if bad:
            raise InvalidInput("not DID method names", code="bad_config", methods=str(bad)[:200])
        if named & EGRESS_ONLY_METHODS:
            raise InvalidInput(
                "did:web is fetched through the egress policy, never by didkit",
                code="bad_config",
                methods="web",
            )
        self.methods: frozenset[str] = named

    @staticmethod
    def _submit(did: DID) -> tuple[ModuleType, concurrent.futures.Future[str]]:
        didkit = load_didkit()
        text = str(did)
        return didkit, _RUNNER.submit(lambda: didkit.resolve_did(text, "{}"))

    async def aresolve(self, did: DID) -> ResolutionResult:
        didkit, pending = self._submit(did)
        try:
            raw = await asyncio.wrap_future(pending)
        except didkit.DIDKitException as exc:
            raise _translate(exc, str(did)) from None
        return _to_result(raw)

    def resolve(self, did: DID) -> ResolutionResult:
        """Block until resolved; safe from any thread, including one running an event loop."""
        didkit, pending = self._submit(did)
        try:
            raw = pending.result()
        except didkit.DIDKitException as exc:
            raise _translate(exc, str(did)) from None
        return _to_result(raw)
