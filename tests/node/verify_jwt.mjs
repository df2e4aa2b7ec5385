// Interop peer: verify a batch of compact JWS/JWTs with panva's jose (jwtVerify).
// Reads one JSON array on stdin, writes one JSON array on stdout (one result per case, same order):
//   in:  [{token, jwk, algorithms, issuer, audience (or null), currentDate (UNIX seconds), typ (or null)}]
//   out: [{ok: true, payload, header} | {ok: false, error, code}]
// jwtVerify checks the signature with the given public JWK and the algorithm allow-list, then iss,
// aud (when given), typ (when given) and exp/nbf/iat against currentDate. One process per batch.
import { importJWK, jwtVerify } from 'jose';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const results = [];
for (const item of cases) {
  try {
    const alg = item.algorithms[0];
    const key = await importJWK(item.jwk, alg);
    const options = {
      algorithms: item.algorithms,
      issuer: item.issuer,
      currentDate: new Date(item.currentDate * 1000),
    };
    if (item.audience !== null && item.audience !== undefined) options.audience = item.audience;
    if (item.typ !== null && item.typ !== undefined) options.typ = item.typ;
    const { payload, protectedHeader } = await jwtVerify(item.token, key, options);
    results.push({ ok: true, payload, header: protectedHeader });
  } catch (error) {
    results.push({ ok: false, error: String(error?.message ?? error), code: error?.code ?? null });
  }
}
process.stdout.write(JSON.stringify(results));
