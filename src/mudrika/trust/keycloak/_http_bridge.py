"""Route python-keycloak's synchronous ``requests`` traffic through an ``httpx.Client``.

Why: python-keycloak 7 sends its synchronous calls with a private ``requests.Session`` (``_s``) and
its asynchronous ones with an ``httpx.AsyncClient`` (``async_s``).  The project uses httpx for HTTP
(one TLS configuration, one timeout policy) and tests reach in-process ASGI apps through httpx
transports.  ``requests`` lets a session mount a transport adapter per URL prefix, so mounting this
adapter for ``http://`` and ``https://`` hands every prepared request to the httpx client we chose;
the async side is swapped by assigning ``async_s``.  TLS verification, proxies and timeouts are
therefore those of the httpx client, never the per-call ``verify``/``cert`` python-keycloak passes.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx
import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

__all__ = ["HttpxAdapter", "install_transports"]


class HttpxAdapter(BaseAdapter):
    """A ``requests`` transport adapter that sends through a caller-owned ``httpx.Client``."""

    def __init__(self, client: httpx.Client) -> None:
        super().__init__()
        self._client = client

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: float | tuple[float, float] | tuple[float, None] | None = None,
        verify: bool | str = True,
        cert: bytes | str | tuple[bytes | str, bytes | str] | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        body = request.body
        content = body.encode("utf-8") if isinstance(body, str) else body
        if content is not None and not isinstance(content, bytes):
            # python-keycloak only sends form/JSON bodies; a streamed body would be a programming error.
            raise requests.exceptions.InvalidHeader("streamed request bodies are not supported")
        try:
            reply = self._client.request(
                request.method or "GET",
                request.url or "",
                headers=dict(request.headers),
                content=content,
            )
        except httpx.TimeoutException as exc:
            raise requests.exceptions.Timeout(str(exc), request=request) from exc
        except httpx.HTTPError as exc:
            raise requests.exceptions.ConnectionError(str(exc), request=request) from exc
        response = requests.Response()
        response.status_code = reply.status_code
        response.headers = CaseInsensitiveDict(reply.headers.items())
        response._content = reply.content
        response.encoding = reply.encoding
        response.reason = reply.reason_phrase
        response.url = str(reply.url)
        response.request = request
        return response

    def close(self) -> None:
        """The httpx client belongs to the caller, who closes it."""


def install_transports(
    connection: object, client: httpx.Client | None, async_client: httpx.AsyncClient | None
) -> None:
    """Point a python-keycloak ``ConnectionManager`` at our httpx clients (sync and async)."""
    if client is not None:
        session = connection._s  # type: ignore[attr-defined]
        adapter = HttpxAdapter(client)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
    if async_client is not None:
        connection.async_s = async_client  # type: ignore[attr-defined]
