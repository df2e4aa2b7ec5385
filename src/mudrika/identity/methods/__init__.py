"""DID method drivers implemented natively: one module per method.

Each module derives or fetches a DID document and exposes a driver with ``resolve(did)``; see
docs/architecture.md "Adding a DID method" for the contract a new method follows.
:mod:`~mudrika.identity.methods.single_key` is no method: it builds the one-key document that
did:bindu and provisioned did:web agents share (public, since provisioning builds it too).
"""
