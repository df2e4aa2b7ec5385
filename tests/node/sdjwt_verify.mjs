// Interop peer: verify an SD-JWT+KB with @sd-jwt/core.
// Reads one JSON object on stdin, writes one JSON object on stdout:
//   in:  {presentation, issuer_public_jwk, nonce, now}
//   out: {ok: true, payload, header, kb} or {ok: false, error}
// The Holder key for the KB-JWT is taken from cnf.jwk of the verified payload. The library checks
// the KB nonce, typ, signature and sd_hash, but not aud or the KB iat window: the caller compares
// kb.payload.aud itself.
import { SDJwtInstance } from '@sd-jwt/core';
import { ES256, digest } from '@sd-jwt/crypto-nodejs';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const sdjwt = new SDJwtInstance({
  hasher: digest,
  verifier: await ES256.getVerifier(input.issuer_public_jwk),
  kbVerifier: async (data, signature, payload) => {
    const holder = payload?.cnf?.jwk;
    if (!holder) return false;
    return (await ES256.getVerifier(holder))(data, signature);
  },
});

try {
  const options = { currentDate: input.now };
  if (input.nonce !== null && input.nonce !== undefined) options.keyBindingNonce = input.nonce;
  const result = await sdjwt.verify(input.presentation, options);
  process.stdout.write(JSON.stringify({ ok: true, payload: result.payload, header: result.header, kb: result.kb ?? null }));
} catch (error) {
  process.stdout.write(JSON.stringify({ ok: false, error: String(error?.message ?? error) }));
}
