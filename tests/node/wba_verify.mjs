// Interop peer: verify requests with Cloudflare's web-bot-auth (npm 0.1.3).
// Reads one JSON array on stdin, writes one JSON array of results on stdout (same order):
//   in:  [{public_jwk, url, method, headers: {...}}]
//   out: [{"ok": true, "keyid": ..., "tag": ...} | {"ok": false, "error": "..."}]
import { verify } from 'web-bot-auth';
import { verifierFromJWK } from 'web-bot-auth/crypto';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const out = [];
for (const item of cases) {
  const check = await verifierFromJWK(item.public_jwk);
  const request = { method: item.method, url: item.url, headers: item.headers };
  let seen = null;
  try {
    await verify(request, async (data, signature, params) => {
      seen = params;
      await check(data, signature, params);
    });
    out.push({ ok: true, keyid: seen.keyid, tag: seen.tag });
  } catch (error) {
    out.push({ ok: false, error: String(error && error.message ? error.message : error) });
  }
}
process.stdout.write(JSON.stringify(out));
