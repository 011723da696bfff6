// Shared harness for the Node.js peer drivers (see bench/DRIVERS.md).
//
// A driver supplies `makeLocker(key, role)` returning an object with async `lock()` and
// `unlock()`; this module parses the arguments, runs s1 / s2 / s3-worker with bounded loops,
// and prints the one-line JSON result.

import { parseArgs } from "node:util";
import { readFileSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import Redis from "ioredis";

export const WARMUP_MS = 500;
export const LEASE_MS = 10_000; // lease never expires during a pair or a 1 ms hold
export const ACQUIRE_GRACE_MS = 5_000; // waiting this long past end of run is a failure
const WATCHDOG_MARGIN_MS = 9_000; // hard stop at S + 9 s (contract: never longer than S + 10)
const S1_MAX_PAIRS = 2_000_000;
const S2_MAX_PAIRS_TOTAL = 10_000_000;
const S3_MAX_ACQUISITIONS = 1_000_000;

export const now = () => process.hrtime.bigint(); // CLOCK_MONOTONIC, nanoseconds
const NS_PER_MS = 1_000_000n;

// When a lock() still waiting should give up: the run's end plus ACQUIRE_GRACE_MS (a peer that
// keeps retrying, such as a Redlock whose contenders split the votes, ends with the run).
let giveUpAt = null;
export const acquireDeadline = () => giveUpAt;

let driverName = "peer";
export function log(msg) {
  process.stderr.write(`${driverName}: ${msg}\n`);
}
export function fail(msg, code = 1) {
  process.stderr.write(`${driverName}: error: ${msg}\n`);
  process.exit(code);
}

export function parseDriverArgs(name) {
  driverName = name;
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        port: { type: "string" },
        seconds: { type: "string", default: "3" },
        concurrency: { type: "string", default: "1" },
        key: { type: "string", default: "s3" },
        out: { type: "string" },
        prefix: { type: "string", default: "bench:" },
        // Q1: a Redlock over one client per server (the driver's own quorum form).
        ports: { type: "string" },
        // Q1: the peer's tuned retry settings instead of its defaults.
        tuned: { type: "boolean", default: false },
      },
    });
  } catch (e) {
    fail(`${e.message}\nusage: ${name} <s1|s2|s3-worker> --port PORT [--seconds S] ` +
      `[--concurrency C] [--key KEY] [--out FILE] [--prefix P] [--ports P1,P2,... [--tuned]]`, 2);
  }
  const { values, positionals } = parsed;
  const mode = positionals[0];
  if (positionals.length !== 1 || !["s1", "s2", "s3-worker"].includes(mode)) {
    fail("first argument must be one mode: s1, s2 or s3-worker", 2);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) fail("--port PORT is required", 2);
  const seconds = Number(values.seconds);
  if (!(seconds > 0)) fail("--seconds must be > 0", 2);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) fail("--concurrency must be >= 1", 2);
  if (mode === "s3-worker" && !values.out) fail("s3-worker needs --out FILE", 2);
  const ports = values.ports === undefined ? [] : values.ports.split(",").map(Number);
  if (ports.some((p) => !Number.isInteger(p) || p <= 0 || p > 65535)) {
    fail("--ports must be a comma-separated list of ports", 2);
  }
  return { mode, port, seconds, concurrency, key: values.key, out: values.out, prefix: values.prefix,
    ports, tuned: values.tuned };
}

export function startWatchdog(seconds) {
  const limitMs = seconds * 1000 + WATCHDOG_MARGIN_MS;
  const t = setTimeout(() => fail(`watchdog: run exceeded ${limitMs / 1000} s, aborting`, 3), limitMs);
  t.unref();
}

export async function connect(port) {
  const client = new Redis({
    host: "127.0.0.1",
    port,
    lazyConnect: true,
    connectTimeout: 5000,
    // give up (instead of ioredis' default endless reconnects) so failures exit non-zero
    retryStrategy: (times) => (times > 3 ? null : 200),
  });
  client.on("error", (e) => log(`redis client error: ${e.message}`));
  try {
    await client.connect();
    await client.ping();
  } catch (e) {
    fail(`cannot reach redis at 127.0.0.1:${port}: ${e.message}`);
  }
  return client;
}

// nearest-rank percentile of an ascending array
function percentile(sorted, p) {
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

function latencyMetrics(latNs) {
  const n = latNs.length;
  if (n === 0) {
    return { pairs: 0, p50_us: null, p90_us: null, p99_us: null, max_us: null, mean_us: null };
  }
  const sorted = Float64Array.from(latNs).sort();
  const us = (v) => Math.round(v / 100) / 10;
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    pairs: n,
    p50_us: us(percentile(sorted, 50)),
    p90_us: us(percentile(sorted, 90)),
    p99_us: us(percentile(sorted, 99)),
    max_us: us(sorted[n - 1]),
    mean_us: us(sum / n),
  };
}

async function runS1(args, makeLocker) {
  const key = `${args.prefix}s1`;
  const locker = makeLocker(key, "s1");
  const warmEnd = now() + BigInt(WARMUP_MS) * NS_PER_MS;
  while (now() < warmEnd) {
    await locker.lock();
    await locker.unlock();
  }
  log(`s1: warm-up done, recording ${args.seconds} s`);
  const lat = [];
  const end = now() + BigInt(Math.round(args.seconds * 1000)) * NS_PER_MS;
  while (lat.length < S1_MAX_PAIRS) {
    const a = now();
    if (a >= end) break;
    await locker.lock();
    await locker.unlock();
    lat.push(Number(now() - a));
  }
  return { extra: { key }, metrics: latencyMetrics(lat) };
}

async function runS2(args, makeLocker) {
  const c = args.concurrency;
  const perTaskCap = Math.max(1, Math.floor(S2_MAX_PAIRS_TOTAL / c));
  const recStart = now() + BigInt(WARMUP_MS) * NS_PER_MS;
  const recEnd = recStart + BigInt(Math.round(args.seconds * 1000)) * NS_PER_MS;
  const task = async (i) => {
    const locker = makeLocker(`${args.prefix}s2:${i}`, "s2");
    let n = 0;
    while (n < perTaskCap && now() < recEnd) {
      await locker.lock();
      await locker.unlock();
      const done = now();
      if (done > recStart && done <= recEnd) n++;
    }
    return n;
  };
  log(`s2: ${c} async tasks (${WARMUP_MS} ms warm-up + ${args.seconds} s recorded)`);
  const counts = await Promise.all(Array.from({ length: c }, (_, i) => task(i)));
  const pairs = counts.reduce((a, b) => a + b, 0);
  return {
    extra: { key_pattern: `${args.prefix}s2:<i>`, per_task_cap: perTaskCap },
    metrics: { pairs, pairs_per_s: Math.round((pairs / args.seconds) * 10) / 10, concurrency: c },
  };
}

async function runS3(args, makeLocker) {
  const key = `${args.prefix}${args.key}`;
  const locker = makeLocker(key, "s3");
  const end = now() + BigInt(Math.round(args.seconds * 1000)) * NS_PER_MS;
  giveUpAt = end + BigInt(ACQUIRE_GRACE_MS) * NS_PER_MS;
  const lines = [];
  let gaveUp = 0;
  while (lines.length < S3_MAX_ACQUISITIONS && now() < end) {
    try {
      await locker.lock();
    } catch (e) {
      if (now() < end) throw e;
      gaveUp = 1; // still waiting when the run ended: written down, not a crash
      log(`s3: an acquire still waiting at the end of the run gave up: ${e && e.message}`);
      break;
    }
    const tAcq = now();
    await sleep(1);
    const tRel = now();
    await locker.unlock();
    lines.push(`${tAcq} ${tRel}\n`);
    await sleep(1);
  }
  writeFileSync(args.out, lines.join(""));
  return {
    extra: { key, hold_ms: 1, outside_ms: 1, out: args.out },
    metrics: { acquisitions: lines.length, gave_up: gaveUp },
  };
}

// library: name for the JSON; setup(client, args, clients) -> { makeLocker, params }; clients:
// one per --ports entry (Q1's quorum form), empty without it.
export async function runDriver(library, setup) {
  const args = parseDriverArgs(library);
  startWatchdog(args.seconds);
  const client = await connect(args.port);
  const clients = [];
  for (const p of args.ports) clients.push(await connect(p));
  const { makeLocker, params: libParams } = setup(client, args, clients);
  let result;
  try {
    if (args.mode === "s1") result = await runS1(args, makeLocker);
    else if (args.mode === "s2") result = await runS2(args, makeLocker);
    else result = await runS3(args, makeLocker);
  } catch (e) {
    fail(`${args.mode}: ${e && e.stack ? e.stack : e}`);
  }
  const params = {
    seconds: args.seconds,
    prefix: args.prefix,
    lease_ms: LEASE_MS,
    node: process.versions.node,
    connections: 1 + clients.length,
    ...(clients.length ? { nodes: clients.length, tuned: args.tuned } : {}),
    ...libParams,
  };
  if (args.mode !== "s3-worker") params.warmup_ms = WARMUP_MS;
  if (args.mode === "s2") params.concurrency = args.concurrency;
  Object.assign(params, result.extra);
  process.stdout.write(
    JSON.stringify({ library, mode: args.mode, params, metrics: result.metrics }) + "\n");
  for (const c of [client, ...clients]) await c.quit().catch(() => c.disconnect());
}

// installed version of a dependency (read from node_modules, as package "exports" may hide it)
export function pkgVersion(name) {
  try {
    const url = new URL(`./node_modules/${name}/package.json`, import.meta.url);
    return JSON.parse(readFileSync(url, "utf8")).version.replace(/^v/, "");
  } catch {
    return null;
  }
}
