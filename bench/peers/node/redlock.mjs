#!/usr/bin/env node
// Benchmark driver for npm `redlock` v5 with a single ioredis client (see bench/DRIVERS.md).
//
//   node bench/peers/node/redlock.mjs <s1|s2|s3-worker> --port PORT [--seconds S]
//        [--concurrency C] [--key KEY] [--out FILE] [--prefix P] [--ports P1,P2,... [--tuned]]
//
// Waiting strategy of the library: `acquire` runs a Lua SET-NX script; on failure it sleeps
// retryDelay +/- retryJitter ms (defaults 200 +/- 100) and retries, up to retryCount times.
// We keep those defaults and only raise retryCount so an acquire never gives up during a run.
// --ports (Q1): the Redlock over one ioredis client per server, as the library is meant to be
// used; --tuned: retryDelay 2 ms +/- 1 ms, about the shortest sleep a poller can ask for.

import Redlock, { ExecutionError } from "redlock";
import { runDriver, LEASE_MS, ACQUIRE_GRACE_MS, pkgVersion, now, acquireDeadline } from "./common.mjs";

const DRIFT_FACTOR = 0.01; // redlock default
const DEFAULT_RETRY_COUNT = 10; // redlock default

await runDriver("redlock", (client, args, clients) => {
  const RETRY_DELAY_MS = args.tuned ? 2 : 200; // redlock default 200
  const RETRY_JITTER_MS = args.tuned ? 1 : 100; // redlock default 100
  // enough retries to keep trying (at the shortest jittered delay) until the end of the run
  // plus a grace period; the watchdog in common.mjs bounds the process anyway.
  const retryCount = Math.ceil(
    (args.seconds * 1000 + ACQUIRE_GRACE_MS) / (RETRY_DELAY_MS - RETRY_JITTER_MS));
  const redlock = new Redlock(clients.length ? clients : [client], {
    driftFactor: DRIFT_FACTOR,
    retryCount,
    retryDelay: RETRY_DELAY_MS,
    retryJitter: RETRY_JITTER_MS,
  });
  const makeLocker = (key) => {
    let lock = null;
    return {
      async lock() {
        // In s3, acquire() with the library's own retryCount (10), called again on its
        // ExecutionError until the run's deadline, as a caller of the defaults would: redlock
        // gives back what a failed acquire took on a minority of nodes only when its retries are
        // spent, so one long retry window lets contenders that split the votes hold each other
        // off until the lease ends.
        for (;;) {
          const deadline = acquireDeadline();
          try {
            lock = await redlock.acquire([key], LEASE_MS,
              deadline === null ? undefined : { retryCount: DEFAULT_RETRY_COUNT });
            return;
          } catch (e) {
            if (deadline === null || !(e instanceof ExecutionError) || now() >= deadline) throw e;
          }
        }
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
