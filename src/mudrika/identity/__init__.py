"""Identity: DIDs, DID documents, resolution, CSRs and provisioning an agent.

:mod:`~mudrika.identity.did` (DID and DID URL syntax), :mod:`~mudrika.identity.document` (DID Core
documents and ``key_for(url, purpose)``), :mod:`~mudrika.identity.methods` (did:key, did:jwk, did:web,
did:bindu), :mod:`~mudrika.identity.resolution` (the result and driver types every method shares),
:mod:`~mudrika.identity.resolver` (one resolver with a cache, snapshots and configured drivers),
:mod:`~mudrika.identity.csr` and :mod:`~mudrika.identity.provision`.  This wing never imports
``trust`` or ``payments``: an agent's identity does not depend on who judges it.
"""
