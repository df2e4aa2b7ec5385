"""Single-use stores: replay protection for nonces and ``jti`` s in one process or across replicas.

:mod:`~mudrika.stores.replay` is the :class:`~mudrika.stores.replay.ReplayStore` protocol with its
memory, SQLite and Redis stores; :mod:`~mudrika.stores.nonces` issues HMAC-bound single-use nonces.
"""
