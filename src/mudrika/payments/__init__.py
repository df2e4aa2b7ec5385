"""Payments: AP2 mandates signed, received strictly and verified as a chain, offline.

:mod:`~mudrika.payments.models` (AP2 v0.1 types that keep the raw JSON they arrived as),
:mod:`~mudrika.payments.profile` (what the profile signs: ``typ``, algorithms, lifetimes),
:mod:`~mudrika.payments.signing` (intent, cart, payment), :mod:`~mudrika.payments.chain` (the
verifier and its report), :mod:`~mudrika.payments.bundle` (evidence bundles) and
:mod:`~mudrika.payments.a2a` (mandates as A2A DataParts).  This wing never imports ``trust``.
"""
