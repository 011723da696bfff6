#!/usr/bin/env node
// Benchmark driver for npm `redlock` v5 with a single ioredis client (see bench/DRIVERS.md).
//
//   node bench/peers/node/redlock.mjs <s1|s2|s3-worker> --port PORT [--seconds S]
//        [--concurrency C] [--key KEY] [--out FILE] [--prefix P]
//
// Waiting strategy of the library: `acquire` runs a Lua SET-NX script; on failure it sleeps
// retryDelay +/- retryJitter ms (defaults 200 +/- 100) and retries, up to retryCount times.
// We keep those defaults and only raise retryCount so an acquire never gives up during a run.

import Redlock from "redlock";
import { runDriver, LEASE_MS, ACQUIRE_GRACE_MS, pkgVersion } from "./common.mjs";

const RETRY_DELAY_MS = 200; // redlock default
const RETRY_JITTER_MS = 100; // redlock default
const DRIFT_FACTOR = 0.01; // redlock default

await runDriver("redlock", (client, args) => {
  // enough retries to keep trying (at the shortest jittered delay) until the end of the run
  // plus a grace period; the watchdog in common.mjs bounds the process anyway.
  const retryCount = Math.ceil(
    (args.seconds * 1000 + ACQUIRE_GRACE_MS) / (RETRY_DELAY_MS - RETRY_JITTER_MS));
  const redlock = new Redlock([client], {
    driftFactor: DRIFT_FACTOR,
    retryCount,
    retryDelay: RETRY_DELAY_MS,
    retryJitter: RETRY_JITTER_MS,
  });
  const makeLocker = (key) => {
    let lock = null;
    return {
      async lock() {
        lock = await redlock.acquire([key], LEASE_MS);
      },
      async unlock() {
        await lock.release();
        lock = null;
      },
    };
  };
  return {
    makeLocker,
    params: {
      retry_count: retryCount,
      retry_delay_ms: RETRY_DELAY_MS,
      retry_jitter_ms: RETRY_JITTER_MS,
      drift_factor: DRIFT_FACTOR,
      redlock_version: pkgVersion("redlock"),
      ioredis_version: pkgVersion("ioredis"),
    },
  };
});
