// Interop peer: sign compact JWS/JWTs with panva's jose (CompactSign), as an independent signer of
// AP2 mandates (the merchant's cart JWT, the user's intent JWS).
// Reads one JSON array on stdin, writes one JSON array of compact tokens on stdout (same order):
//   in:  [{private_jwk, header: {alg, kid, typ, ...}, payload: {...}}]
//   out: ["<header>.<payload>.<signature>", ...]
// The payload is serialised by JSON.stringify here, so the bytes signed are node's, not ours.
import { CompactSign, importJWK } from 'jose';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const tokens = [];
for (const item of cases) {
  const key = await importJWK(item.private_jwk, item.header.alg);
  const payload = new TextEncoder().encode(JSON.stringify(item.payload));
  tokens.push(await new CompactSign(payload).setProtectedHeader(item.header).sign(key));
}
process.stdout.write(JSON.stringify(tokens));
