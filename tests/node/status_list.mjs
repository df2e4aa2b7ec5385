// Interop peer: Token Status Lists with @sd-jwt/jwt-status-list (an independent implementation of
// draft-ietf-oauth-status-list), tokens signed with panva's jose.
// Reads one JSON array of operations on stdin, writes one JSON array of results on stdout:
//   {op: "encode", bits, size, set: [[idx, value], ...]}         -> {lst}
//   {op: "decode", bits, lst, indices: [...]}                     -> {size, values: [...]}
//   {op: "sign", private_jwk, alg, kid, bits, size, set, payload} -> {token}  (createHeaderAndPayload)
//   {op: "read_token", token, indices: [...]}                     -> {bits, size, values}
//   {op: "reference", jwt}                                        -> {reference} (getStatusListFromJWT)
import { CompactSign, importJWK } from 'jose';
import {
  StatusList,
  createHeaderAndPayload,
  getListFromStatusListJWT,
  getStatusListFromJWT,
} from '@sd-jwt/jwt-status-list';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const operations = JSON.parse(Buffer.concat(chunks).toString('utf8'));

function build(size, bits, set) {
  const list = new StatusList(new Array(size).fill(0), bits);
  for (const [index, value] of set) list.setStatus(index, value);
  return list;
}

const results = [];
for (const item of operations) {
  if (item.op === 'encode') {
    results.push({ lst: build(item.size, item.bits, item.set).compressStatusList() });
  } else if (item.op === 'decode') {
    const list = StatusList.decompressStatusList(item.lst, item.bits);
    results.push({ size: list.statusList.length, values: item.indices.map((i) => list.getStatus(i)) });
  } else if (item.op === 'sign') {
    const list = build(item.size, item.bits, item.set);
    const { header, payload } = createHeaderAndPayload(list, { ...item.payload }, { alg: item.alg, kid: item.kid });
    const key = await importJWK(item.private_jwk, item.alg);
    const bytes = new TextEncoder().encode(JSON.stringify(payload));
    results.push({ token: await new CompactSign(bytes).setProtectedHeader(header).sign(key) });
  } else if (item.op === 'read_token') {
    const list = getListFromStatusListJWT(item.token);
    results.push({
      bits: list.getBitsPerStatus(),
      size: list.statusList.length,
      values: item.indices.map((i) => list.getStatus(i)),
    });
  } else if (item.op === 'reference') {
    results.push({ reference: getStatusListFromJWT(item.jwt) });
  } else {
    throw new Error(`unknown op ${item.op}`);
  }
}
process.stdout.write(JSON.stringify(results));
