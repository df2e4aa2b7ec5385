"""Trust: who may call an agent, decided per request.

:mod:`~mudrika.trust.levels` and :mod:`~mudrika.trust.models` (trust levels, Keycloak roles),
:mod:`~mudrika.trust.policy` (the compiled operation policy), :mod:`~mudrika.trust.keycloak`
(access tokens, JWKS, adapters), :mod:`~mudrika.trust.httpsig` (RFC 9421 DID-signed requests),
:mod:`~mudrika.trust.middleware` (the pure-ASGI middleware), :mod:`~mudrika.trust.a2a` (the A2A
method and route vocabulary) and :mod:`~mudrika.trust.jsonrpc` (the JSON-RPC error codes).
This wing never imports ``payments``: offline dispute verification must not pull in the middleware.
"""
