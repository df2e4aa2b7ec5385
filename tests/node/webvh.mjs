// Interop peer: did:webvh logs made and resolved by didwebvh-ts 2.8.0 (the DIF reference
// implementation in TypeScript). Ed25519 signing and verification are node's own crypto.
//   in:  {op: "make", address, seeds: [hex32, ...]}   keys[0] creates, keys[1] and keys[2] are
//        pre-rotated into force, then a service is added, then the DID is deactivated
//   out: {did, log: [entry...], versions: [{versionId, doc, meta}...]} (resolveDIDFromLog per version)
//   in:  {op: "resolve", log: [entry...], witnessProofs?: [...]} -> {versions: [...]} or {error}
import { createHash, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import {
  createDID,
  deactivateDID,
  multibaseEncode,
  prepareDataForSigning,
  resolveDIDFromLog,
  updateDID,
} from 'didwebvh-ts';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const ED25519_PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');
const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');

function keyFromSeed(hex) {
  const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8, Buffer.from(hex, 'hex')]), format: 'der', type: 'pkcs8' });
  const raw = createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(12);
  const multikey = multibaseEncode(new Uint8Array([0xed, 0x01, ...raw]), 'z');
  return { privateKey, multikey };
}

const verifier = {
  async verify(signature, message, publicKey) {
    const raw = publicKey.length === 34 ? publicKey.subarray(2) : publicKey;
    const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI, Buffer.from(raw)]), format: 'der', type: 'spki' });
    return verify(null, Buffer.from(message), key, Buffer.from(signature));
  },
};

function signerFor(key) {
  return {
    getVerificationMethodId: () => `did:key:${key.multikey}#${key.multikey}`,
    async sign({ document, proof }) {
      const data = await prepareDataForSigning(document, proof);
      return { proofValue: multibaseEncode(sign(null, Buffer.from(data), key.privateKey), 'z') };
    },
  };
}

function keyHash(multikey) {
  // base58btc(multihash(sha-256(multikey))) as did:webvh §3.7.8 defines the commitment
  const digest = createHash('sha256').update(multikey, 'utf8').digest();
  return multibaseEncode(new Uint8Array([0x12, 0x20, ...digest]), 'z').slice(1);
}

async function versions(log, witnessProofs) {
  const out = [];
  for (let n = 1; n <= log.length; n++) {
    const { doc, meta } = await resolveDIDFromLog(log, { versionNumber: n, verifier, witnessProofs });
    out.push({ versionId: meta.versionId, doc, meta });
  }
  return out;
}

if (input.op === 'make') {
  const keys = input.seeds.map(keyFromSeed);
  const vm = (key) => ({ type: 'Multikey', publicKeyMultibase: key.multikey, purpose: 'assertionMethod' });
  const created = await createDID({
    address: input.address,
    signer: signerFor(keys[0]),
    verifier,
    updateKeys: [keys[0].multikey],
    verificationMethods: [vm(keys[0])],
    nextKeyHashes: [keyHash(keys[1].multikey)],
    created: '2025-01-01T00:00:00Z',
  });
  let log = created.log;
  let result = await updateDID({
    log, signer: signerFor(keys[1]), verifier,
    updateKeys: [keys[1].multikey], nextKeyHashes: [keyHash(keys[2].multikey)],
    verificationMethods: [vm(keys[1])],
  });
  log = result.log;
  result = await updateDID({
    log, signer: signerFor(keys[2]), verifier,
    updateKeys: [keys[2].multikey], nextKeyHashes: [],
    verificationMethods: [vm(keys[2])],
    services: [{ id: '#shop', type: 'LinkedDomains', serviceEndpoint: 'https://shop.example/' }],
  });
  log = result.log;
  result = await deactivateDID({ log, signer: signerFor(keys[2]), verifier });
  log = result.log;
  process.stdout.write(JSON.stringify({ did: created.did, log, versions: await versions(log) }));
} else if (input.op === 'resolve') {
  try {
    process.stdout.write(JSON.stringify({ versions: await versions(input.log, input.witnessProofs) }));
  } catch (e) {
    process.stdout.write(JSON.stringify({ error: String(e.message || e) }));
  }
}
