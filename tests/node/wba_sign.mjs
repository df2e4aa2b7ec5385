// Interop peer: sign requests with Cloudflare's web-bot-auth (npm 0.1.3), an independent Web Bot Auth
// signer. Reads one JSON array on stdin, writes one JSON array of header objects on stdout:
//   in:  [{private_jwk, url, method, headers: {...}, created, expires, label?, components?}]
//        components: strings, or [name, {param: value}] pairs for parameterised ones
//   out: [{"Signature": ..., "Signature-Input": ...}, ...]
import { signatureHeaders } from 'web-bot-auth';
import { signerFromJWK } from 'web-bot-auth/crypto';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const out = [];
for (const item of cases) {
  const signer = await signerFromJWK(item.private_jwk);
  const request = { method: item.method, url: item.url, headers: item.headers };
  const params = {
    created: new Date(item.created * 1000),
    expires: new Date(item.expires * 1000),
  };
  if (item.label) params.key = item.label;
  if (item.components) {
    params.components = item.components.map((c) =>
      typeof c === 'string' ? c : { name: c[0], parameters: new Map(Object.entries(c[1])) },
    );
  }
  out.push(await signatureHeaders(request, signer, params));
}
process.stdout.write(JSON.stringify(out));
