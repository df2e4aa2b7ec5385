// Interop peer: make an RFC 9449 DPoP proof with panva's jose, independently of mudrika.
// Reads one JSON object on stdin: {alg, htm, htu, ath, iat, jti}; writes {proof, jkt} on stdout,
// where jkt is jose's own RFC 7638 thumbprint of the proof key (what a token's cnf.jkt would carry).
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const { privateKey, publicKey } = await generateKeyPair(input.alg, { extractable: true });
const jwk = await exportJWK(publicKey);
const proof = await new SignJWT({ htm: input.htm, htu: input.htu, ath: input.ath })
  .setProtectedHeader({ alg: input.alg, typ: 'dpop+jwt', jwk })
  .setIssuedAt(input.iat)
  .setJti(input.jti)
  .sign(privateKey);
process.stdout.write(JSON.stringify({ proof, jkt: await calculateJwkThumbprint(jwk, 'sha256') }));
