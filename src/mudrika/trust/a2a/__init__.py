"""The A2A protocol surface the trust layer must know: method names, REST routes, operations.

:mod:`~mudrika.trust.a2a.methods` maps both JSON-RPC method generations (0.3 ``message/send`` and
1.0 ``SendMessage``) and the REST routes a2a-sdk mounts onto one operation vocabulary, so the
policy is written once per operation whatever binding a caller uses.

Every module here is imported by name and nothing is re-exported from this package, so importing
the method table (as the middleware does) pulls in nothing else.  The A2A 1.0 trust objects:
:mod:`~mudrika.trust.a2a.cards` (Agent Card signatures, §8.4), :mod:`~mudrika.trust.a2a.push`
(signed push notifications, §13.2),
:mod:`~mudrika.trust.a2a.artifacts` (signatures over artifact and message parts) and
:mod:`~mudrika.trust.a2a.task_states` (policy decisions as A2A task states).
"""
