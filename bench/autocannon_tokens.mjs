// Load generator for bench/bench_middleware_http.py: autocannon's programmatic API, so that every
// request can carry a different Bearer token (the CLI sends one fixed header set).
//
// Usage: node autocannon_tokens.mjs <autocannon.js> <url> <connections> <seconds> <body-file> <tokens-file> [start]
// <tokens-file> holds one token per line; requests take them in order from line <start> (default 0),
// cycling through the file, so consecutive runs can continue where the last one stopped.
// Prints autocannon's JSON result on stdout.  Only ever given loopback URLs by the bench.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const [autocannonPath, url, connections, seconds, bodyFile, tokensFile, startAt] = process.argv.slice(2);
if (!new URL(url).hostname.match(/^127\.0\.0\.1$/)) {
  throw new Error("this load generator only targets 127.0.0.1");
}
const autocannon = createRequire(import.meta.url)(autocannonPath);
const body = readFileSync(bodyFile, "utf8");
const tokens = readFileSync(tokensFile, "utf8").split("\n").filter((line) => line.length > 0);
const start = Number(startAt ?? 0);
let next = start;

const result = await autocannon({
  url,
  connections: Number(connections),
  duration: Number(seconds),
  requests: [
    {
      method: "POST",
      body,
      setupRequest: (request) => {
        const token = tokens[next % tokens.length];
        next += 1;
        request.headers = {
          ...request.headers,
          "content-type": "application/json",
          authorization: `Bearer ${token}`,
        };
        return request;
      },
    },
  ],
});
process.stdout.write(JSON.stringify({ ...result, sent: next - start, pool: tokens.length }));
