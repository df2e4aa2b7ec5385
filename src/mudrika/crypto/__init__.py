"""The crypto floor: keys, key files, JOSE, canonical JSON and SD-JWT.

Every other wing stands on this one and it imports only :mod:`mudrika.errors`.  Public modules:
:mod:`~mudrika.crypto.keys` (key pairs, JWK, Multikey, thumbprints), :mod:`~mudrika.crypto.keystore`
(encrypted key files written safely), :mod:`~mudrika.crypto.jose` (the only JWS/JWT boundary: strict
parsing, algorithm allow-lists bound to the key), :mod:`~mudrika.crypto.jcs` (strict JSON and
RFC 8785 hashing), :mod:`~mudrika.crypto.frozenjson` (read-only JSON containers the strict parser
returns) and :mod:`~mudrika.crypto.sdjwt` (RFC 9901).  The encodings every wing shares are public
modules too: :mod:`~mudrika.crypto.b64url` (strict unpadded base64url),
:mod:`~mudrika.crypto.multibase` (base58btc, multicodec varints, Multikey) and
:mod:`~mudrika.crypto.compact` (the capped text of a compact serialisation).  Nothing is
re-exported here, so importing one concept never pays for the others.
"""
