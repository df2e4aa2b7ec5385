// Anchor for bench/bench_statuslist.py: @sd-jwt/jwt-status-list reading the same statuses.
//
// Usage: node statuslist_node.mjs <jwt-status-list index.js> <input.json>
// <input.json> holds {"lst", "bits", "indices", "repetitions", "expected_sum"}: the list is decompressed
// once (cached, as on the Python side), then every repetition times getStatus over all indices.
// Prints {"ns_per_lookup": [...]} on stdout, one entry per repetition.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const [libraryPath, inputPath] = process.argv.slice(2);
const { StatusList } = createRequire(import.meta.url)(libraryPath);
const input = JSON.parse(readFileSync(inputPath, "utf8"));
const list = StatusList.decompressStatusList(input.lst, input.bits);
const indices = Int32Array.from(input.indices);
const lookups = [];
let sum = 0;
for (let i = 0; i < indices.length; i += 1) sum += list.getStatus(indices[i]); // warm-up, checked
if (sum !== input.expected_sum) throw new Error(`statuses differ: ${sum} != ${input.expected_sum}`);
for (let r = 0; r < input.repetitions; r += 1) {
  let total = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < indices.length; i += 1) total += list.getStatus(indices[i]);
  const elapsed = Number(process.hrtime.bigint() - start);
  if (total !== input.expected_sum) throw new Error("statuses changed between repetitions");
  lookups.push(elapsed / indices.length);
}
process.stdout.write(JSON.stringify({ ns_per_lookup: lookups }));
