// Interop peer: issue an SD-JWT and present it with Key Binding using @sd-jwt/core.
// Reads one JSON object on stdin, writes one JSON object on stdout:
//   in:  {issuer_private_jwk, holder_private_jwk, claims, disclosure_frame, presentation_frame,
//         typ, kid (optional: the issuer key's kid header), kb: {aud, nonce, iat, ...extra claims}}
//   out: {issued, presentation}
// `claims` must already carry `cnf` (the core library does not add it). Salts are 128-bit base64url,
// because the library's own default generator (crypto-nodejs generateSalt(16)) yields 16 hex
// characters, i.e. only 64 bits.
import { randomBytes } from 'node:crypto';
import { SDJwtInstance } from '@sd-jwt/core';
import { ES256, digest } from '@sd-jwt/crypto-nodejs';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const sdjwt = new SDJwtInstance({
  hasher: digest,
  hashAlg: 'sha-256',
  saltGenerator: () => randomBytes(16).toString('base64url'),
  signer: await ES256.getSigner(input.issuer_private_jwk),
  signAlg: ES256.alg,
  kbSigner: await ES256.getSigner(input.holder_private_jwk),
  kbSignAlg: ES256.alg,
});

const header = input.kid ? { typ: input.typ, kid: input.kid } : { typ: input.typ };
const issued = await sdjwt.issue(input.claims, input.disclosure_frame, { header });
const presentation = await sdjwt.present(issued, input.presentation_frame, {
  kb: { payload: input.kb },
});
process.stdout.write(JSON.stringify({ issued, presentation }));
