"""``mudrika dev issuer|token``: a Keycloak-shaped OpenID issuer on 127.0.0.1, for development only.

Why: a server protected by :func:`~mudrika.trust.middleware.protect` accepts Keycloak access tokens,
and a developer without a Keycloak realm had nothing to run to get one.  ``mudrika dev issuer`` is
that one command: it serves OpenID discovery and the JWKS at Keycloak's paths
(``/realms/<realm>/.well-known/openid-configuration``, ``/realms/<realm>/protocol/openid-connect/certs``)
and a ``client_credentials`` token endpoint (``…/protocol/openid-connect/token``), so
``protect(app, realm=<issuer URL>, audience=...)`` accepts its tokens unchanged, exactly as it will
accept the realm's in production.  ``mudrika dev token`` mints a token from the same key without any
server, for ``curl`` or a test.

Tokens are shaped like Keycloak's service-account access tokens (header ``typ: JWT``, RS256, ``kid``;
claims ``iss``, ``aud``, ``azp``, ``sub``, ``typ: Bearer``, ``realm_access.roles``, ``scope``,
``exp``, ``iat``, ``jti``), with the roles, audiences and scopes the developer chose.

What keeps it a development tool: it binds 127.0.0.1 and refuses any other address (its token
endpoint hands tokens to whoever knows a client secret given on the command line); the signing key
is an unencrypted RSA key, mode 0600 in a 0700 directory the user names (reused on the next start, so
tokens survive a restart), and is never printed; the issuer URL is plain http, which
:func:`~mudrika.trust.middleware.protect` allows for loopback realms only.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import re
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, unquote_plus

import click

from mudrika.cli._common import EXIT_OK, emit_json, err, json_option, read_json_file

if TYPE_CHECKING:
    from mudrika.crypto.keys import KeyPair

__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_REALM",
    "ISSUER_FILE",
    "ISSUER_KEY_FILE",
    "LOOPBACK",
    "DevIssuer",
    "TokenShape",
    "dev_group",
    "issuer_server",
]

#: The only address the development issuer listens on.
LOOPBACK: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8180
DEFAULT_REALM: Final = "dev"
#: The signing key (RSA, PKCS#8 PEM, unencrypted, mode 0600) in the issuer directory.
ISSUER_KEY_FILE: Final = "issuer-key.pem"
#: Where the running issuer says where it is (issuer URL, endpoints, kid): read by ``dev token``.
ISSUER_FILE: Final = "issuer.json"
OIDC_PATH: Final = "/protocol/openid-connect"
DISCOVERY_PATH: Final = "/.well-known/openid-configuration"
_ALGORITHM: Final = "RS256"
_REALM_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_MAX_FORM_BYTES = 16 * 1024
_MAX_LIFETIME = 24 * 3600


@dataclass(frozen=True, slots=True)
class TokenShape:
    """What a minted token grants: realm roles, audiences (none: no ``aud``, as a Keycloak realm
    without an audience mapper), scopes, and its lifetime in seconds."""

    roles: tuple[str, ...] = ()
    audiences: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    lifetime: int = 300


class DevIssuer:
    """The issuer's key and URL: JWKS, discovery document and access tokens."""

    def __init__(self, key: KeyPair, issuer: str) -> None:
        self._key = key
        self.issuer = issuer.rstrip("/")
        self.kid = key.public_key.thumbprint()

    def __repr__(self) -> str:
        return f"DevIssuer(issuer={self.issuer!r}, kid={self.kid!r})"

    @staticmethod
    def load_key(directory: Path) -> KeyPair:
        """The issuer key kept in ``directory`` (created 0700), generated on first use.

        An existing key file is read with the keystore's checks (regular file, mode 0600); a key
        that is not RSA is refused, since Keycloak realms and :func:`protect` default to RS256.
        """
        from mudrika.crypto.keys import KeyPair, KeyType
        from mudrika.crypto.keystore import ensure_private_dir, load_private_key, write_file_atomic
        from mudrika.errors import KeyStoreError

        ensure_private_dir(directory)
        path = directory / ISSUER_KEY_FILE
        if not path.exists():
            pair = KeyPair.generate(KeyType.RSA)
            try:
                write_file_atomic(path, pair.private_pem_unencrypted())
                return pair
            except KeyStoreError as exc:
                if exc.code != "exists":  # another start created it meanwhile: use that one
                    raise
        pair = load_private_key(path, None)
        if pair.key_type is not KeyType.RSA:
            raise KeyStoreError(f"{path} is not an RSA key", code="wrong_key_type")
        return pair

    @property
    def jwks_uri(self) -> str:
        return self.issuer + OIDC_PATH + "/certs"

    @property
    def token_endpoint(self) -> str:
        return self.issuer + OIDC_PATH + "/token"

    def jwks(self) -> dict[str, Any]:
        """The public key set, as Keycloak's ``certs`` endpoint publishes it."""
        jwk = {**self._key.public_key.to_jwk(), "kid": self.kid, "alg": _ALGORITHM, "use": "sig"}
        return {"keys": [jwk]}

    def discovery(self) -> dict[str, Any]:
        """The OpenID discovery document: only what this issuer serves."""
        return {
            "issuer": self.issuer,
            "jwks_uri": self.jwks_uri,
            "token_endpoint": self.token_endpoint,
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "id_token_signing_alg_values_supported": [_ALGORITHM],
            "subject_types_supported": ["public"],
            "response_types_supported": ["token"],
        }

    def description(self) -> dict[str, Any]:
        """Where this issuer is, for ``issuer.json`` and ``--json``."""
        return {
            "issuer": self.issuer,
            "discovery": self.issuer + DISCOVERY_PATH,
            "jwks_uri": self.jwks_uri,
            "token_endpoint": self.token_endpoint,
            "kid": self.kid,
        }

    def claims(self, client_id: str, shape: TokenShape, *, now: int | None = None) -> dict[str, Any]:
        """The claims of a service-account access token for ``client_id``, as Keycloak writes them."""
        issued = int(time.time()) if now is None else now
        claims: dict[str, Any] = {
            "exp": issued + shape.lifetime,
            "iat": issued,
            "jti": str(uuid.uuid4()),
            "iss": self.issuer,
        }
        if shape.audiences:
            claims["aud"] = shape.audiences[0] if len(shape.audiences) == 1 else list(shape.audiences)
        claims |= {
            # Keycloak's service-account user has a stable id per client; so does this one.
            "sub": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.issuer}/clients/{client_id}")),
            "typ": "Bearer",
            "azp": client_id,
            "realm_access": {"roles": list(shape.roles)},
            "scope": " ".join(shape.scopes),
            "clientId": client_id,
            "preferred_username": f"service-account-{client_id}",
        }
        return claims

    def sign(self, claims: Mapping[str, Any]) -> str:
        """``claims`` as a signed access token (compact JWS, RS256, ``kid`` = the key's thumbprint)."""
        from mudrika.crypto.jose import sign_jwt

        return sign_jwt(claims, self._key, alg=_ALGORITHM, kid=self.kid)

    def mint(self, client_id: str, shape: TokenShape, *, now: int | None = None) -> str:
        """A signed access token for ``client_id`` granting ``shape``."""
        return self.sign(self.claims(client_id, shape, now=now))


def _check_realm(realm: str) -> str:
    from mudrika.errors import InvalidInput

    if _REALM_NAME.fullmatch(realm) is None:
        raise InvalidInput("a realm name is 1-64 of A-Z a-z 0-9 . _ -", code="bad_realm", option="--realm")
    return realm


def _check_host(host: str) -> str:
    from mudrika.errors import InvalidInput

    if host != LOOPBACK:
        raise InvalidInput(
            f"the development issuer binds {LOOPBACK} only", code="not_loopback", option="--host"
        )
    return host


class _Handler(BaseHTTPRequestHandler):
    """Discovery, JWKS and the client_credentials token endpoint of one :class:`DevIssuer`."""

    server: _IssuerServer
    server_version = "mudrika-dev-issuer"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Silence: a token request's form is not logged anywhere."""

    def _send(self, status: int, document: Mapping[str, Any], headers: Mapping[str, str] = {}) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, error: str, description: str, headers: Mapping[str, str] = {}) -> None:
        self._send(status, {"error": error, "error_description": description}, headers)

    def do_GET(self) -> None:
        issuer = self.server.issuer
        prefix = self.server.realm_path
        if self.path == prefix + DISCOVERY_PATH:
            self._send(200, issuer.discovery())
        elif self.path == prefix + OIDC_PATH + "/certs":
            self._send(200, issuer.jwks())
        else:
            self._error(404, "not_found", "no such endpoint")

    def do_POST(self) -> None:
        if self.path != self.server.realm_path + OIDC_PATH + "/token":
            self._error(404, "not_found", "no such endpoint")
            return
        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or int(length) > _MAX_FORM_BYTES:
            self._error(400, "invalid_request", "a form body with Content-Length is required")
            return
        try:
            form = {
                name: values[0]
                for name, values in parse_qs(
                    self.rfile.read(int(length)).decode("utf-8"), strict_parsing=False
                ).items()
            }
        except UnicodeDecodeError:
            self._error(400, "invalid_request", "the form is not UTF-8")
            return
        if form.get("grant_type") != "client_credentials":
            self._error(400, "unsupported_grant_type", "only client_credentials is served")
            return
        client_id = self._authenticated_client(form)
        if client_id is None:
            self._error(
                401,
                "invalid_client",
                "unknown client or wrong secret",
                {"WWW-Authenticate": 'Basic realm="dev"'},
            )
            return
        shape = self.server.shape
        requested = tuple(form.get("scope", "").split())
        if requested:
            if not set(requested) <= set(shape.scopes):
                self._error(400, "invalid_scope", "a requested scope was not granted with --scope")
                return
            shape = TokenShape(shape.roles, shape.audiences, requested, shape.lifetime)
        token = self.server.issuer.mint(client_id, shape)
        self._send(
            200,
            {
                "access_token": token,
                "expires_in": shape.lifetime,
                "token_type": "Bearer",
                "scope": " ".join(shape.scopes),
                "not-before-policy": 0,
            },
        )

    def _authenticated_client(self, form: Mapping[str, str]) -> str | None:
        """The client the request authenticates as (HTTP Basic or form post, RFC 6749 §2.3.1), or None."""
        authorization = self.headers.get("Authorization", "")
        if authorization[:6].lower() == "basic ":
            try:
                decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                return None
            client_id, sep, secret = decoded.partition(":")
            if not sep:
                return None
            client_id, secret = unquote_plus(client_id), unquote_plus(secret)
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        expected = self.server.clients.get(client_id)
        if expected is None or not hmac.compare_digest(expected.encode(), secret.encode()):
            return None
        return client_id


class _IssuerServer(ThreadingHTTPServer):
    daemon_threads = True
    issuer: DevIssuer
    realm_path: str
    shape: TokenShape
    clients: Mapping[str, str]


def issuer_server(
    key: KeyPair,
    *,
    realm: str = DEFAULT_REALM,
    port: int = DEFAULT_PORT,
    shape: TokenShape = TokenShape(),
    clients: Mapping[str, str] | None = None,
) -> _IssuerServer:
    """Bind the development issuer to ``127.0.0.1:port`` (0: a free port) and return the server,
    not yet serving (call ``serve_forever``).  Its issuer URL is ``server.issuer.issuer``; the token
    endpoint issues ``shape`` to each of ``clients`` (client id -> secret) that authenticates."""
    _check_realm(realm)
    server = _IssuerServer((LOOPBACK, port), _Handler)
    bound = server.server_address[1]
    server.realm_path = f"/realms/{realm}"
    server.issuer = DevIssuer(key, f"http://{LOOPBACK}:{bound}{server.realm_path}")
    server.shape = shape
    server.clients = dict(clients or {})
    return server


def _clients(values: Sequence[str]) -> dict[str, str]:
    from mudrika.errors import InvalidInput

    clients: dict[str, str] = {}
    for value in values:
        client_id, sep, secret = value.partition(":")
        if not sep or not client_id or not secret:
            raise InvalidInput("--client is ID:SECRET", code="bad_client", option="--client")
        clients[client_id] = secret
    return clients


def _shape_options(func: Any) -> Any:
    for decorator in reversed(
        (
            click.option(
                "--role", "roles", multiple=True, help="A realm role the token carries (repeatable)."
            ),
            click.option("--aud", "audiences", multiple=True, help="An audience (repeatable; none: no aud)."),
            click.option("--scope", "scopes", multiple=True, help="A scope the token carries (repeatable)."),
            click.option(
                "--lifetime",
                type=click.IntRange(1, _MAX_LIFETIME),
                default=300,
                show_default=True,
                help="Token lifetime in seconds.",
            ),
        )
    ):
        func = decorator(func)
    return func


_ISSUER_DIR = click.option(
    "--issuer-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help=f"The issuer's directory: {ISSUER_KEY_FILE} (created 0600 on first use) and {ISSUER_FILE}.",
)


@click.group(name="dev")
def dev_group() -> None:
    """Develop without Keycloak: a local OpenID issuer on 127.0.0.1 and tokens with chosen roles."""


@dev_group.command(name="issuer")
@_ISSUER_DIR
@click.option("--realm", default=DEFAULT_REALM, show_default=True, help="Realm name in the issuer URL.")
@click.option("--host", default=LOOPBACK, show_default=True, help=f"Address to bind: {LOOPBACK} only.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True, help="0: any free port."
)
@click.option(
    "--client", "clients", multiple=True, help="A client of the token endpoint, ID:SECRET (repeatable)."
)
@_shape_options
@json_option("where the issuer listens (once bound)")
def issuer_command(
    issuer_dir: Path,
    realm: str,
    host: str,
    port: int,
    clients: tuple[str, ...],
    roles: tuple[str, ...],
    audiences: tuple[str, ...],
    scopes: tuple[str, ...],
    lifetime: int,
    as_json: bool,
) -> int:
    """Serve a Keycloak-shaped OpenID issuer (discovery, JWKS, client_credentials) until interrupted."""
    from mudrika.crypto.keystore import write_file_atomic

    _check_host(host)
    _check_realm(realm)
    registered = _clients(clients)
    key = DevIssuer.load_key(issuer_dir)
    server = issuer_server(
        key,
        realm=realm,
        port=port,
        shape=TokenShape(roles, audiences, scopes, lifetime),
        clients=registered,
    )
    with server:
        description = server.issuer.description()
        write_file_atomic(issuer_dir / ISSUER_FILE, json.dumps(description, indent=2).encode(), force=True)
        err(f"development issuer {description['issuer']} (loopback only; not for production)")
        err(f"  protect(app, realm={description['issuer']!r}, audience=...)")
        if not registered:
            err("  no --client given: the token endpoint refuses every request; use `mudrika dev token`")
        if as_json:
            emit_json(description)
        sys.stdout.flush()  # a script waiting for the JSON document gets it now
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            err("stopped")
    return EXIT_OK


@dev_group.command(name="token")
@_ISSUER_DIR
@click.option(
    "--client-id", default="dev-client", show_default=True, help="The token's azp (and its subject)."
)
@_shape_options
@json_option("the token and its claims")
def token_command(
    issuer_dir: Path,
    client_id: str,
    roles: tuple[str, ...],
    audiences: tuple[str, ...],
    scopes: tuple[str, ...],
    lifetime: int,
    as_json: bool,
) -> int:
    """Print an access token of the issuer in --issuer-dir (run `mudrika dev issuer` there once first)."""
    from mudrika.crypto.keys import KeyType
    from mudrika.crypto.keystore import load_private_key
    from mudrika.errors import InvalidInput, KeyStoreError

    described = issuer_dir / ISSUER_FILE
    if not described.is_file():
        raise KeyStoreError(
            f"no {described}: start `mudrika dev issuer --issuer-dir {issuer_dir}` once first",
            code="no_issuer",
        )
    description = read_json_file(described, max_bytes=64 * 1024)
    if not isinstance(description, dict) or not isinstance(description.get("issuer"), str):
        raise InvalidInput(f"{described} has no issuer URL", code="bad_issuer_file")
    key = load_private_key(issuer_dir / ISSUER_KEY_FILE, None)
    if key.key_type is not KeyType.RSA:
        raise KeyStoreError(f"{issuer_dir / ISSUER_KEY_FILE} is not an RSA key", code="wrong_key_type")
    issuer = DevIssuer(key, description["issuer"])
    shape = TokenShape(roles, audiences, scopes, lifetime)
    claims = issuer.claims(client_id, shape)
    token = issuer.sign(claims)
    if as_json:
        emit_json({"access_token": token, "claims": claims})
    else:
        click.echo(token)
    return EXIT_OK
