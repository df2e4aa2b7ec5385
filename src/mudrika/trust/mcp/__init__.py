"""The MCP protocol surface the trust layer must know: its methods, the operations a policy names.

:mod:`~mudrika.trust.mcp.methods` maps each MCP JSON-RPC call (``tools/call`` of a named tool,
``resources/read``, ``notifications/…``) to the operation the policy file decides, so MCP servers are
guarded by the same file, roles and trust levels as A2A agents.  :mod:`~mudrika.trust.mcp.sdk` hands
mudrika's verified principal to the MCP SDK (``get_access_token()`` in a tool) and adapts
:class:`~mudrika.trust.keycloak.AccessTokenVerifier` to the SDK's own ``TokenVerifier`` interface.

Modules are imported by name and nothing is re-exported here, so the middleware's method table pulls
in neither the MCP SDK nor anything else.
"""
