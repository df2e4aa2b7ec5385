#!/usr/bin/env node
// A Keycloak-shaped OpenID provider for mudrika's integration tests. TEST PEER ONLY.
//
// No Keycloak server can run where the test suite runs, so this script lays panva's `oidc-provider`
// out on Keycloak's URL paths (issuer `http://127.0.0.1:PORT/realms/{realm}`) and makes its
// client-credentials access tokens look like Keycloak's: a JWT with header typ "JWT", and the
// claims typ "Bearer", azp, aud, realm_access, resource_access, preferred_username, clientId ...
//
// What oidc-provider serves: discovery, the token endpoint (client_credentials), the JWKS ("certs"),
// the logout route name. What this script serves itself, because Keycloak behaves differently:
//   - token introspection: oidc-provider refuses to introspect JWT access tokens; Keycloak does;
//   - userinfo for service-account tokens (oidc-provider's needs an end-user account);
//   - the /__test__/ admin endpoints (key rotation, key retirement, minting arbitrary
//     Keycloak-shaped tokens for attack tests). They exist only in this test peer, never in Keycloak,
//     and are enabled only when KEYCLOAK_IDP_ADMIN_SECRET is set; every call must carry that secret
//     in the X-Test-Admin-Secret header.
//
// Usage: node keycloak_idp.mjs [--port N] [--realm NAME] [--config FILE] [--state FILE]
//                              [--token-lifetime SECONDS] [--client ID:SECRET[:AUTH_METHOD]]...
// Environment fallbacks: KEYCLOAK_IDP_PORT, KEYCLOAK_IDP_REALM, KEYCLOAK_IDP_CONFIG, KEYCLOAK_IDP_STATE,
// KEYCLOAK_IDP_TOKEN_LIFETIME, KEYCLOAK_IDP_ADMIN_SECRET. Binds 127.0.0.1 only and prints one line
// `READY <port>` on stdout once it listens. See README.md beside this file.

import * as crypto from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { parseArgs, promisify } from 'node:util';

import { calculateJwkThumbprint, createLocalJWKSet, decodeProtectedHeader, importJWK, jwtVerify, SignJWT } from 'jose';
import Provider, { errors as oidcErrors } from 'oidc-provider';

const generateKeyPair = promisify(crypto.generateKeyPair);

const MAX_BODY_BYTES = 64 * 1024;
const RSA_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
const AUTH_METHODS = new Set(['client_secret_basic', 'client_secret_post']);
const ADMIN_HEADER = 'x-test-admin-secret';
const OIDC = '/protocol/openid-connect';

// ---------------------------------------------------------------------------------------------
// Settings: argv, then environment, then the JSON config file, then defaults.

function fail(message) {
  process.stderr.write(`keycloak_idp: ${message}\n`);
  process.exit(2);
}

function readSettings() {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      realm: { type: 'string' },
      config: { type: 'string' },
      state: { type: 'string' },
      'token-lifetime': { type: 'string' },
      client: { type: 'string', multiple: true },
    },
    strict: true,
  });
  const env = process.env;
  const configPath = values.config ?? env.KEYCLOAK_IDP_CONFIG;
  let file = {};
  if (configPath) {
    try {
      file = JSON.parse(readFileSync(configPath, 'utf8'));
    } catch (err) {
      fail(`cannot read config ${configPath}: ${err.message}`);
    }
  }
  const port = Number(values.port ?? env.KEYCLOAK_IDP_PORT ?? file.port ?? 0);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail('port must be an integer 0..65535');
  const realm = String(values.realm ?? env.KEYCLOAK_IDP_REALM ?? file.realm ?? 'mudrika');
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(realm)) fail('realm must match [A-Za-z0-9._-]{1,64}');
  const tokenLifetime = Number(values['token-lifetime'] ?? env.KEYCLOAK_IDP_TOKEN_LIFETIME ?? file.tokenLifetime ?? 300);
  if (!Number.isInteger(tokenLifetime) || tokenLifetime < 1) fail('token lifetime must be a positive integer');

  const rawClients = [...(file.clients ?? [])];
  for (const spec of values.client ?? []) {
    const [clientId, secret, authMethod] = spec.split(':');
    rawClients.push({ clientId, secret, authMethod });
  }
  if (rawClients.length === 0) fail('configure at least one client (config file "clients" or --client ID:SECRET)');
  const clients = new Map();
  for (const raw of rawClients) {
    const client = normaliseClient(raw, realm);
    if (clients.has(client.clientId)) fail(`duplicate client ${client.clientId}`);
    clients.set(client.clientId, client);
  }
  const adminSecret = env.KEYCLOAK_IDP_ADMIN_SECRET || undefined;
  return { port, realm, tokenLifetime, clients, adminSecret, statePath: values.state ?? env.KEYCLOAK_IDP_STATE };
}

function stringList(value, name) {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v.length > 0)) {
    fail(`${name} must be a list of non-empty strings`);
  }
  return value;
}

// Keycloak names a client's service-account user `service-account-<client id>` and gives it a UUID;
// derive that UUID from realm and client so it survives restarts unless the config pins one.
function serviceAccountUuid(realm, clientId) {
  const h = crypto.createHash('sha256').update(`${realm}\0${clientId}`).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

function normaliseClient(raw, realm) {
  if (typeof raw?.clientId !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(raw.clientId)) {
    fail('each client needs a clientId matching [A-Za-z0-9._-]{1,64}');
  }
  if (typeof raw.secret !== 'string' || raw.secret.length < 8) fail(`client ${raw.clientId}: secret of 8+ characters required`);
  const authMethod = raw.authMethod ?? 'client_secret_basic';
  if (!AUTH_METHODS.has(authMethod)) fail(`client ${raw.clientId}: authMethod must be one of ${[...AUTH_METHODS]}`);
  const accessTokenFormat = raw.accessTokenFormat ?? 'jwt';
  if (!['jwt', 'opaque'].includes(accessTokenFormat)) fail(`client ${raw.clientId}: accessTokenFormat is jwt or opaque`);
  const clientRoles = raw.clientRoles ?? { account: ['manage-account', 'manage-account-links', 'view-profile'] };
  for (const [name, roles] of Object.entries(clientRoles)) stringList(roles, `client ${raw.clientId}: clientRoles.${name}`);
  return {
    clientId: raw.clientId,
    secret: raw.secret,
    authMethod,
    accessTokenFormat,
    audience: stringList(raw.audience ?? ['account'], `client ${raw.clientId}: audience`),
    realmRoles: stringList(raw.realmRoles ?? [`default-roles-${realm}`, 'offline_access', 'uma_authorization'], `client ${raw.clientId}: realmRoles`),
    clientRoles,
    defaultScopes: stringList(raw.defaultScopes ?? ['profile', 'email'], `client ${raw.clientId}: defaultScopes`),
    optionalScopes: stringList(raw.optionalScopes ?? [], `client ${raw.clientId}: optionalScopes`),
    serviceAccountId: raw.serviceAccountId ?? serviceAccountUuid(realm, raw.clientId),
    username: `service-account-${raw.clientId.toLowerCase()}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Keys. Keycloak publishes every active and passive key of the realm; it signs with the newest
// active one. Here: `sig` holds RS256 keys (the signing one first), `enc` one RSA-OAEP key.

async function newRsaJwk(alg, use) {
  const { privateKey } = await generateKeyPair('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  jwk.kid = await calculateJwkThumbprint({ kty: jwk.kty, n: jwk.n, e: jwk.e });
  jwk.alg = alg;
  jwk.use = use;
  return jwk;
}

function publicJwk(jwk) {
  const { kty, n, e, kid, alg, use } = jwk;
  return { kid, kty, alg, use, n, e };
}

async function loadOrCreateKeys(statePath) {
  if (statePath && existsSync(statePath)) {
    const saved = JSON.parse(readFileSync(statePath, 'utf8'));
    return { sig: saved.sig, enc: saved.enc };
  }
  const [sig, enc] = await Promise.all([newRsaJwk('RS256', 'sig'), newRsaJwk('RSA-OAEP', 'enc')]);
  return { sig: [sig], enc };
}

function saveKeys(statePath, keys) {
  if (!statePath) return;
  const tmp = `${statePath}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(keys), { mode: 0o600 });
  renameSync(tmp, statePath);
}

// ---------------------------------------------------------------------------------------------
// Keycloak's token shape.

function keycloakScope(client, requested) {
  const asked = new Set(requested ? requested.split(' ') : []);
  const out = [];
  if (asked.has('openid')) out.push('openid');
  out.push(...client.defaultScopes);
  out.push(...client.optionalScopes.filter((s) => asked.has(s)));
  return [...new Set(out)].join(' ');
}

function audienceClaim(audience) {
  return audience.length === 1 ? audience[0] : [...audience];
}

// The claims Keycloak's default client scopes put in a service-account access token, apart from
// the registered ones (iss, sub, aud, exp, iat, jti, scope) that the caller adds.
function serviceAccountClaims(client) {
  const resourceAccess = {};
  for (const [name, roles] of Object.entries(client.clientRoles)) resourceAccess[name] = { roles: [...roles] };
  return {
    typ: 'Bearer',
    azp: client.clientId,
    acr: '1',
    realm_access: { roles: [...client.realmRoles] },
    resource_access: resourceAccess,
    email_verified: false,
    clientHost: '127.0.0.1',
    preferred_username: client.username,
    clientAddress: '127.0.0.1',
    clientId: client.clientId,
    client_id: client.clientId,
  };
}

function resourceIndicator(clientId) {
  return `urn:keycloak-idp:client:${clientId}`;
}

// ---------------------------------------------------------------------------------------------
// Token storage. oidc-provider's built-in memory adapter keeps one store per Provider instance, and
// a key rotation builds a new instance; this one store outlives them, so opaque tokens issued
// before a rotation stay introspectable (Keycloak's tokens do not depend on which key is active).

const STORE = new Map();

setInterval(() => {
  const now = Date.now();
  for (const [key, entry] of STORE) if (entry.expiresAt <= now) STORE.delete(key);
}, 30_000).unref();

class SharedMemoryAdapter {
  constructor(model) {
    this.model = model;
  }

  key(id) {
    return `${this.model}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    const expiresAt = typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Infinity;
    STORE.set(this.key(id), { payload: structuredClone(payload), expiresAt });
  }

  async find(id) {
    const entry = STORE.get(this.key(id));
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      STORE.delete(this.key(id));
      return undefined;
    }
    return structuredClone(entry.payload);
  }

  async findByUid(uid) {
    for (const entry of STORE.values()) if (entry.payload.uid === uid) return structuredClone(entry.payload);
    return undefined;
  }

  async findByUserCode(userCode) {
    for (const entry of STORE.values()) if (entry.payload.userCode === userCode) return structuredClone(entry.payload);
    return undefined;
  }

  async consume(id) {
    const entry = STORE.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    STORE.delete(this.key(id));
  }

  async revokeByGrantId(grantId) {
    for (const [key, entry] of STORE) if (entry.payload.grantId === grantId) STORE.delete(key);
  }
}

// ---------------------------------------------------------------------------------------------
// The server.

class KeycloakIdp {
  constructor(settings, keys) {
    this.settings = settings;
    this.keys = keys;
    this.issuer = '';
    this.prefix = `/realms/${settings.realm}`;
    this.provider = undefined;
    this.cookieKeys = [crypto.randomBytes(32).toString('base64url')];
  }

  get signingJwk() {
    return this.keys.sig[0];
  }

  publishedSigningKeys() {
    return this.keys.sig.map(publicJwk);
  }

  // oidc-provider reads its keystore once, at construction; a rotation or retirement therefore
  // builds a new Provider over the same token storage (SharedMemoryAdapter).
  rebuildProvider() {
    const { settings } = this;
    const clients = settings.clients;
    const signingKid = this.signingJwk.kid;
    const provider = new Provider(this.issuer, {
      clients: [...clients.values()].map((c) => ({
        client_id: c.clientId,
        client_secret: c.secret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: c.authMethod,
      })),
      adapter: SharedMemoryAdapter,
      jwks: { keys: [...this.keys.sig, this.keys.enc] },
      cookies: { keys: this.cookieKeys },
      features: {
        devInteractions: { enabled: false },
        // Keycloak publishes an RSA-OAEP key for encrypted request objects; oidc-provider only
        // accepts (and publishes) an `enc` key when encryption is enabled.
        encryption: { enabled: true },
        clientCredentials: { enabled: true },
        // Listed in discovery at Keycloak's path; requests there are answered by
        // KeycloakIdp.introspect (oidc-provider refuses to introspect JWT access tokens).
        introspection: { enabled: true },
        revocation: { enabled: false },
        resourceIndicators: {
          enabled: true,
          defaultResource: (_ctx, client) => resourceIndicator(client.clientId),
          useGrantedResource: () => true,
          // Stock Keycloak ignores an RFC 8707 `resource` parameter: the token's audience comes
          // from the client's audience mappers whatever resource was asked for (its MCP guide
          // puts the MCP server's URL in `aud` with such a mapper). So a requested indicator
          // (oidc-provider has already refused one that is not an absolute URI or has a fragment)
          // yields the same token as none; `aud` is set from the client's configured audience in
          // the JWT customizer and by introspection.
          getResourceServerInfo: (_ctx, _indicator, client) => {
            const c = clients.get(client.clientId);
            if (!c) throw new oidcErrors.InvalidTarget('unknown client');
            const info = {
              scope: ['openid', ...c.defaultScopes, ...c.optionalScopes].join(' '),
              audience: c.audience[0],
              accessTokenFormat: c.accessTokenFormat,
            };
            if (c.accessTokenFormat === 'jwt') info.jwt = { sign: { alg: 'RS256', kid: signingKid } };
            return info;
          },
        },
      },
      routes: {
        authorization: `${OIDC}/auth`,
        device_authorization: `${OIDC}/auth/device`,
        end_session: `${OIDC}/logout`,
        introspection: `${OIDC}/token/introspect`,
        jwks: `${OIDC}/certs`,
        pushed_authorization_request: `${OIDC}/ext/par/request`,
        token: `${OIDC}/token`,
        userinfo: `${OIDC}/userinfo`,
      },
      ttl: { ClientCredentials: settings.tokenLifetime },
      extraTokenClaims: (_ctx, token) => {
        const c = clients.get(token.clientId);
        if (token.kind !== 'ClientCredentials' || !c) return undefined;
        // Keycloak grants the client's default scopes whatever was asked; the token response's
        // `scope` is read from the token after this hook, so set it here for both.
        token.scope = keycloakScope(c, token.scope);
        return serviceAccountClaims(c);
      },
      formats: {
        customizers: {
          jwt: (_ctx, token, jwt) => {
            const c = clients.get(token.clientId);
            if (!c) return;
            jwt.header = { typ: 'JWT' };
            jwt.payload.sub = c.serviceAccountId;
            jwt.payload.aud = audienceClaim(c.audience);
            jwt.payload.scope = keycloakScope(c, token.scope);
          },
        },
      },
    });
    provider.on('server_error', (_ctx, err) => process.stderr.write(`keycloak_idp: server_error ${err.stack}\n`));
    this.provider = provider;
    this.providerCallback = provider.callback();
  }

  // Introspection and userinfo both start here: is this a live access token of this realm?
  async activeAccessToken(value) {
    if (typeof value !== 'string' || value.length === 0 || value.length > 16 * 1024) return undefined;
    let header;
    try {
      header = decodeProtectedHeader(value);
    } catch {
      header = undefined;
    }
    if (header) {
      try {
        const { payload } = await jwtVerify(value, createLocalJWKSet({ keys: this.publishedSigningKeys() }), {
          issuer: this.issuer,
          algorithms: RSA_ALGS,
        });
        if (payload.typ !== 'Bearer' || !this.settings.clients.has(payload.azp)) return undefined;
        return payload;
      } catch {
        return undefined;
      }
    }
    let token;
    try {
      token = await this.provider.ClientCredentials.find(value);
    } catch {
      return undefined;
    }
    if (!token?.isValid) return undefined;
    const c = this.settings.clients.get(token.clientId);
    if (!c) return undefined;
    return {
      ...token.extra,
      exp: token.exp,
      iat: token.iat,
      jti: token.jti,
      iss: this.issuer,
      aud: audienceClaim(c.audience),
      sub: c.serviceAccountId,
      scope: keycloakScope(c, token.scope),
    };
  }

  // Keycloak accepts client_secret_basic and client_secret_post from any confidential client.
  authenticateClient(req, params) {
    let clientId;
    let secret;
    const authz = req.headers.authorization;
    if (typeof authz === 'string' && authz.toLowerCase().startsWith('basic ')) {
      const decoded = Buffer.from(authz.slice(6).trim(), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) return undefined;
      try {
        clientId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
        secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
      } catch {
        return undefined;
      }
    } else {
      clientId = params.get('client_id');
      secret = params.get('client_secret');
    }
    const client = clientId ? this.settings.clients.get(clientId) : undefined;
    if (!client || typeof secret !== 'string' || !sameSecret(secret, client.secret)) return undefined;
    return client;
  }

  async introspect(req, res) {
    if (req.method !== 'POST') return sendJson(res, 405, { error: 'invalid_request', error_description: 'HTTP method not allowed' });
    const params = new URLSearchParams((await readBody(req)).toString('utf8'));
    if (!this.authenticateClient(req, params)) {
      return sendJson(res, 401, { error: 'invalid_client', error_description: 'Invalid client or Invalid client credentials' });
    }
    const token = params.get('token');
    if (!token) return sendJson(res, 400, { error: 'invalid_request', error_description: 'Token not provided.' });
    const claims = await this.activeAccessToken(token);
    if (!claims) return sendJson(res, 200, { active: false });
    return sendJson(res, 200, {
      ...claims,
      client_id: claims.azp,
      username: claims.preferred_username,
      token_type: 'Bearer',
      active: true,
    });
  }

  async userinfo(req, res) {
    const authz = req.headers.authorization;
    const value = typeof authz === 'string' && /^bearer /i.test(authz) ? authz.slice(7).trim() : undefined;
    const claims = value ? await this.activeAccessToken(value) : undefined;
    if (!claims) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="' + this.settings.realm + '", error="invalid_token"');
      return sendJson(res, 401, { error: 'invalid_token', error_description: 'Token verification failed' });
    }
    if (!String(claims.scope ?? '').split(' ').includes('openid')) {
      return sendJson(res, 403, { error: 'insufficient_scope', error_description: 'Missing openid scope' });
    }
    return sendJson(res, 200, {
      sub: claims.sub,
      email_verified: claims.email_verified ?? false,
      preferred_username: claims.preferred_username,
    });
  }

  // --- test-only admin endpoints ------------------------------------------------------------

  async rotate() {
    const fresh = await newRsaJwk('RS256', 'sig');
    const previous = this.signingJwk.kid;
    this.keys.sig.unshift(fresh);
    saveKeys(this.settings.statePath, this.keys);
    this.rebuildProvider();
    return { kid: fresh.kid, previous_kid: previous };
  }

  retire(kid) {
    if (kid === this.signingJwk.kid) return [409, { error: 'cannot retire the active signing key; rotate first' }];
    const index = this.keys.sig.findIndex((k) => k.kid === kid);
    if (index < 0) return [404, { error: 'unknown kid' }];
    this.keys.sig.splice(index, 1);
    saveKeys(this.settings.statePath, this.keys);
    this.rebuildProvider();
    return [200, { retired: kid, kids: this.keys.sig.map((k) => k.kid) }];
  }

  // Sign an arbitrary Keycloak-shaped token: typ "Bearer" (an access token like the token endpoint's),
  // "ID" or "Refresh" (the shapes Keycloak gives those), or any other typ on the access-token base.
  // `claims` override the base; a claim set to null is removed.
  async mint(body) {
    const typ = body.typ ?? 'Bearer';
    if (typeof typ !== 'string') return [400, { error: 'typ must be a string' }];
    const clientId = body.client_id ?? this.settings.clients.keys().next().value;
    const client = this.settings.clients.get(clientId);
    if (!client) return [400, { error: 'unknown client_id' }];
    const ttl = body.ttl ?? this.settings.tokenLifetime;
    if (!Number.isInteger(ttl)) return [400, { error: 'ttl must be an integer (negative for an expired token)' }];
    const alg = body.alg ?? 'RS256';
    if (!RSA_ALGS.includes(alg)) return [400, { error: `alg must be one of ${RSA_ALGS}` }];
    const jwk = body.kid === undefined ? this.signingJwk : this.keys.sig.find((k) => k.kid === body.kid);
    if (!jwk) return [400, { error: 'kid is not a published signing key' }];
    const claims = body.claims ?? {};
    const header = body.header ?? {};
    if (typeof claims !== 'object' || Array.isArray(claims) || typeof header !== 'object' || Array.isArray(header)) {
      return [400, { error: 'claims and header must be JSON objects' }];
    }

    const now = Math.floor(Date.now() / 1000);
    const sid = crypto.randomUUID();
    const registered = { exp: now + ttl, iat: now, jti: crypto.randomUUID(), iss: this.issuer };
    let payload;
    if (typ === 'ID') {
      payload = {
        ...registered,
        aud: client.clientId,
        sub: client.serviceAccountId,
        typ: 'ID',
        azp: client.clientId,
        auth_time: now,
        sid,
        at_hash: crypto.randomBytes(16).toString('base64url'),
        acr: '1',
        email_verified: false,
        preferred_username: client.username,
      };
    } else if (typ === 'Refresh') {
      payload = {
        ...registered,
        aud: this.issuer,
        sub: client.serviceAccountId,
        typ: 'Refresh',
        azp: client.clientId,
        sid,
        scope: keycloakScope(client, 'openid'),
      };
    } else {
      payload = {
        ...registered,
        aud: audienceClaim(client.audience),
        sub: client.serviceAccountId,
        ...serviceAccountClaims(client),
        typ,
        scope: keycloakScope(client, 'openid'),
      };
    }
    for (const [name, value] of Object.entries(claims)) {
      if (value === null) delete payload[name];
      else payload[name] = value;
    }
    const protectedHeader = { typ: 'JWT', kid: jwk.kid, ...header, alg };
    for (const [name, value] of Object.entries(protectedHeader)) if (value === null) delete protectedHeader[name];
    const key = await importJWK({ ...jwk, alg }, alg);
    const token = await new SignJWT(payload).setProtectedHeader(protectedHeader).sign(key);
    return [200, { token, kid: jwk.kid, claims: payload }];
  }

  async admin(req, res, path) {
    const expected = this.settings.adminSecret;
    const given = req.headers[ADMIN_HEADER];
    if (!expected || !isLoopback(req.socket.remoteAddress)) return sendJson(res, 404, { error: 'not found' });
    if (typeof given !== 'string' || !sameSecret(given, expected)) return sendJson(res, 401, { error: 'admin secret required' });
    const route = `${req.method} ${path}`;
    if (route === 'GET /__test__/health') {
      return sendJson(res, 200, {
        status: 'ok',
        realm: this.settings.realm,
        issuer: this.issuer,
        signing_kid: this.signingJwk.kid,
        kids: this.keys.sig.map((k) => k.kid),
        enc_kid: this.keys.enc.kid,
      });
    }
    if (req.method !== 'POST') return sendJson(res, 404, { error: 'not found' });
    let body;
    try {
      const raw = (await readBody(req)).toString('utf8');
      body = raw ? JSON.parse(raw) : {};
    } catch {
      return sendJson(res, 400, { error: 'body must be JSON' });
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return sendJson(res, 400, { error: 'body must be a JSON object' });
    switch (path) {
      case '/__test__/rotate':
        return sendJson(res, 200, await this.rotate());
      case '/__test__/retire': {
        if (typeof body.kid !== 'string') return sendJson(res, 400, { error: 'kid required' });
        const [status, out] = this.retire(body.kid);
        return sendJson(res, status, out);
      }
      case '/__test__/mint': {
        const [status, out] = await this.mint(body);
        return sendJson(res, status, out);
      }
      default:
        return sendJson(res, 404, { error: 'not found' });
    }
  }

  async handle(req, res) {
    const url = new URL(req.url, 'http://127.0.0.1');
    const path = url.pathname;
    if (path.startsWith('/__test__/')) return this.admin(req, res, path);
    if (path !== this.prefix && !path.startsWith(`${this.prefix}/`)) {
      return sendJson(res, 404, { error: 'Realm does not exist' });
    }
    const inner = path.slice(this.prefix.length);
    if (inner === `${OIDC}/token/introspect`) return this.introspect(req, res);
    if (inner === `${OIDC}/userinfo`) return this.userinfo(req, res);
    if (inner === '' || inner === '/') {
      return sendJson(res, 200, {
        realm: this.settings.realm,
        public_key: crypto.createPublicKey({ key: publicJwk(this.signingJwk), format: 'jwk' })
          .export({ type: 'spki', format: 'der' })
          .toString('base64'),
        'token-service': `${this.issuer}${OIDC}`,
        'account-service': `${this.issuer}/account`,
        'tokens-not-before': 0,
      });
    }
    // Mount oidc-provider under the realm prefix: it sees the path below the prefix and works out
    // its absolute URLs from originalUrl.
    req.originalUrl = req.url;
    req.url = req.url.slice(this.prefix.length);
    return this.providerCallback(req, res);
  }
}

function isLoopback(address) {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
}

function sameSecret(given, expected) {
  const a = crypto.createHash('sha256').update(given).digest();
  const b = crypto.createHash('sha256').update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}

class BodyTooLarge extends Error {}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BodyTooLarge('body too large'));
        req.pause();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

async function main() {
  const settings = readSettings();
  const keys = await loadOrCreateKeys(settings.statePath);
  saveKeys(settings.statePath, keys);
  const idp = new KeycloakIdp(settings, keys);
  const server = http.createServer((req, res) => {
    idp.handle(req, res).catch((err) => {
      if (err instanceof BodyTooLarge) {
        res.shouldKeepAlive = false;
        res.on('finish', () => req.destroy());
        if (!res.headersSent) sendJson(res, 413, { error: 'invalid_request', error_description: 'body too large' });
        return;
      }
      process.stderr.write(`keycloak_idp: ${err.stack}\n`);
      if (!res.headersSent) sendJson(res, 500, { error: 'server_error' });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  idp.issuer = `http://127.0.0.1:${port}/realms/${settings.realm}`;
  idp.rebuildProvider();

  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdout.write(`READY ${port}\n`);
}

main().catch((err) => {
  process.stderr.write(`keycloak_idp: ${err.stack}\n`);
  process.exit(1);
});
