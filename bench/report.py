#!/usr/bin/python3
"""Turns a directory of raw benchmark results into bench/results/latest.{json,md} and the data
files bench/plot.gp draws (issue #3). Python 3 standard library only.

    /usr/bin/python3 bench/report.py RAW_DIR [--out DIR]

RAW_DIR is what scripts/bench leaves in bench/results/raw/:

  runs.jsonl      one JSON object per line, one per driver process or reference run:
                  {"id", "scenario" (REF, S1 ... S7), "library", "mode", "params": {...},
                   "exit", "elapsed_s", "stdout", "stderr", "command",
                   S3 workers also "group", "worker", "events";
                   a library that could not run: {"status": "unavailable", "library", "reason"}}
  <id>.out        the driver's stdout (its one JSON line) or redis-benchmark's --csv output
  <id>.err        its stderr
  <id>.events     an s3 worker's acquisitions: "<t_acq_ns> <t_rel_ns>" per line
  machine.txt     key=value lines (nproc, cpu_model, kernel, redis_version, date, command, ...)

Every file is optional: a missing scenario is reported as "not run". Goals are evaluated as a
ratio to a reference measured in the same run and reported PASS / FAIL / n/a; they never change
the exit status. The goals over TLS hold rlock's TLS/plaintext ratio to redis-benchmark's, both
from the same run: each EVALSHA reference has a twin over TLS ("<mode>_tls", params.tls = 1,
the same command and settings on the server's tls-port), run right after it. Exit status: 0, or
3 when a driver crashed (a run that did not exit 0 or printed no JSON) or an S3 run saw two
holders at once (an overlap); 2 on bad usage.
"""

import argparse
import csv
import json
import math
import os
import platform
import statistics
import sys

# A library's place in LIBRARIES is its line style in bench/plot.gp (styles 1 to 6).
LIBRARIES = ["rlock", "rlock-blocking", "redis-py", "redis-py-tuned", "redlock", "redis-semaphore"]
PEERS = ["redis-py", "redis-py-tuned", "redlock", "redis-semaphore"]
# rlock's other exclusive kinds (issue 25), each with the --kind its driver ran with: scripts/bench
# runs them in S1 and S3 only, so they are not in LIBRARIES (S2, the plots) but in S1_S3_LIBRARIES,
# right after the reentrant lock they are set against.
KINDS = {"rlock-fair": "fair", "rlock-nonreentrant": "non-reentrant", "rlock-spin": "spin",
         "rlock-rw": "write", "rlock-multi": "multi", "rlock-semaphore": "semaphore"}
S1_S3_LIBRARIES = ["rlock"] + list(KINDS) + [l for l in LIBRARIES if l not in ("rlock", "rlock-blocking")]
SCENARIOS = {
    "S1": "S1: uncontended lock+unlock latency (one task, one key)",
    "S2": "S2: throughput, C concurrent tasks on their own keys",
    "S3": "S3: handoff between P processes contending for one key (hold 1 ms, 1 ms outside)",
    "S4": "S4: fan-out, Redis commands per handoff with W local waiters (rlock)",
    "S5": "S5: watchdog scale, N held locks (rlock)",
    "S6": "S6: waiter scale, N waiters on K names (rlock)",
    "S7": "S7: blocking facade vs coroutines (rlock-blocking)",
    "S8": "S8: recovery after faults, and the holder's lost() margin (rlock)",
    "S9": "S9: Redis Cluster, 3 masters against one node in the same run (rlock)",
    "F1": "F1: the lock family in its users' shape (5 processes, 50 ms holds; rlock)",
    "M1": "M1: a multi-lock of ten locks against one lock, one node and a 3-master cluster (rlock)",
    "Q1": "Q1: the quorum lock over 3 and 5 independent servers, against one node and the Redlock peers",
    "E1": "E1: an election's failover, by resignation and by SIGKILL, N candidates and an observer (rlock)",
}
E1_HANDOVER_GOAL = 2.0  # issue 53: a resignation hands over within 2 x an S3 handoff at P = 8
E1_OBSERVER_GOAL_US = 1000.0  # issue 53: observers told within 1 ms p50 of the new leader's answer
E1_WATCHDOG_PERIODS = 2  # issue 53: a SIGKILLed leader replaced within its lease + 2 periods
Q1_S1_GOAL = 1.3  # issue 52: S1 at N = 3 against the one-node lock's
Q1_S3_GOAL = 0.25  # issue 52: S3 handoff p50 against the best Redlock peer's, every P
# issue 37: a multi-lock of ten free reentrant locks, lock+unlock p50 against one lock's S1.
M1_GOALS = {"one": 2.0, "cluster": 2.5}
F1_HANDOFF_GOAL_MS = 0.3  # issue 37: the reentrant, fair and read-write kinds'
F1_PROCESSES = 5  # F1's processes per exclusive kind (its writers, for the read-write lock)
F1_RUN_NAMES = {"reentrant": "reentrant", "fair": "fair", "rw-writers": "read-write (writers first)",
                "rw-readers": "read-write (readers first: Redisson's rule)",
                "semaphore": "semaphore (2 permits)", "multi": "multi-lock (3 members)",
                "latch": "count-down latch (5 waiters)"}
PLOT_P = 4  # handoff_latency.png shows S3 at this P (or the nearest one that ran)
CDF_POINTS = 400


# --- small helpers ------------------------------------------------------------------------------


def percentile(sorted_vals, p):
    """Nearest-rank percentile of an ascending list (as the drivers compute theirs)."""
    n = len(sorted_vals)
    if n == 0:
        return None
    rank = max(1, int(math.ceil(p / 100.0 * n)))
    return sorted_vals[min(rank, n) - 1]


def num(v, digits=3):
    """A number for a table: a few significant digits, no exponent for everyday sizes."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return "{:,}".format(v).replace(",", " ")
    if not isinstance(v, float):
        return str(v)
    if math.isnan(v) or math.isinf(v):
        return str(v)
    if v == 0:
        return "0"
    mag = abs(v)
    if mag >= 10 ** digits:
        return "{:,.0f}".format(v).replace(",", " ")
    decimals = max(0, digits - 1 - int(math.floor(math.log10(mag))))
    return "{:.{}f}".format(v, decimals)


def read_text(path, limit=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read() if limit is None else f.read(limit)
    except OSError:
        return None


def last_line(text):
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return lines[-1] if lines else ""


def md_escape(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(md_escape(c) for c in r) + " |")
    return "\n".join(out)


# --- loading ------------------------------------------------------------------------------------


def load_manifest(raw):
    entries = []
    path = os.path.join(raw, "runs.jsonl")
    text = read_text(path)
    if text is None:
        return entries
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            entries.append(json.loads(line))
        except ValueError as exc:
            sys.stderr.write("report: %s:%d: bad JSON (%s), line ignored\n" % (path, n, exc))
    return entries


def load_machine(raw):
    info = {}
    text = read_text(os.path.join(raw, "machine.txt")) or ""
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            info[k.strip()] = v.strip()
    # Fill what the orchestrator did not write (e.g. a hand-made raw directory).
    info.setdefault("nproc", str(os.cpu_count()))
    if "cpu_model" not in info:
        for line in (read_text("/proc/cpuinfo") or "").splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    info.setdefault("kernel", platform.release())
    return info


def driver_output(raw, entry):
    """(json object or None, failure reason or None) for one driver run."""
    out_text = read_text(os.path.join(raw, entry.get("stdout", ""))) if entry.get("stdout") else None
    obj = None
    for line in reversed((out_text or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
                break
            except ValueError:
                continue
    code = entry.get("exit")
    if code not in (0, None) or obj is None or not isinstance(obj.get("metrics"), dict):
        err = read_text(os.path.join(raw, entry.get("stderr", "")), 200000) if entry.get("stderr") else ""
        why = "exit %s" % code if code not in (0, None) else "no JSON result on stdout"
        if code == 124 or code == 137:
            why += " (killed by the orchestrator's time limit)"
        tail = last_line(err)
        if tail:
            why += ": " + tail[:300]
        return obj, why
    return obj, None


def read_benchmark_csv(raw, entry):
    """redis-benchmark --csv: a header row and one data row. Returns (row dict, failure)."""
    text = read_text(os.path.join(raw, entry.get("stdout", ""))) if entry.get("stdout") else None
    if entry.get("exit") not in (0, None) or not text:
        err = read_text(os.path.join(raw, entry.get("stderr", ""))) if entry.get("stderr") else ""
        return None, "exit %s: %s" % (entry.get("exit"), last_line(err)[:300])
    rows = list(csv.reader(text.splitlines()))
    rows = [r for r in rows if r]
    if len(rows) < 2:
        return None, "no CSV data row"
    header = rows[0]
    data = rows[-1]
    row = dict(zip(header, data))
    out = {"test": row.get("test")}
    for k, v in row.items():
        if k == "test":
            continue
        try:
            out[k] = float(v)
        except ValueError:
            out[k] = v
    if "p50_latency_ms" not in out or "rps" not in out:
        return None, "CSV lacks rps/p50_latency_ms (redis-benchmark older than 7?)"
    return out, None


def read_events(path):
    events = []
    text = read_text(path)
    if text is None:
        return None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2:
            continue
        try:
            events.append((int(parts[0]), int(parts[1])))
        except ValueError:
            continue
    return events


# --- S3 statistics ------------------------------------------------------------------------------


def s3_stats(per_worker):
    """per_worker: list of event lists [(t_acq_ns, t_rel_ns)], one per process."""
    events = []
    for w, evs in enumerate(per_worker):
        for a, r in evs:
            events.append((a, r, w))
    events.sort()
    n = len(events)
    gaps_us = []
    overlaps = 0
    max_overlap_us = 0.0
    max_rel = None
    prev = None
    for a, r, w in events:
        if prev is not None:
            if a < max_rel:  # acquired while an earlier holder had not released yet
                overlaps += 1
                max_overlap_us = max(max_overlap_us, (max_rel - a) / 1000.0)
            if w != prev[2]:  # a handoff: another process takes the lock after a release
                gaps_us.append((a - prev[1]) / 1000.0)
        max_rel = r if max_rel is None else max(max_rel, r)
        prev = (a, r, w)
    # Acquisitions per second over the window in which every process was running, if it is
    # long enough; otherwise over the whole span.
    rate = None
    window_s = None
    active = [evs for evs in per_worker if evs]
    if n:
        lo = max(min(a for a, _ in evs) for evs in active)
        hi = min(max(r for _, r in evs) for evs in active)
        if hi - lo > 200_000_000:
            window_s = (hi - lo) / 1e9
            rate = sum(1 for a, _, _ in events if lo <= a <= hi) / window_s
        else:
            span = (max(r for _, r, _ in events) - events[0][0]) / 1e9
            if span > 0:
                window_s = span
                rate = n / span
    gaps_sorted = sorted(gaps_us)
    return {
        "processes": len(per_worker),
        "processes_with_acquisitions": len(active),
        "acquisitions": n,
        "acquisitions_per_s": rate,
        "rate_window_s": window_s,
        "handoffs": len(gaps_us),
        "handoff_share": (len(gaps_us) / (n - 1)) if n > 1 else None,
        "gap_p50_us": percentile(gaps_sorted, 50),
        "gap_p90_us": percentile(gaps_sorted, 90),
        "gap_p99_us": percentile(gaps_sorted, 99),
        "gap_max_us": gaps_sorted[-1] if gaps_sorted else None,
        "gap_mean_us": (sum(gaps_sorted) / len(gaps_sorted)) if gaps_sorted else None,
        "overlaps": overlaps,
        "max_overlap_us": max_overlap_us,
    }, gaps_sorted


# --- goals --------------------------------------------------------------------------------------


def compare(value, op, limit):
    if op == "<=":
        return value <= limit
    if op == "<":
        return value < limit
    if op == ">=":
        return value >= limit
    if op == ">":
        return value > limit
    if op == "==":
        return value == limit
    raise ValueError(op)


def goal(scenario, what, figure, value, reference, ref_value, op, limit):
    """figure op limit x reference (or figure op limit when reference is None)."""
    g = {
        "scenario": scenario,
        "goal": what,
        "figure": figure,
        "value": value,
        "reference": reference,
        "reference_value": ref_value,
        "ratio": None,
        "op": op,
        "limit": limit,
        "verdict": "n/a",
    }
    if value is None or (reference is not None and not ref_value):
        return g
    if reference is None:
        g["verdict"] = "PASS" if compare(value, op, limit) else "FAIL"
    else:
        g["ratio"] = value / ref_value
        g["verdict"] = "PASS" if compare(g["ratio"], op, limit) else "FAIL"
    return g


def reported(scenario, what, figure, value, reference, ref_value):
    """figure / reference reported beside the goals with no limit, so no verdict: "reported"
    (n/a when a figure is missing). The same record as goal()'s, without a limit."""
    g = goal(scenario, what, figure, None, reference, ref_value, None, None)
    g["value"] = value
    if value is not None and ref_value:
        g["ratio"] = value / ref_value
        g["verdict"] = "reported"
    return g


# --- the report ---------------------------------------------------------------------------------


class Report:
    def __init__(self, raw):
        self.raw = raw
        self.machine = load_machine(raw)
        self.manifest = load_manifest(raw)
        self.unavailable = {}  # library -> reason
        self.failures = []  # crashed drivers / references
        self.notes = []
        self.refs = {}  # mode -> {"row", "command", "failure"}
        self.runs = {s: [] for s in SCENARIOS}  # scenario -> [run dict]
        self.s3 = {}  # (scenario, library, P) -> {"stats", "gaps", "workers", ...}
        self.goals = []
        self.raw_outputs = []
        self._load()

    def _load(self):
        groups = {}
        for e in self.manifest:
            if e.get("status") == "unavailable":
                self.unavailable[e.get("library", "?")] = e.get("reason", "")
                continue
            scenario = e.get("scenario")
            if scenario == "REF":
                row, why = read_benchmark_csv(self.raw, e)
                self.refs[e.get("mode")] = {"row": row, "failure": why, "command": e.get("command"),
                                            "requests": e.get("params", {}).get("requests")}
                self.raw_outputs.append(dict(e, csv_row=row, failure=why))
                if why:
                    self.failures.append("reference %s: %s" % (e.get("mode"), why))
                continue
            obj, why = driver_output(self.raw, e)
            self.raw_outputs.append(dict(e, output=obj, failure=why))
            kind = KINDS.get(e.get("library"))
            if kind and obj and (obj.get("params") or {}).get("kind") != kind:
                # An rlock_bench that ignored --kind would pass the reentrant lock off as this kind.
                self.notes.append("%s %s (%s): the driver's result is for kind %s, not %s" % (
                    scenario, e.get("library"), e.get("id"),
                    (obj.get("params") or {}).get("kind", "reentrant"), kind))
            if why:
                self.failures.append("%s %s (%s): %s" % (scenario, e.get("library"), e.get("id"), why))
            if e.get("group"):
                groups.setdefault(e["group"], []).append((e, obj, why))
            elif scenario in self.runs:
                self.runs[scenario].append({"entry": e, "output": obj, "failure": why})
            err = read_text(os.path.join(self.raw, e.get("stderr", "")), 2_000_000) if e.get("stderr") else ""
            if err and "LOST LOCKS" in err:
                self.notes.append("%s (%s): the driver reported lost locks" % (scenario, e.get("id")))
        for gid, workers in sorted(groups.items()):
            e0 = workers[0][0]
            scenario = e0.get("scenario")
            library = e0.get("library")
            p = int(e0.get("params", {}).get("processes", len(workers)))
            # Q1's groups: one per node count and retry setting (scenario "Q1/n3", "redlock-tuned").
            gp = e0.get("params", {})
            if gp.get("nodes") is not None:
                scenario = "%s/n%s" % (scenario, gp["nodes"])
            if gp.get("tuned") == 1:
                library = library + "-tuned"
            per_worker = []
            missing = []
            for e, _, why in sorted(workers, key=lambda t: t[0].get("worker", 0)):
                evs = read_events(os.path.join(self.raw, e.get("events", ""))) if e.get("events") else None
                if evs is None:
                    missing.append(e.get("id"))
                    evs = []
                per_worker.append(evs)
            stats, gaps = s3_stats(per_worker)
            reasons = [w[2] for w in workers if w[2]]
            failure = None
            if reasons:
                failure = "%d of %d processes failed: %s" % (
                    len(reasons), len(workers), "; ".join(sorted(set(reasons))))
            if missing and not failure:
                failure = "missing event files: " + ", ".join(missing)
                self.failures.append("%s %s P=%d: %s" % (scenario, library, p, failure))
            self.s3[(scenario, library, p)] = {"group": gid, "stats": stats, "gaps": gaps,
                                               "failure": failure,
                                               "seconds": e0.get("params", {}).get("seconds")}

    # -- references --
    def ref(self, mode, field):
        r = self.refs.get(mode)
        if not r or not r["row"]:
            return None
        v = r["row"].get(field)
        return v if isinstance(v, float) else None

    def tls_ratio(self, mode, field):
        """redis-benchmark's TLS/plaintext ratio of FIELD: the twin MODE_tls over MODE, both from
        this run. Returns (ratio, None), or (None, why it is missing)."""
        values = []
        for m in (mode, mode + "_tls"):
            r = self.refs.get(m)
            if not r:
                return None, "reference %s not run" % m
            if r["failure"]:
                return None, "reference %s failed" % m
            v = self.ref(m, field)
            if not v:
                return None, "reference %s has no %s" % (m, field)
            values.append(v)
        return values[1] / values[0], None

    def ping_p50_us(self, mode="ping"):
        # S3 is set against the PING measured right before it ("ping_s3"): a run takes minutes
        # and this shared machine drifts; the first PING stands in if that one is missing.
        v = self.ref(mode, "p50_latency_ms")
        if v is None and mode != "ping":
            v = self.ref("ping", "p50_latency_ms")
        return v * 1000.0 if v is not None else None

    # -- lookups --
    def metric(self, scenario, library, mode=None, **params):
        for run in self.runs[scenario]:
            e = run["entry"]
            if e.get("library") != library or (mode and e.get("mode") != mode):
                continue
            if any(e.get("params", {}).get(k) != v for k, v in params.items()):
                continue
            return run["output"]["metrics"] if run["output"] and not run["failure"] else None
        return None

    def status(self, library):
        if library in self.unavailable:
            return "unavailable: " + self.unavailable[library]
        return None

    # -- scenario sections: each returns (markdown, json dict) and appends goals --
    def section_refs(self):
        rows = []
        out = {}
        names = {"ping": "PING round trip (-c 1 -P 1)",
                 "ping_s3": "PING round trip (-c 1 -P 1), right before S3",
                 "evalsha_c1": "EVALSHA acquire script (-c 1 -P 1)",
                 "evalsha_c1_tls": "EVALSHA acquire script (-c 1 -P 1) over TLS",
                 "evalsha_c50": "EVALSHA acquire script (-c 50 -P 16)",
                 "evalsha_c50_tls": "EVALSHA acquire script (-c 50 -P 16) over TLS"}
        for mode in ("ping", "evalsha_c1", "evalsha_c1_tls", "evalsha_c50", "evalsha_c50_tls",
                     "ping_s3"):
            r = self.refs.get(mode)
            if not r:
                # The twins over TLS run only with S1 or S2 over TLS.
                rows.append([names[mode], "—", "—", "—", "—",
                             "not run (runs with S1 or S2 over TLS)" if mode.endswith("_tls")
                             else "not run"])
                continue
            row = r["row"] or {}
            p50 = row.get("p50_latency_ms")
            p99 = row.get("p99_latency_ms")
            rows.append([names[mode], num(r.get("requests")), num(row.get("rps")),
                         num(p50 * 1000 if isinstance(p50, float) else None),
                         num(p99 * 1000 if isinstance(p99, float) else None),
                         "failed: " + r["failure"] if r["failure"] else "ok"])
            out[mode] = {"command": r["command"], "requests": r.get("requests"), "csv": r["row"],
                         "failure": r["failure"]}
            if mode.endswith("_tls"):
                plain = mode[:-len("_tls")]
                out[mode]["ratio_to_plaintext"] = {
                    "p50": self.tls_ratio(plain, "p50_latency_ms")[0],
                    "rps": self.tls_ratio(plain, "rps")[0]}
        md = "## References (redis-benchmark, same server, same run)\n\n" + table(
            ["reference", "requests", "ops/s", "p50 µs", "p99 µs", "status"], rows)
        twins = []
        for mode, flags in (("evalsha_c1", "-c 1 -P 1"), ("evalsha_c50", "-c 50 -P 16")):
            p50, _ = self.tls_ratio(mode, "p50_latency_ms")
            rps, _ = self.tls_ratio(mode, "rps")
            if p50 or rps:
                twins.append("EVALSHA %s: p50 %s ×, ops/s %s × plaintext" % (
                    flags, ("%.2f" % p50) if p50 else "n/a", ("%.2f" % rps) if rps else "n/a"))
        if twins:
            md += ("\n\nOver TLS, each twin right after its plaintext partner (the same command and "
                   "settings on the server's tls-port, `--tls --cacert`): " + "; ".join(twins) + ".\n")
        return md, out

    def section_s1(self):
        rows, data = [], {}
        ev = self.ref("evalsha_c1", "p50_latency_ms")
        for lib in S1_S3_LIBRARIES:
            m = self.metric("S1", lib, "s1")
            run = self._find("S1", lib)
            if lib in KINDS and not m and not run and not self.status(lib):
                continue  # a run from before issue 25, or without these kinds: no empty rows
            st = "ok" if m else (("failed: " + run["failure"]) if run and run["failure"] else
                                 (self.status(lib) or "not run"))
            data[lib] = m if m else {"status": st}
            p50 = m and m.get("p50_us")
            rows.append([lib, num(m and m.get("pairs")), num(p50),
                         num(m and m.get("p90_us")), num(m and m.get("p99_us")),
                         num(m and m.get("max_us")), num(m and m.get("mean_us")),
                         num(p50 / (ev * 1000)) if p50 and ev else "—", st])
        md = table(["library", "pairs", "p50 µs", "p90 µs", "p99 µs", "max µs", "mean µs",
                    "p50 / EVALSHA p50", "status"], rows)
        md += self.tls_s1(data)
        r = data.get("rlock", {})
        self.goals.append(goal("S1", "rlock p50 ≤ 2.1 × EVALSHA(-c1 -P1) p50", "rlock p50 µs",
                               r.get("p50_us"), "EVALSHA -c1 p50 µs", ev * 1000 if ev else None, "<=", 2.1))
        # The floor of rlock's own two commands: one blocking thread sending exactly its acquire
        # and release EVALSHAs (S7's floor at T=1, same run). The release script does more than the
        # acquire one (a latch, a publish), so two EVALSHA round trips of the acquire are not it.
        floor = None
        for run in self.runs.get("S7", []):
            e = run["entry"]
            if (e.get("mode") == "s7-floor" and e.get("params", {}).get("threads") == 1
                    and run["output"] and not run["failure"]):
                floor = run["output"]["metrics"].get("p50_us")
        if floor and ev and r.get("p50_us"):
            md += ("\nThe floor of rlock's own commands, same run (`rlock_bench s7-floor --threads 1`: "
                   "one blocking connection sending exactly rlock's acquire and release EVALSHAs, no "
                   "client logic): p50 %s µs = **%.2f × EVALSHA**; rlock's p50 = **%.2f × that floor**.\n"
                   % (num(floor), floor / (ev * 1000), r["p50_us"] / floor))
            data["floor_p50_us"] = floor
        peers = [(data[p]["p50_us"], p) for p in PEERS if data.get(p, {}).get("p50_us")]
        if peers:
            best, name = min(peers)
            self.goals.append(goal("S1", "rlock p50 below every peer's", "rlock p50 µs", r.get("p50_us"),
                                   "fastest peer p50 µs (%s)" % name, best, "<", 1.0))
        else:
            self.goals.append(goal("S1", "rlock p50 below every peer's", "rlock p50 µs", r.get("p50_us"),
                                   "fastest peer p50 µs (none ran)", None, "<", 1.0))
        self.tls_s1_goal(data)
        return md, data

    def tls_s1(self, data):
        """S1 over TLS (the same server's tls-port, same run) as a ratio to plaintext S1, beside
        redis-benchmark's EVALSHA (-c 1 -P 1) TLS/plaintext ratio from the same run."""
        t = self.metric("S1", "rlock-tls", "s1")
        plain = data.get("rlock", {}).get("p50_us")
        if not t or not t.get("p50_us"):
            return ""
        data["rlock-tls"] = t
        ratio = t["p50_us"] / plain if plain else None
        ref_ratio, ref_why = self.tls_ratio("evalsha_c1", "p50_latency_ms")
        data["rlock-tls"]["ratio_to_plaintext_p50"] = ratio
        data["rlock-tls"]["reference_ratio_to_plaintext_p50"] = ref_ratio
        return ("\n\nOver TLS (the same server's tls-port, same run): p50 %s µs, p99 %s µs, "
                "%s pairs = **%s × plaintext p50**; redis-benchmark's EVALSHA (-c 1 -P 1) over TLS: "
                "%s.\n" %
                (num(t["p50_us"]), num(t.get("p99_us")), num(t.get("pairs")),
                 ("%.2f" % ratio) if ratio else "n/a",
                 ("%.2f × its plaintext p50" % ref_ratio) if ref_ratio else "n/a (%s)" % ref_why))

    def tls_why(self, scenario, plain, tls, **params):
        """Why rlock's TLS/plaintext ratio in SCENARIO is missing ("" when both runs gave one)."""
        for lib, what, value in (("rlock-tls", "over TLS", tls), ("rlock", "in plaintext", plain)):
            if value:
                continue
            run = self._find(scenario, lib, **params)
            if run and run["failure"]:
                return "rlock %s failed" % what
            return "rlock %s not run" % what if not run else "rlock %s gave no figure" % what
        return ""

    def tls_s1_goal(self, data):
        """S1 over TLS: rlock's TLS/plaintext p50 ratio against redis-benchmark's at -c 1 -P 1
        (its EVALSHA reference and that reference's twin over TLS)."""
        t = self.metric("S1", "rlock-tls", "s1") or {}
        plain = data.get("rlock", {}).get("p50_us")
        ratio = t["p50_us"] / plain if t.get("p50_us") and plain else None
        why = self.tls_why("S1", plain, t.get("p50_us"), mode="s1")
        ref_ratio, ref_why = self.tls_ratio("evalsha_c1", "p50_latency_ms")
        self.goals.append(goal(
            "S1", "S1 over TLS: rlock's TLS/plaintext p50 ratio ≤ 1.1 × redis-benchmark's "
            "(-c 1 -P 1) TLS/plaintext p50 ratio",
            "rlock TLS/plaintext p50" + (" (n/a: %s)" % why if why else ""), ratio,
            "EVALSHA -c1 -P1 TLS/plaintext p50" + (" (n/a: %s)" % ref_why if ref_why else ""),
            ref_ratio, "<=", 1.1))

    def tls_s2(self, cs, data):
        """S2 over TLS at each concurrency measured, as ratios to plaintext S2, beside
        redis-benchmark's EVALSHA (-c 50 -P 16) TLS/plaintext throughput ratio."""
        parts, tls = [], {}
        for c in cs:
            m = self.metric("S2", "rlock-tls", "s2", concurrency=c)
            plain = data.get("rlock", {}).get(str(c))
            if not m or not m.get("pairs_per_s"):
                continue
            tls[str(c)] = m["pairs_per_s"]
            ratio = m["pairs_per_s"] / plain if plain else None
            parts.append("C=%d: %s pairs/s = **%s × plaintext**" %
                         (c, num(m["pairs_per_s"]), ("%.2f" % ratio) if ratio else "n/a"))
        if not parts:
            return ""
        data["rlock-tls"] = tls
        ref_ratio, ref_why = self.tls_ratio("evalsha_c50", "rps")
        return ("\n\nOver TLS (same run): " + "; ".join(parts) + "; redis-benchmark's EVALSHA "
                "(-c 50 -P 16) over TLS: %s.\n"
                % (("%.2f × its plaintext ops/s" % ref_ratio) if ref_ratio else "n/a (%s)" % ref_why))

    def tls_s2_goal(self, top, data):
        """S2 over TLS at the largest C: rlock's TLS/plaintext pairs/s ratio against
        redis-benchmark's at -c 50 -P 16 (its EVALSHA reference and that reference's twin)."""
        plain = data.get("rlock", {}).get(str(top))
        tls = data.get("rlock-tls", {}).get(str(top))
        ratio = tls / plain if tls and plain else None
        why = self.tls_why("S2", plain, tls, mode="s2", concurrency=top)
        ref_ratio, ref_why = self.tls_ratio("evalsha_c50", "rps")
        self.goals.append(goal(
            "S2", "S2 C=%d over TLS: rlock's TLS/plaintext throughput ratio ≥ 0.9 × redis-benchmark's "
            "(-c 50 -P 16) TLS/plaintext throughput ratio" % top,
            "rlock C=%d TLS/plaintext pairs/s" % top + (" (n/a: %s)" % why if why else ""), ratio,
            "EVALSHA -c50 -P16 TLS/plaintext ops/s" + (" (n/a: %s)" % ref_why if ref_why else ""),
            ref_ratio, ">=", 0.9))

    def _find(self, scenario, library, mode=None, **params):
        for run in self.runs[scenario]:
            e = run["entry"]
            p = e.get("params", {})
            if e.get("library") != library or (mode and e.get("mode") != mode):
                continue
            if all(p.get(k) == v for k, v in params.items()):
                return run
        return None

    def section_s2(self):
        cs = sorted({run["entry"].get("params", {}).get("concurrency") for run in self.runs["S2"]
                     if isinstance(run["entry"].get("params", {}).get("concurrency"), int)})
        rows, data = [], {}
        for lib in LIBRARIES:
            if lib == "rlock-blocking":
                continue
            row = [lib]
            data[lib] = {}
            notes = []
            for c in cs:
                m = self.metric("S2", lib, "s2", concurrency=c)
                run = self._find("S2", lib, "s2", concurrency=c)
                if m:
                    data[lib][str(c)] = m.get("pairs_per_s")
                elif run and run["failure"]:
                    notes.append("C=%d failed: %s" % (c, run["failure"]))
                row.append(num(m and m.get("pairs_per_s")))
            st = "; ".join(notes) if notes else ("ok" if data[lib] else (self.status(lib) or "not run"))
            row.append(st)
            rows.append(row)
        md = table(["library"] + ["C=%d pairs/s" % c for c in cs] + ["status"], rows)
        md += self.tls_s2(cs, data)
        top = max(cs) if cs else 256
        r = data.get("rlock", {}).get(str(top))
        ev = self.ref("evalsha_c50", "rps")
        self.goals.append(goal("S2", "rlock pairs/s at C=%d ≥ 0.4 × EVALSHA(-c50 -P16) ops/s" % top,
                               "rlock C=%d pairs/s" % top, r, "EVALSHA -c50 -P16 ops/s", ev, ">=", 0.4))
        peers = [(v, "%s C=%s" % (p, c)) for p in PEERS for c, v in data.get(p, {}).items() if v]
        best = max(peers) if peers else (None, "none ran")
        self.goals.append(goal("S2", "rlock pairs/s at C=%d ≥ 1.5 × best peer (best C)" % top,
                               "rlock C=%d pairs/s" % top, r, "best peer pairs/s (%s)" % best[1], best[0],
                               ">=", 1.5))
        self.tls_s2_goal(top, data)
        floor_md, floor = self.s2_floor(top, r)
        md += floor_md
        result = {"concurrency": cs, "pairs_per_s": data}
        if floor:
            result["floor"] = floor
        return md, result

    def s2_floor(self, top, rlock_pps):
        """The floor under S2 (`rlock_bench s2-floor`, run right after rlock's S2 at the largest
        C): rlock's own server work for C pairs in flight, pipelined by a minimal client. Reported
        as rlock's pairs/s at that C over the floor's, with no limit."""
        m = self.metric("S2", "rlock", "s2-floor", concurrency=top)
        run = self._find("S2", "rlock", "s2-floor", concurrency=top)
        if not run:
            return "", None
        floor_pps = m.get("pairs_per_s") if m else None
        self.goals.append(reported("S2", "rlock pairs/s at C=%d against the floor (s2-floor, same C)" % top,
                                   "rlock C=%d pairs/s" % top, rlock_pps,
                                   "s2-floor C=%d pairs/s" % top, floor_pps))
        if not m:
            return ("\n\nFloor (`rlock_bench s2-floor`, C=%d): failed: %s\n" % (top, run["failure"]),
                    {"failure": run["failure"]})
        ratio = rlock_pps / floor_pps if rlock_pps and floor_pps else None
        line = ("\n\nFloor measured in the same run, right after rlock's C=%d run (`rlock_bench s2-floor "
                "--concurrency %d --connections %s`): a minimal client pipelining exactly the server "
                "work of rlock's lock+unlock pairs — `EVALSHA` of the acquire script, `EVALSHA` of the "
                "latched release script, and one latch `DEL` per %s pairs — with %d pairs in flight on "
                "%s connection(s) and no client logic: %s pairs/s"
                % (top, top, m.get("connections", 1), num(m.get("pairs_per_del")), top,
                   m.get("connections", 1), num(floor_pps)))
        if ratio:
            line += "; rlock at C=%d: **%.2f × the floor**" % (top, ratio)
        return line + ".\n", dict(m, rlock_ratio=ratio)

    def s3_rows(self, scenario, libs):
        rows, data = [], {}
        ps = sorted({p for (s, _, p) in self.s3 if s == scenario})
        for lib in libs:
            for p in ps:
                g = self.s3.get((scenario, lib, p))
                if not g:
                    continue
                s = g["stats"]
                st = ("failed: " + g["failure"]) if g["failure"] else "ok"
                rows.append([lib, p, num(s["acquisitions"]), num(s["acquisitions_per_s"]),
                             num(s["handoffs"]),
                             (num(100 * s["handoff_share"]) + " %")
                             if s["handoff_share"] is not None else "—",
                             num(s["gap_p50_us"]), num(s["gap_p99_us"]), num(s["gap_max_us"]),
                             num(s["overlaps"]), st])
                data.setdefault(lib, {})[str(p)] = dict(s, failure=g["failure"], seconds=g["seconds"])
            if lib not in data and self.status(lib):
                rows.append([lib] + ["—"] * 9 + [self.status(lib)])
        md = table(["library", "P", "acquisitions", "acq/s", "handoffs", "handoff share", "gap p50 µs",
                    "gap p99 µs", "gap max µs", "overlaps", "status"], rows)
        return md, data, ps

    def section_s3(self):
        md, data, ps = self.s3_rows("S3", S1_S3_LIBRARIES)
        ping = self.ping_p50_us("ping_s3")
        floor = self.metric("S3", "rlock", mode="s3-floor")
        for p in ps:
            r = data.get("rlock", {}).get(str(p), {})
            self.goals.append(goal("S3", "P=%d: handoff p50 ≤ 2.5 × PING p50" % p, "rlock gap p50 µs",
                                   r.get("gap_p50_us"), "PING p50 µs", ping, "<=", 2.5))
            self.goals.append(goal("S3", "P=%d: handoff p99 ≤ 10 × PING p50" % p, "rlock gap p99 µs",
                                   r.get("gap_p99_us"), "PING p50 µs", ping, "<=", 10.0))
            self.goals.append(goal("S3", "P=%d: zero overlaps" % p, "rlock overlaps", r.get("overlaps"),
                                   None, None, "==", 0))
            peers = [(data[l][str(p)]["gap_p50_us"], l) for l in PEERS
                     if data.get(l, {}).get(str(p), {}).get("gap_p50_us") is not None]
            best = min(peers) if peers else (None, "none ran")
            self.goals.append(goal("S3", "P=%d: handoff p50 below half of every peer's" % p,
                                   "rlock gap p50 µs", r.get("gap_p50_us"),
                                   "fastest peer gap p50 µs (%s)" % best[1], best[0], "<=", 0.5))
            self.s3_kind_goals(p, data, floor)
            self.s3_same_p_goals(p, data, floor)
        md_fair = self.s3_fair_floors(data, ps, floor)
        if floor:
            data["floor"] = floor
            rl = data.get("rlock", {}).get(str(ps[0]), {}) if ps else {}
            line = ("\nFloor measured in the same run (`rlock_bench s3-floor`): two blocking minimal "
                    "clients, one publishing the unlock message, the other answering it with the "
                    "acquire script at once, both on the clients' CPU: handoff p50 %s µs, p99 %s µs"
                    % (num(floor.get("p50_us")), num(floor.get("p99_us"))))
            if ping:
                line += " (%.2f × and %.1f × PING p50)" % (floor["p50_us"] / ping,
                                                            floor["p99_us"] / ping)
            if floor.get("idle_ping_p50_us"):
                line += ("; a PING sent after 1 ms asleep, as every handoff begins, takes p50 %s µs "
                         "against the back-to-back PING's %s µs: waking idle CPUs is most of the "
                         "floor" % (num(floor["idle_ping_p50_us"]), num(ping)))
            if rl.get("gap_p50_us"):
                line += "; rlock at P=%d: p50 %.2f × the floor" % (ps[0],
                                                                  rl["gap_p50_us"] / floor["p50_us"])
            md += line + ".\n"
        md += md_fair
        md += self.s3_local(data)
        return md, data

    def s3_fair_floors(self, data, ps, floor):
        """The fair lock's two floors (same run): a publish heard by a blocking client, and the
        fair handoff between blocking clients running rlock's fair scripts; rlock-fair's p50 is
        reported against the second, the share its client adds."""
        push = self.metric("S3", "rlock", mode="s3-push-floor")
        fair_floor = self.metric("S3", "rlock", mode="s3-fair-floor")
        if not fair_floor:
            return ""
        data["fair_floor"] = fair_floor
        data["push_floor"] = push
        for p in ps:
            fair = data.get("rlock-fair", {}).get(str(p), {})
            self.goals.append(reported("S3", "fair lock P=%d: handoff p50 / the fair floor's" % p,
                                       "rlock-fair gap p50 µs", fair.get("gap_p50_us"),
                                       "s3-fair-floor p50 µs", fair_floor.get("p50_us")))
        line = ("\nThe fair lock's floors, same run: the handoff by push between two blocking "
                "minimal clients running rlock's own fair scripts (`rlock_bench s3-fair-floor`) "
                "p50 %s µs" % num(fair_floor.get("p50_us")))
        if floor and floor.get("p50_us"):
            line += " (%.2f × s3-floor)" % (fair_floor["p50_us"] / floor["p50_us"])
        if push and push.get("p50_us"):
            line += ("; a publish heard by such a client (`s3-push-floor`), a handoff by push "
                     "with no script, p50 %s µs" % num(push["p50_us"]))
            if floor and floor.get("p50_us"):
                line += " (%.2f × s3-floor)" % (push["p50_us"] / floor["p50_us"])
        shares = []
        for p in ps:
            g = data.get("rlock-fair", {}).get(str(p), {}).get("gap_p50_us")
            if g and fair_floor.get("p50_us"):
                shares.append("P=%d %.2f ×" % (p, g / fair_floor["p50_us"]))
        if shares:
            line += "; rlock-fair against the fair floor: " + ", ".join(shares)
        at = []
        for p in ps:
            at_p, fair_at_p = self.floors_at(p, floor)
            if at_p or fair_at_p:
                at.append("P=%d %s / %s µs" % (p, num(at_p.get("p50_us")) if at_p else "—",
                                                num(fair_at_p.get("p50_us")) if fair_at_p else "—"))
        if at:
            line += (".\nFloors at the same P (`s3-floor --contenders P-1` / `s3-fair-floor "
                     "--queued P-2`), p50: " + ", ".join(at))
        return line + ".\n"

    def floors_at(self, p, floor):
        """The floors measured at P (issue 37): s3-floor with P - 1 processes answering each
        message, and the fair floor with P - 2 more waiters queued; at P = 2 the plain ones."""
        if p <= 2:
            return floor, self.metric("S3", "rlock", mode="s3-fair-floor")
        return (self.metric("S3", "rlock", mode="s3-floor", contenders=p - 1),
                self.metric("S3", "rlock", mode="s3-fair-floor", queued=p - 2))

    def s3_same_p_goals(self, p, data, floor):
        """Issue 37's S3 goal: each kind's handoff p50 ≤ 1.3 × a floor measured at the same P."""
        at_p, fair_at_p = self.floors_at(p, floor)
        r = data.get("rlock", {}).get(str(p), {})
        fair = data.get("rlock-fair", {}).get(str(p), {})
        self.goals.append(goal("S3", "P=%d: handoff p50 ≤ 1.3 × the floor at the same P (issue 37)" % p,
                               "rlock gap p50 µs", r.get("gap_p50_us"),
                               "s3-floor p50 µs, %d contenders" % (p - 1),
                               at_p.get("p50_us") if at_p else None, "<=", 1.3))
        self.goals.append(goal("S3", "fair lock P=%d: handoff p50 ≤ 1.3 × the fair floor at the same P "
                                     "(issue 37)" % p,
                               "rlock-fair gap p50 µs", fair.get("gap_p50_us"),
                               "s3-fair-floor p50 µs, %d more queued" % max(p - 2, 0),
                               fair_at_p.get("p50_us") if fair_at_p else None, "<=", 1.3))

    def s3_kind_goals(self, p, data, floor):
        """Issue 25's goals for the fair lock at P, each half a goal of its own (goal() sets one
        figure against one reference): its handoff p50 ≤ 0.6 × the floor's p50 (s3-floor, same
        run), and below the reentrant lock's at the same P. Every kind that ran at P must also
        have seen no two holders at once."""
        fair = data.get("rlock-fair", {}).get(str(p), {})
        why = self.s3_kind_why("rlock-fair", p)
        figure = "rlock-fair gap p50 µs" + (" (n/a: %s)" % why if why else "")
        self.goals.append(goal("S3", "fair lock P=%d: handoff p50 ≤ 0.6 × s3-floor p50 (issue 25)" % p,
                               figure, fair.get("gap_p50_us"), "s3-floor p50 µs",
                               floor.get("p50_us") if floor else None, "<=", 0.6))
        self.goals.append(goal("S3", "fair lock P=%d: handoff p50 below the reentrant lock's (issue 25)" % p,
                               figure, fair.get("gap_p50_us"), "rlock P=%d gap p50 µs" % p,
                               data.get("rlock", {}).get(str(p), {}).get("gap_p50_us"), "<", 1.0))
        for lib in KINDS:
            if ("S3", lib, p) in self.s3:
                self.goals.append(goal("S3", "%s P=%d: zero overlaps" % (lib, p), "%s overlaps" % lib,
                                       self.s3[("S3", lib, p)]["stats"]["overlaps"], None, None, "==", 0))

    def s3_kind_why(self, lib, p):
        """Why LIB's S3 figure at P is missing ("" when there is one)."""
        g = self.s3.get(("S3", lib, p))
        if g and not g["failure"] and g["stats"]["gap_p50_us"] is not None:
            return ""
        if g and g["failure"]:
            return "failed"
        if g:
            return "no handoffs"
        return "unavailable" if lib in self.unavailable else "not run"

    def s3_local(self, data):
        """S3's rhythm between P coroutines of one client (`rlock_bench s3-local`), handing the
        lock over in the unlock's round trip (config::local_handoff)."""
        local = []
        for run in self.runs["S3"]:
            e = run["entry"]
            if e.get("mode") != "s3-local":
                continue
            m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
            local.append((int(e.get("params", {}).get("processes", 0)), m, run["failure"]))
        if not local:
            return ""
        ev = self.ref("evalsha_c1", "p50_latency_ms")
        ev_us = ev * 1000 if ev else None
        rows = []
        for p, m, failure in sorted(local, key=lambda x: x[0]):
            gap = m.get("gap_p50_us")
            share = m["local_handoffs"] / m["handoffs"] if m.get("handoffs") else None
            idle = m.get("idle_round_trip_p50_us")
            rows.append([p, num(m.get("acquisitions")), num(m.get("handoffs")),
                         num(m.get("local_handoffs")), num(share), num(gap), num(m.get("gap_p99_us")),
                         num(gap / ev_us) if gap and ev_us else "—", num(idle),
                         num(gap / idle) if gap and idle else "—", num(m.get("overlaps")),
                         ("failed: " + failure) if failure else "ok"])
            data.setdefault("local", {})[str(p)] = m or {"failure": failure}
            self.goals.append(goal("S3", "local P=%d: handoff gap p50 ≤ 1.2 × EVALSHA p50" % p,
                                   "s3-local gap p50 µs", gap, "EVALSHA -c1 p50 µs", ev_us, "<=", 1.2))
            self.goals.append(goal("S3", "local P=%d: zero overlaps" % p, "s3-local overlaps",
                                   m.get("overlaps"), None, None, "==", 0))
        return ("\nS3-local, the same rhythm between P coroutines of one client on one key "
                "(`rlock_bench s3-local`): a final unlock that finds another coroutine of the client "
                "parked on the lock hands it over in its own round trip (`config::local_handoff`; "
                "every 8th unlock in a row publishes):\n\n"
                + table(["P", "acquisitions", "handoffs", "local handoffs", "local share",
                         "gap p50 µs", "gap p99 µs", "p50 / EVALSHA p50", "idle round trip p50 µs",
                         "p50 / idle round trip", "overlaps", "status"], rows)
                + "\nThe idle round trip is one command of the same client sent after 1 ms asleep, "
                "measured by the same driver right after: what one round trip costs in S3's rhythm, "
                "where both CPUs idle between handoffs (the back-to-back EVALSHA keeps them busy).\n"
                + "\n")

    def section_s4(self):
        rows, data = [], {}
        runs = sorted(self.runs["S4"], key=lambda r: r["entry"].get("params", {}).get("waiters", 0))
        rw_runs = [r for r in runs if r["entry"].get("mode") == "s4-rw"]
        runs = [r for r in runs if r["entry"].get("mode") != "s4-rw"]
        for run in runs:
            w = run["entry"].get("params", {}).get("waiters")
            m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
            rows.append([w, num(m.get("handoffs")), num(m.get("commands")),
                         num(m.get("commands_per_handoff")),
                         num(m.get("evalsha")), num(m.get("subscribe")), num(m.get("unsubscribe")),
                         ("failed: " + run["failure"]) if run["failure"] else "ok"])
            data[str(w)] = m or {"failure": run["failure"]}
            self.goals.append(goal("S4", "W=%s: commands per handoff ≤ 3" % w, "commands/handoff",
                                   m.get("commands_per_handoff"), None, None, "<=", 3.0))
            if m and m.get("handoffs") != w:
                self.notes.append("S4 W=%s: only %s of %s waiters got the lock" % (w, m.get("handoffs"), w))
        md = table(["waiters W", "handoffs", "commands", "commands/handoff", "evalsha", "subscribe",
                    "unsubscribe", "status"], rows)
        # The read-write lock (issue 25): W readers behind a writer, let in by one write unlock.
        rw_rows = []
        for run in rw_runs:
            w = run["entry"].get("params", {}).get("waiters")
            m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
            rw_rows.append([w, num(m.get("readers")), num(m.get("commands")),
                            num(m.get("commands_per_reader")), num(m.get("attempts_per_reader")),
                            ("failed: " + run["failure"]) if run["failure"] else "ok"])
            data["rw-" + str(w)] = m or {"failure": run["failure"]}
            # One attempt per reader and the unlock: no wake-up storm.
            self.goals.append(goal("S4", "read-write W=%s: attempts per reader = 1" % w,
                                   "attempts/reader", m.get("attempts_per_reader"), None, None, "<=",
                                   1.0))
            if m and m.get("readers") != w:
                self.notes.append("S4 read-write W=%s: only %s of %s readers got the lock" %
                                  (w, m.get("readers"), w))
        if rw_rows:
            md += ("\n\nRead-write lock: W readers wait behind a writer; one write unlock (Redisson's "
                   "\"1\", wake all) lets them all in. Commands from the unlock until every reader "
                   "holds, per reader (the unlock's EVALSHA shared among them):\n\n" +
                   table(["readers W", "readers in", "commands", "commands/reader",
                          "attempts/reader", "status"], rw_rows))
        return md, data

    def section_s5(self):
        rows, data = [], {}
        def tracked(r):
            return str(r["entry"].get("params", {}).get("track_holds", 1)) not in ("0", "false", "False")
        runs = sorted(self.runs["S5"], key=lambda r: (r["entry"].get("params", {}).get("locks", 0),
                                                      not tracked(r)))
        for run in runs:
            n = run["entry"].get("params", {}).get("locks")
            on = tracked(run)
            m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
            rows.append([n, "on" if on else "off", num(m.get("renewal_calls")), num(m.get("periods")),
                         num(m.get("calls_per_period")), num(n / 100.0 if n else None),
                         num(m.get("cpu_percent")), num(m.get("rss_bytes_per_lock")),
                         num(m.get("server_us_per_renewed_key")),
                         ("failed: " + run["failure"]) if run["failure"] else "ok"])
            label = "N=%s%s" % (n, "" if on else ", tracking off")
            data[str(n) if on else "%s-untracked" % n] = m or {"failure": run["failure"]}
            self.goals.append(goal("S5", "%s: renewal calls per period ≤ N/100" % label, "calls/period",
                                   m.get("calls_per_period"), "N/100", n / 100.0 if n else None, "<=", 1.0))
            self.goals.append(goal("S5", "%s: RSS per lock ≤ 512 B" % label, "RSS B/lock",
                                   m.get("rss_bytes_per_lock"), None, None, "<=", 512))
        md = table(["locks N", "tracking", "renewal calls", "periods", "calls/period", "N/100", "CPU %",
                    "RSS B/lock", "server µs / renewed key", "status"], rows)
        md += ("\n\nTracking (`config::track_holds`, the default) costs the server a tracking-table "
               "update per renewed key beside the renewal (the key is read again after its PEXPIRE so "
               "that it stays tracked); server µs per renewed key: INFO commandstats' EVALSHA time "
               "over the keys renewed. With a 3 s lease N = 100 000 renews 100 000 keys a second, "
               "more than one server CPU does with tracking on: that N runs with tracking off.")
        return md, data

    def section_s6(self):
        rows, data, floors = [], {}, []
        floor = None
        for run in self.runs["S6"]:
            if run["entry"].get("mode") == "s6-floor":
                m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
                data["floor"] = m or {"failure": run["failure"]}
                floor = m.get("rss_bytes_per_parked_coroutine")
                floors.append("Floor measured in the same run (`rlock_bench s6-floor`, N=%s): a bare "
                              "Asio coroutine parked on a timer costs %s B, before any lock logic; "
                              "\"above the floor\" is what rlock adds per coroutine waiter (its "
                              "operation and the waiter's own lock handle). Callback waiters "
                              "(`async_lock` with a plain handler) wait the same way without any "
                              "coroutine."
                              % (run["entry"].get("params", {}).get("waiters"), num(floor)))
        for run in self.runs["S6"]:
            if run["entry"].get("mode") == "s6-floor":
                continue
            p = run["entry"].get("params", {})
            n, k, kind = p.get("waiters"), p.get("names"), p.get("waiter", "coroutine")
            m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
            per_waiter = m.get("rss_bytes_per_waiter")
            # Callback waiters have no coroutine: the floor does not apply to them.
            above = (per_waiter - floor if kind == "coroutine" and per_waiter is not None
                     and floor is not None else None)
            rows.append([kind, n, k, num(per_waiter), num(above), num(m.get("subscriptions")),
                         num(m.get("acquired")), ("failed: " + run["failure"]) if run["failure"] else "ok"])
            data["%s/%s/%s" % (kind, n, k)] = (dict(m, rss_bytes_above_floor=above) if m
                                               else {"failure": run["failure"]})
            if kind == "coroutine":
                # A coroutine costs the floor before any lock logic: rlock's part is what is above.
                self.goals.append(goal("S6", "N=%s, coroutine waiters: RSS per waiter ≤ the floor + 512 B"
                                       % n, "RSS above the floor B/waiter", above, None, None, "<=", 512))
            else:
                self.goals.append(goal("S6", "N=%s, callback waiters: RSS per waiter ≤ 1024 B" % n,
                                       "RSS B/waiter", per_waiter, None, None, "<=", 1024))
            self.goals.append(goal("S6", "K=%s names, %s waiters: exactly K subscriptions" % (k, kind),
                                   "subscriptions", m.get("subscriptions"), None, None, "==", k))
            if m and m.get("acquired") != n:
                self.notes.append("S6: only %s of %s waiters got the lock" % (m.get("acquired"), n))
        md = table(["waiters", "N", "names K", "RSS B/waiter", "above the floor B/waiter", "subscriptions",
                    "acquired", "status"], rows)
        if floors:
            md += "\n" + "\n".join(floors) + "\n"
        return md, data

    def section_s7(self, s1, s3):
        # Each blocking run is set against a coroutine twin run right before it, same length, so
        # that the ratio does not carry the machine's drift between S1/S3 and S7.
        rows, data = [], {"s1": {}, "s3": {}}
        twins = {}
        for run in self.runs["S7"]:
            e = run["entry"]
            if e.get("library") == "rlock" and e.get("mode") == "s1":
                m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
                twins[e.get("params", {}).get("threads")] = m.get("p50_us")
        floors = {}
        for run in self.runs["S7"]:
            e = run["entry"]
            if e.get("mode") == "s7-floor" and run["output"] and not run["failure"]:
                floors[e.get("params", {}).get("threads")] = run["output"]["metrics"].get("p50_us")
        runs = sorted((r for r in self.runs["S7"] if r["entry"].get("library") == "rlock-blocking"
                       and r["entry"].get("mode") == "s1"),
                      key=lambda r: r["entry"].get("params", {}).get("threads", 0))
        for run in runs:
            t = run["entry"].get("params", {}).get("threads")
            m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
            coroutine_p50 = twins.get(t) or (s1.get("rlock") or {}).get("p50_us")
            rows.append(["s1-blocking T=%s" % t, num(m.get("pairs")), num(m.get("p50_us")),
                         num(m.get("p99_us")),
                         num(coroutine_p50), num(m.get("p50_us") / coroutine_p50
                                                 if m.get("p50_us") and coroutine_p50 else None),
                         num(floors.get(t)),
                         num(floors[t] / coroutine_p50 if floors.get(t) and coroutine_p50 else None),
                         ("failed: " + run["failure"]) if run["failure"] else "ok"])
            data["s1"][str(t)] = (dict(m, coroutine_p50_us=coroutine_p50, floor_p50_us=floors.get(t))
                                  if m else {"failure": run["failure"]})
            self.goals.append(goal("S7", "s1-blocking T=%s p50 within 1.2 × rlock s1 p50 (%s coroutine%s)"
                                   % (t, t, "" if t == 1 else "s"), "blocking p50 µs", m.get("p50_us"),
                                   "coroutine twin p50 µs", coroutine_p50, "<=", 1.2))
        md1 = table(["run", "pairs", "p50 µs", "p99 µs", "coroutine twin p50 µs", "ratio",
                     "floor p50 µs", "floor / twin", "status"], rows)
        if floors:
            md1 += ("\nFloor measured in the same run (`rlock_bench s7-floor --threads T`): T blocking "
                    "threads, each with its own connection and nothing shared, each running the "
                    "acquire and release scripts on its own key: the least that T threads blocking "
                    "on one CPU cost, set against the same coroutine twin.\n")
        md3, d3, ps = self.s3_rows("S7", ["rlock", "rlock-blocking"])
        data["s3"] = d3.get("rlock-blocking", {})
        data["s3_coroutine_twins"] = d3.get("rlock", {})
        for p in ps:
            b = data["s3"].get(str(p), {})
            c = d3.get("rlock", {}).get(str(p)) or (s3.get("rlock") or {}).get(str(p), {})
            self.goals.append(goal("S7", "S3 blocking P=%d handoff p50 within 1.2 × rlock's" % p,
                                   "blocking gap p50 µs", b.get("gap_p50_us"),
                                   "coroutine twin P=%d gap p50 µs" % p, c.get("gap_p50_us"), "<=", 1.2))
            self.goals.append(goal("S7", "S3 blocking P=%d: zero overlaps" % p, "overlaps", b.get("overlaps"),
                                   None, None, "==", 0))
        return (md1 + "\n\nS3 through `s3-worker-blocking`, each P right after its coroutine twin (`rlock`):\n\n"
                + md3, data)

    def s9_cpu(self, entry):
        """CPU seconds the run's servers spent during it (scripts/bench's ID.cpu), or None."""
        text = read_text(os.path.join(self.raw, entry.get("id", "") + ".cpu"))
        try:
            return float(text.strip()) if text else None
        except ValueError:
            return None

    def section_s9(self):
        """Each S9 measurement on one node and on the cluster, run back to back: the ratio is
        reported, with the servers' CPU; no limits (a 2-core machine cannot show a cluster's
        scaling, the issue asks for the ratio and the CPU use, honestly)."""
        if not self.runs["S9"] and not any(s == "S9" for (s, _, _) in self.s3):
            return "", {}  # not run: no rows, no goals
        runs = {}
        for run in self.runs["S9"]:
            e = run["entry"]
            key = (e.get("mode"), e.get("params", {}).get("concurrency"), e.get("params", {}).get("locks"))
            runs.setdefault(key, {})[e.get("library")] = run
        rows, data = [], {}

        def both(key):
            pair = runs.get(key, {})
            return pair.get("rlock"), pair.get("rlock-cluster")

        def metric(run, field):
            if not run or run["failure"] or not run["output"]:
                return None
            return run["output"]["metrics"].get(field)

        def row(label, one, cluster, field, goal_name=None):
            a, b = metric(one, field), metric(cluster, field)
            rows.append([label, num(a), num(b), num(b / a) if a and b is not None else "—"])
            data[label] = {"one": a, "cluster": b}
            if goal_name:
                self.goals.append(reported("S9", goal_name, "cluster " + field, b, "one node " + field, a))

        one, cl = both(("s1", None, None))
        row("S1 p50 µs", one, cl, "p50_us", "S1 p50, cluster / one node")
        row("S1 p99 µs", one, cl, "p99_us")
        for c in sorted({k[1] for k in runs if k[0] == "s2" and isinstance(k[1], int)}):
            one, cl = both(("s2", c, None))
            row("S2 C=%d pairs/s" % c, one, cl, "pairs_per_s", "S2 C=%d pairs/s, cluster / one node" % c)
            cpu_one = self.s9_cpu(one["entry"]) if one else None
            cpu_cl = self.s9_cpu(cl["entry"]) if cl else None
            # Busy share of the servers' CPU over each driver's whole run (its elapsed time).
            pct = [100.0 * v / r["entry"]["elapsed_s"] if v is not None and r and r["entry"].get("elapsed_s")
                   else None for v, r in ((cpu_one, one), (cpu_cl, cl))]
            rows.append(["S2 C=%d servers' CPU %% (all nodes, whole run)" % c, num(pct[0]), num(pct[1]),
                         num(pct[1] / pct[0]) if pct[0] and pct[1] is not None else "—"])
            data["S2 C=%d server CPU %%" % c] = {"one": pct[0], "cluster": pct[1]}
        for p in sorted(p for (s, l, p) in self.s3 if s == "S9" and l == "rlock-cluster"):
            g = self.s3[("S9", "rlock-cluster", p)]
            ref = self.s3.get(("S3", "rlock", p))
            a = ref["stats"]["gap_p50_us"] if ref and not ref["failure"] else None
            b = g["stats"]["gap_p50_us"] if not g["failure"] else None
            rows.append(["S3 P=%d handoff p50 µs (one node: S3's row)" % p, num(a), num(b),
                         num(b / a) if a and b is not None else "—"])
            data["S3 P=%d gap p50 µs" % p] = {"one": a, "cluster": b,
                                               "overlaps": g["stats"]["overlaps"]}
            self.goals.append(goal("S9", "S3 on the cluster P=%d: zero overlaps" % p, "overlaps",
                                   g["stats"]["overlaps"], None, None, "==", 0))
        for n in sorted({k[2] for k in runs if k[0] == "s5" and isinstance(k[2], int)}):
            one, cl = both(("s5", None, n))
            row("S5 N=%d renewal calls per period" % n, one, cl, "calls_per_period")
            row("S5 N=%d socket writes per period" % n, one, cl, "writes_per_period")
            w = metric(cl, "writes_per_period")
            nodes = read_text(os.path.join(self.raw, cl["entry"]["id"] + ".nodes")) if cl else None
            calls = {}
            for line in (nodes or "").splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[1].isdigit():
                    calls[parts[0]] = int(parts[1])
            if w is not None and calls:
                per_node = w / len(calls)
                rows.append(["S5 N=%d writes per node per period" % n, num(metric(one, "writes_per_period")),
                             num(per_node), "—"])
                data["S5 N=%d writes per node per period" % n] = per_node
                self.goals.append(goal("S9", "S5 N=%d: about one write per node per renewal round "
                                       "(health-check PINGs included)" % n, "writes/node/period",
                                       per_node, None, None, "<=", 2.0))
            if calls:
                data["S5 N=%d EVALSHA calls per master" % n] = calls
            row("S5 N=%d client CPU %%" % n, one, cl, "cpu_percent")
        per_key = read_text(os.path.join(self.raw, "s9-bytes-per-key.txt"))
        if per_key and per_key.strip().isdigit():
            rows.append(["server bytes per lock key (used_memory, 10 000 keys)", per_key.strip(), "same", "—"])
            data["server bytes per lock key"] = int(per_key.strip())
        md = table(["measurement", "one node", "cluster (3 masters)", "cluster / one"], rows)
        md += ("\nEvery cluster measurement runs right after its one-node twin (`--cluster 1`: the "
               "driver's port is a seed). The three masters share the server CPU the one node has, "
               "so a ratio near 1 is what routing costs, not a lack of scaling.\n")
        return md, data

    def section_m1(self):
        """The multi-lock of ten against one lock, per round (each round runs the four back to
        back, so its ratios are same-run ratios) and their medians, on one node and on the
        cluster; the floors (s1-floor: minimal clients, one write per node per half) say what
        the servers and the network alone make of the same ratio."""
        runs = {}
        for run in self.runs["M1"]:
            e = run["entry"]
            p = e.get("params", {})
            key = (p.get("topology"), p.get("round"))
            who = ("batch" if p.get("batch") else "floor" if e.get("mode") == "s1-floor" else "rlock",
                   p.get("members"))
            out = run["output"]
            runs.setdefault(key, {})[who] = (
                out["metrics"].get("p50_us") if out and not run["failure"] else None)
        if not runs:
            return "", {}
        rows, data = [], {}
        for where, title in (("one", "one node"), ("cluster", "3-master cluster")):
            rounds = sorted(r for (w, r) in runs if w == where)
            ratios = {"rlock": [], "floor": [], "over_floor": []}
            for r in rounds:
                got = runs[(where, r)]
                one, ten = got.get(("rlock", 1)), got.get(("rlock", 10))
                f1, f10, b10 = got.get(("floor", 1)), got.get(("floor", 10)), got.get(("batch", 10))
                # The floor of ten: the lower of one script per member and one per node.
                best = min(v for v in (f10, b10) if v) if (f10 or b10) else None
                rows.append(["%s, round %s" % (title, r), num(one), num(ten), num(ten / one) if one and ten else "—",
                             num(f1), num(f10), num(b10), num(best / f1) if f1 and best else "—",
                             num(ten / best) if ten and best else "—"])
                if one and ten:
                    ratios["rlock"].append(ten / one)
                if f1 and best:
                    ratios["floor"].append(best / f1)
                if ten and best:
                    ratios["over_floor"].append(ten / best)
            med = {k: (statistics.median(v) if v else None) for k, v in ratios.items()}
            rows.append(["**%s, median of %d**" % (title, len(rounds)), "", "", num(med["rlock"]), "", "", "",
                         num(med["floor"]), num(med["over_floor"])])
            data[where] = {"rounds": {str(r): {"%s_%d" % k: v for k, v in runs[(where, r)].items()}
                                      for r in rounds},
                           "median_ratio": med["rlock"], "median_floor_ratio": med["floor"],
                           "median_over_floor": med["over_floor"]}
            limit = M1_GOALS[where]
            self.goals.append(goal("M1", "%s: multi-lock of 10, p50 ≤ %.1f × one lock's (median of the "
                                   "rounds' same-run ratios)" % (title, limit),
                                   "median ratio", med["rlock"], None, None, "<=", limit))
            self.goals.append(goal("M1", "%s: the floor's own ratio (minimal clients) ≤ %.1f, or the goal "
                                   "above is out of this machine's reach" % (title, limit),
                                   "median floor ratio", med["floor"], None, None, "<=", limit))
        md = table(["run", "one lock p50 µs", "multi-lock of 10 p50 µs", "ratio", "floor, 1 lock µs",
                    "floor, 10 locks µs", "floor, 10 locks, one script per node µs", "floor ratio",
                    "multi-lock / its floor"], rows)
        md += ("\nEach round runs `rlock_bench s1`, `s1 --kind multi --members 10` and `s1-floor "
               "--members 1|10` back to back on the same keys (`s1`, `s1:2` … `s1:10`), on one node, then "
               "on the cluster (`--cluster 1`). The floors are minimal blocking clients running rlock's "
               "scripts, one write per node per half: what the servers and the network make of the "
               "same ratio with no client work; `--batch 1` runs the ten members' scripts in one script "
               "per node (on the cluster with undeclared keys under `allow-cross-slot-keys`, which no "
               "client should do: only to find the floor). The floor ratio takes the lower of the two. "
               "The three masters share one server CPU here, so each node's wake-up and each member's "
               "script add up on it.\n")
        return md, data

    def section_e1(self):
        rows, data = [], {}
        s3 = self.s3.get(("S3", "rlock", 8))
        s3_p50 = s3["stats"].get("gap_p50_us") if s3 else None
        for run in self.runs["E1"]:
            e = run["entry"]
            p = e.get("params", {})
            where = "cluster" if e.get("library") == "rlock-cluster" else "one server"
            n = p.get("candidates")
            m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
            lease = p.get("leader_lease_ms", 1000)
            rows.append([where, n, num(m.get("handovers")), num(m.get("handover_p50_us")),
                         num(m.get("handover_p99_us")), num(m.get("observer_after_answer_p50_us")),
                         num(m.get("observer_after_answer_p99_us")),
                         num(m.get("observer_after_resign_p50_us")),
                         num(m.get("replacements")), num(m.get("replaced_p50_ms")),
                         num(m.get("replaced_p99_ms")), num(m.get("kill_observer_after_answer_p50_us")),
                         num(m.get("overlaps")),
                         ("failed: " + run["failure"]) if run["failure"] else "ok"])
            data["%s/%s" % (where, n)] = m or {"failure": run["failure"]}
            if m and m.get("overlaps"):
                self.failures.append("E1 %s N=%s: %s overlapping leads" % (where, n, m["overlaps"]))
            if n == 8:
                self.goals.append(goal("E1", "%s, N=8: a resignation hands over within 2 × S3's handoff "
                                       "p50 at P=8" % where, "handover p50 µs", m.get("handover_p50_us"),
                                       "S3 rlock P=8 gap p50 µs", s3_p50, "<=", E1_HANDOVER_GOAL))
            self.goals.append(goal("E1", "%s, N=%s: observers told within 1 ms p50 of the new leader's "
                                   "answer" % (where, n), "observer after answer p50 µs",
                                   m.get("observer_after_answer_p50_us"), None, None, "<=",
                                   E1_OBSERVER_GOAL_US))
            # The leader lease is renewed every third: a kill replaced within lease + 2 periods.
            bound_ms = lease + E1_WATCHDOG_PERIODS * lease / 3.0
            self.goals.append(goal("E1", "%s, N=%s: a SIGKILLed leader replaced within its leader lease "
                                   "(%s ms) + 2 watchdog periods (max of the kills)" % (where, n, lease),
                                   "replaced max ms", m.get("replaced_max_ms"), None, None, "<=",
                                   bound_ms))
        md = table(["where", "candidates N", "handovers", "handover p50 µs", "handover p99 µs",
                    "observer after answer p50 µs", "p99 µs", "observer after resign p50 µs",
                    "kills", "replaced p50 ms", "replaced p99 ms", "observer after answer (kills) p50 µs",
                    "overlaps", "status"], rows)
        md += ("\n\nHandover: from the leader's `resign()` call to the next leader's `campaign()` answer "
               "(leaders hold 1 ms, as S3's holders). Observer: an `election_observer` on a client of its "
               "own, timed from the new leader's answer (negative: told before it) and from the "
               "resignation. Kills: a leader with a 1 s leader lease (`watchdog_timeout`) in a "
               "process of its own, SIGKILLed while every candidate waits; replaced = kill → the next "
               "`campaign()` answer, which the lease's remaining TTL bounds. S3's reference: %s µs.\n"
               % num(s3_p50))
        return md, data

    def section_q1(self):
        """S1 and S3 of the quorum lock at N = 3 and 5 (issue 52), each S1 row beside the one-node
        lock and the floors run right before it, and S3 against the Redlock peers (default and
        tuned retry settings) at the same N and P."""
        s1, floors = {}, {}  # floors: N -> the s3-quorum-floor run's metrics
        for run in self.runs["Q1"]:
            e = run["entry"]
            prm = e.get("params", {})
            out = run["output"]
            m = out["metrics"] if out and not run["failure"] else None
            n = prm.get("quorum_of", prm.get("nodes"))
            if e.get("mode") == "s3-quorum-floor":
                floors[n] = m
                continue
            if e.get("mode") == "s1-floor":
                label = "floor: 1 script" if prm.get("nodes") == 1 else "floor: %s parallel scripts" % n
            elif e.get("library") == "rlock":
                label = "rlock, one node"
            else:
                label = e.get("library") + (" (tuned)" if prm.get("tuned") == 1 else "")
            s1[(n, label)] = m
        ns = sorted({n for (n, _) in s1 if n is not None} | {n for n in floors if n is not None})
        if not ns:
            return "", {}
        rows, data = [], {"S1": {}, "S3": {}}
        for n in ns:
            got = {label: m for (nn, label), m in s1.items() if nn == n}
            one = (got.get("rlock, one node") or {}).get("p50_us")
            for label in sorted(got, key=lambda l: (not l.startswith("rlock"), l)):
                m = got[label] or {}
                rows.append([n, label, num(m.get("p50_us")), num(m.get("p99_us")),
                             num(m["p50_us"] / one) if m.get("p50_us") and one else "—"])
            data["S1"][str(n)] = got
            q = (got.get("rlock-quorum") or {}).get("p50_us")
            f1 = (got.get("floor: 1 script") or {}).get("p50_us")
            fn = (got.get("floor: %d parallel scripts" % n) or {}).get("p50_us")
            if n == 3:
                self.goals.append(goal("Q1", "N=3: S1 p50 ≤ %.1f × the one-node lock's (same run)" % Q1_S1_GOAL,
                                       "rlock-quorum p50 µs", q, "rlock one node p50 µs", one, "<=",
                                       Q1_S1_GOAL))
            else:
                self.goals.append(reported("Q1", "N=%d: S1 p50 against the one-node lock's" % n,
                                           "rlock-quorum p50 µs", q, "rlock one node p50 µs", one))
            self.goals.append(reported("Q1", "N=%d: the floor's own ratio (N parallel scripts by minimal "
                                       "clients / one script)" % n, "floor p50 µs", fn,
                                       "one-script floor p50 µs", f1))
        md = table(["N", "library", "lock+unlock p50 µs", "p99 µs", "p50 / one node's"], rows)
        md += ("\nEach N runs back to back: `rlock_bench s1` on the first server, `s1-floor --members 1` "
               "(minimal blocking clients running rlock's acquire and release scripts on it), `s1-floor "
               "--ports` (the same scripts on N servers at once, answers read as they come), `s1 --ports` "
               "(the quorum lock), then each peer with `--ports` and its default retry settings, then "
               "`--tuned` (redlock: 2 ± 1 ms; redis-semaphore: 1 ms). The servers share one CPU, as the "
               "one server does in every scenario, so a round's N scripts queue there: the floor's ratio "
               "says what of the quorum lock's ratio is the servers' own.\n")
        s3_rows = []
        for n in ns:
            key = "Q1/n%d" % n
            ps = sorted({p for (s, _, p) in self.s3 if s == key})
            for p in ps:
                here = {l: g for (s, l, pp), g in self.s3.items() if s == key and pp == p}
                for label in sorted(here, key=lambda l: (l != "rlock-quorum", l)):
                    st = here[label]["stats"]
                    s3_rows.append([n, p, label, num(st["acquisitions"]), num(st["handoffs"]),
                                    num(st["gap_p50_us"]), num(st["gap_p99_us"]), num(st["overlaps"]),
                                    ("failed: " + here[label]["failure"]) if here[label]["failure"] else "ok"])
                    data["S3"].setdefault(str(n), {}).setdefault(label, {})[str(p)] = dict(
                        st, failure=here[label]["failure"])
                mine = (here.get("rlock-quorum") or {}).get("stats", {})
                peers = [(g["stats"]["gap_p50_us"], l) for l, g in here.items()
                         if l != "rlock-quorum" and g["stats"]["gap_p50_us"] is not None and not g["failure"]]
                best = min(peers) if peers else (None, "none ran")
                self.goals.append(goal("Q1", "N=%d P=%d: handoff p50 ≤ %.2f × the best Redlock peer's" % (
                    n, p, Q1_S3_GOAL), "rlock-quorum gap p50 µs", mine.get("gap_p50_us"),
                    "best peer gap p50 µs (%s)" % best[1], best[0], "<=", Q1_S3_GOAL))
                self.goals.append(goal("Q1", "N=%d P=%d: zero overlaps" % (n, p), "rlock-quorum overlaps",
                                       mine.get("overlaps"), None, None, "==", 0))
                floor = floors.get(n) or {}
                if p == min(ps) and floor.get("p50_us") is not None:
                    self.goals.append(reported(
                        "Q1", "N=%d: the floor's quorum handoff (minimal clients, a holder and one "
                        "waiter) against the best peer's at P=%d: the least the goal above can be" % (n, p),
                        "floor p50 µs", floor["p50_us"], "best peer gap p50 µs (%s)" % best[1], best[0]))
                    self.goals.append(reported(
                        "Q1", "N=%d P=%d: rlock-quorum's handoff against its floor" % (n, p),
                        "rlock-quorum gap p50 µs", mine.get("gap_p50_us"), "floor p50 µs", floor["p50_us"]))
            if floors.get(n):
                data["S3"].setdefault(str(n), {})["floor"] = floors[n]
                s3_rows.append([n, "—", "floor (`s3-quorum-floor`)", "—", num(floors[n].get("handoffs")),
                                num(floors[n].get("p50_us")), num(floors[n].get("p99_us")), "—", "ok"])
        if s3_rows:
            md += "\n" + table(["N", "P", "library", "acquisitions", "handoffs", "gap p50 µs", "gap p99 µs",
                                "overlaps", "status"], s3_rows)
            md += ("\nS3's rhythm (hold 1 ms, 1 ms outside, a 10 s lease) with P processes on one fresh key "
                   "over the first N servers. Commands per handoff while waiting are counted by "
                   "`test/integration/quorum_lock_test.cpp` (`a_waiter_is_woken_by_the_unlock_pushes…`): "
                   "3 × N.\n")
        return md, data

    def section_s8(self):
        rows, data = [], {}
        rtt_ms = (self.ping_p50_us() or 0) / 1000.0
        deposed = [r for r in self.runs["S8"] if r["entry"].get("mode") == "s8-deposed"]
        for run in self.runs["S8"]:
            if run["entry"].get("mode") == "s8-deposed":
                continue
            m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
            n = run["entry"].get("params", {}).get("restarts")
            data[str(n)] = m or {"failure": run["failure"]}
            if not m:
                rows.append([n, "failed: " + (run["failure"] or "?"), "", "", "", "", ""])
                continue
            cap = m.get("backoff_cap_ms")
            rows.append([n, num(m.get("restart_p50_ms")), num(m.get("restart_max_ms")),
                         num(m.get("kill_p50_ms")), num(m.get("kill_max_ms")),
                         "%s / %s" % (num(m.get("margin_min_ms")), num(m.get("margin_p50_ms"))),
                         num(m.get("margin_configured_ms"))])
            for what, key in (("server restart", "restart"), ("CLIENT KILL", "kill")):
                self.goals.append(goal("S8", "%s: server back -> first acquire p50 <= 100 ms" % what,
                                       "p50 ms", m.get(key + "_p50_ms"), None, None, "<=", 100.0))
                self.goals.append(goal("S8", "%s: max <= backoff cap + 1 RTT" % what, "max ms",
                                       m.get(key + "_max_ms"), "cap + PING p50 (ms)",
                                       (cap or 0) + rtt_ms, "<=", 1.0))
            self.goals.append(goal("S8", "lost() strictly before another owner acquires", "min margin ms",
                                   m.get("margin_min_ms"), None, None, ">", 0.0))
        md = table(["rounds", "restart p50 ms", "restart max ms", "kill p50 ms", "kill max ms",
                    "lost() margin min / p50 ms", "configured margin ms"], rows)
        md += ("\n\nRecovery: from the moment the restarted server answers PING (or from the CLIENT "
               "KILL) to the client's first successful `try_lock`, default reconnect policy (50 ms "
               "initial backoff, full jitter, 2 s cap). Margin: the holder can neither renew nor "
               "reconnect (its ACL user deleted), another client waits; the gap from the holder's "
               "`lost()` to the other's acquisition, 1 s lease.")
        if deposed:
            md += "\n\n" + self.s8_deposed(deposed, data)
        return md, data

    def s8_deposed(self, runs, data):
        """Holders told at push speed (config::track_holds): per deployment and kind."""
        rows = []
        for run in runs:
            lib = run["entry"].get("library")
            m = run["output"]["metrics"] if run["output"] and not run["failure"] else {}
            data["deposed-" + str(lib)] = m or {"failure": run["failure"]}
            where = "3-master cluster" if lib == "rlock-cluster" else "one server"
            if not m:
                rows.append([where, "failed: " + (run["failure"] or "?"), "", "", "", ""])
                continue
            for kind, k in sorted(m.get("kinds", {}).items()):
                rows.append([where, kind, num(k.get("p50_ms")), num(k.get("p99_ms")),
                             k.get("count"), "flush only" if kind == "read" else "del, overwrite, flush"])
                self.goals.append(goal("S8", "deposed %s on %s: change -> lost() p50 <= 2 ms" % (kind, where),
                                       "p50 ms", k.get("p50_ms"), None, None, "<=", 2.0))
            for change, k in sorted(m.get("changes", {}).items()):
                rows.append([where, "every kind, " + change, num(k.get("p50_ms")), num(k.get("p99_ms")),
                             k.get("count"), ""])
            rows.append([where, "scripts sent per lock+unlock pair, tracking on / off",
                         "%s / %s" % (num(m.get("commands_per_pair_tracking")),
                                      num(m.get("commands_per_pair_untracked"))), "", "", ""])
            rows.append([where, "server calls per pair (the scripts' own included), on / off",
                         "%s / %s" % (num(m.get("server_calls_per_pair_tracking")),
                                      num(m.get("server_calls_per_pair_untracked"))), "", "", ""])
            self.goals.append(goal("S8", "deposed on %s: every change told (none missed)" % where,
                                   "missed", m.get("missed"), None, None, "<=", 0.0))
            self.goals.append(goal("S8", "deposed on %s: no extra command per pair" % where,
                                   "commands per pair", m.get("commands_per_pair_tracking"),
                                   "untracked", m.get("commands_per_pair_untracked"), "<=", 1.0))
        md = table(["deployment", "kind / change", "p50 ms", "p99 ms", "n", "changes"], rows)
        md += ("\n\nDeposed holders: each kind held (watchdog lease 30 s), then another client "
               "sends DEL, an overwrite (MULTI: DEL, HSET of another owner's field) or FLUSHALL; from "
               "that command's send to the holder's `lost()`. The server pushes an invalidation "
               "(CLIENT TRACKING ON OPTOUT NOLOOP), the client renews that hold at once and the "
               "renewal finds it gone. A read hold is measured by FLUSHALL only (other readers write "
               "its key: a DEL waits for the next round). Per pair, over 1000 lock+unlock pairs: "
               "the scripts clients sent (INFO commandstats, EVALSHA and EVAL) and every command "
               "the server ran (INFO stats, the scripts' own calls included: each acquire script "
               "ends with a read of its key, with tracking on or off).")
        return md

    # -- plots --
    def write_plot_data(self, out):
        # handoff gaps: CDF per library at P=PLOT_P (or the nearest P that ran)
        ps = sorted({p for (s, _, p) in self.s3 if s == "S3"})
        plot_p = min(ps, key=lambda p: (abs(p - PLOT_P), p)) if ps else PLOT_P
        blocks = []
        curves = [("S3", l) for l in LIBRARIES if l != "rlock-blocking"] + [("S7", "rlock-blocking")]
        for scenario, lib in curves:
            g = self.s3.get((scenario, lib, plot_p))
            if not g or not g["gaps"]:
                continue
            gaps = g["gaps"]
            n = len(gaps)
            idx = range(n)
            if n > CDF_POINTS:  # evenly spaced ranks, the last (the max) included
                idx = sorted({int(round(i * (n - 1) / (CDF_POINTS - 1))) for i in range(CDF_POINTS)})
            lines = ['"%s (p50 %s µs)" %d' % (lib, num(percentile(gaps, 50)), LIBRARIES.index(lib) + 1)]
            for i in idx:
                lines.append("%.3f %.6f" % (max(gaps[i], 0.001), (i + 1) / n))
            blocks.append("\n".join(lines))
        with open(os.path.join(out, "handoff_latency.dat"), "w") as f:
            f.write("# S3 handoff gap (µs) and cumulative fraction, P=%d, one block per library\n" % plot_p)
            f.write("# plot_p=%d\n" % plot_p)
            if self.ping_p50_us("ping_s3"):
                f.write("# ping_p50_us=%.3f\n" % self.ping_p50_us("ping_s3"))
            f.write("\n\n\n".join(blocks) + "\n" if blocks else "")
        # throughput: S2 pairs/s vs concurrency per library
        blocks = []
        for lib in LIBRARIES:
            pts = []
            for run in self.runs["S2"]:
                e = run["entry"]
                if (e.get("library") == lib and e.get("mode") == "s2" and run["output"]
                        and not run["failure"]):
                    pts.append((e.get("params", {}).get("concurrency"),
                                run["output"]["metrics"].get("pairs_per_s")))
            pts = sorted(p for p in pts if p[0] and p[1])
            if pts:
                blocks.append("\n".join(['"%s" %d' % (lib, LIBRARIES.index(lib) + 1)] +
                                         ["%d %.1f" % p for p in pts]))
        with open(os.path.join(out, "throughput.dat"), "w") as f:
            f.write("# S2 concurrency and pairs/s, one block per library\n")
            if self.ref("evalsha_c50", "rps"):
                f.write("# evalsha_c50_rps=%.1f\n" % self.ref("evalsha_c50", "rps"))
            f.write("\n\n\n".join(blocks) + "\n" if blocks else "")
        return plot_p

    # -- F1: the family --
    def f1_params(self):
        text = read_text(os.path.join(self.raw, "f1-params.txt")) or ""
        params = dict(line.split("=", 1) for line in text.split() if "=" in line)
        return float(params.get("seconds", 0) or 0), int(params.get("hold_ms", 50) or 50)

    def section_f1(self, out):
        """Per kind: ops/s, waits, overlaps, FIFO violations and the handoff overhead
        (bench/family.py has the definitions); the goals of issue 37; family.dat for the plot."""
        seconds, hold_ms = self.f1_params()
        if not self.runs["F1"] or not seconds:
            return "", []
        import family
        rows = family.analyse(self.raw, seconds, hold_ms)
        body = []
        for r in rows:
            w = r.get("writers")
            body.append([
                F1_RUN_NAMES.get(r["run"], r["run"]), r.get("workers"), num(r.get("ops_per_s"), 4),
                num(r.get("wait_p50_ms")), num(r.get("wait_p99_ms")), num(r.get("wait_mean_ms")),
                r.get("unfinished", 0), r.get("overlaps"),
                r.get("fifo_violations") if r["run"] == "fair" else "—",
                num(r.get("handoff_p50_ms")), num(r.get("handoff_p99_ms")),
                ("%s (%s / %s)" % (num(100 * r["writer_share"], 3) + " %", num(w["wait_p50_ms"]),
                                   num(w["wait_p99_ms"]))) if w else "—",
                "%s of %s" % (r.get("workers_served", "—"), r.get("workers"))
                if r["run"] != "latch" else "—"])
            name = F1_RUN_NAMES.get(r["run"], r["run"])
            self.goals.append(goal("F1", "%s: no overlap" % name, "overlaps", r.get("overlaps"),
                                   None, None, "==", 0))
            if r["run"] in ("reentrant", "fair", "rw-writers"):
                self.goals.append(goal("F1", "%s: handoff overhead p50 <= %s ms" % (
                    name, F1_HANDOFF_GOAL_MS), "handoff p50 ms", r.get("handoff_p50_ms"), None,
                    None, "<=", F1_HANDOFF_GOAL_MS))
                # Its floor in the same run: the same handoff by blocking minimal clients in F1's
                # rhythm (the holder's unlock script after F1's hold; 4 processes answering each
                # unlock, or the fair handoff with 3 more queued), or, from a run before those,
                # S3's at P = 2.
                fair = r["run"] == "fair"
                mode = "s3-fair-floor" if fair else "s3-floor"
                at_p = {"queued": F1_PROCESSES - 2} if fair else {"contenders": F1_PROCESSES - 1}
                floor = self.metric("S3", "rlock", mode=mode, release=1, **at_p)
                label = "F1's %s p50 µs (%s, %d ms holds)" % (
                    mode, ", ".join("%s %d" % kv for kv in at_p.items()), hold_ms)
                if not floor:
                    floor = self.metric("S3", "rlock", mode=mode)
                    label = "%s p50 µs (P = 2)" % mode
                handoff_us = (r.get("handoff_p50_ms") or 0) * 1000.0 or None
                floor_us = floor.get("p50_us") if floor else None
                self.goals.append(reported("F1", "%s: handoff p50 against its floor" % name,
                                           "handoff p50 µs", handoff_us, label, floor_us))
                self.goals.append(goal("F1", "%s: the floor's own handoff p50 <= %s ms, or the "
                                       "goal above is out of this machine's reach" % (
                                           name, F1_HANDOFF_GOAL_MS), label.replace(" µs", " ms"),
                                       floor_us / 1000.0 if floor_us else None, None, None, "<=",
                                       F1_HANDOFF_GOAL_MS))
            if r["run"] == "fair":
                self.goals.append(goal("F1", "fair: no FIFO violation", "FIFO violations",
                                       r.get("fifo_violations"), None, None, "==", 0))
            if r["run"] == "rw-writers" and w:
                self.goals.append(goal("F1", "writers first: writers >= 25 % of acquisitions",
                                       "writer share", r.get("writer_share"), None, None, ">=", 0.25))
                self.goals.append(goal("F1", "writers first: writer wait p99 <= 10 x hold",
                                       "writer wait p99 ms", w.get("wait_p99_ms"), None, None, "<=",
                                       10.0 * hold_ms))
            if r.get("overlaps"):
                self.failures.append("F1 %s: %d overlap(s)" % (r["run"], r["overlaps"]))
        with open(os.path.join(out, "family.dat"), "w") as f:
            f.write("# F1: kind, ops/s, wait p50, p99 (ms), handoff p50 (ms); hold %d ms\n" % hold_ms)
            for i, r in enumerate(rows):
                f.write('%d "%s" %.3f %.3f %.3f %.3f\n' % (
                    i, r["run"], r.get("ops_per_s") or 0, r.get("wait_p50_ms") or 0,
                    r.get("wait_p99_ms") or 0, r.get("handoff_p50_ms") or 0))
        md = ("Hold %d ms, %s s measured after a warm-up, every process pinned to the client CPU. "
              "Waits include requests still waiting when the phase ended (`unfinished`, with the "
              "wait they had). Handoff: the time the lock sat free while someone waited (for the "
              "exclusive kinds, the interval between acquisitions minus the hold as held); the "
              "latch's is a waiter's release after the last count-down. Redisson's published "
              "figures (redlock4j, 3 nodes, their machine; a reference, not a same-run peer): "
              "lock 18.24 ops/s (about 4.8 ms per handoff), fair lock 16.95 (about 9 ms), "
              "read-write lock 0.21 writer acquisitions/s, writer p99 16.8 s.\n\n" % (
                  hold_ms, num(seconds))) + table(
            ["kind", "processes", "ops/s", "wait p50 ms", "wait p99 ms", "mean wait ms",
             "unfinished", "overlaps", "FIFO violations", "handoff p50 ms", "handoff p99 ms",
             "writers: share (wait p50 / p99 ms)", "processes served"], body)
        return md, rows

    # -- everything --
    def build(self, out):
        sections = []
        data = {}
        md, data["references"] = self.section_refs()
        sections.append(md)
        s1_md, s1 = self.section_s1()
        s2_md, s2 = self.section_s2()
        s3_md, s3 = self.section_s3()
        s4_md, s4 = self.section_s4()
        s5_md, s5 = self.section_s5()
        s6_md, s6 = self.section_s6()
        s7_md, s7 = self.section_s7(s1, s3)
        s8_md, s8 = self.section_s8()
        s9_md, s9 = self.section_s9()
        f1_md, f1 = self.section_f1(out)
        m1_md, m1 = self.section_m1()
        q1_md, q1 = self.section_q1()
        e1_md, e1 = self.section_e1()
        bodies = {"S1": s1_md, "S2": s2_md, "S3": s3_md, "S4": s4_md, "S5": s5_md, "S6": s6_md, "S7": s7_md,
                  "S8": s8_md, "S9": s9_md, "F1": f1_md,
                  "M1": m1_md, "Q1": q1_md, "E1": e1_md}
        data.update({"S1": s1, "S2": s2, "S3": s3, "S4": s4, "S5": s5, "S6": s6, "S7": s7, "S8": s8,
                     "S9": s9, "F1": f1, "M1": m1, "Q1": q1, "E1": e1})
        plot_p = self.write_plot_data(out)
        for (s, l, p), g in self.s3.items():
            if g["stats"]["overlaps"]:
                self.failures.append("%s %s P=%d: %d overlap violation(s)"
                                     % (s, l, p, g["stats"]["overlaps"]))
        for sid, title in SCENARIOS.items():
            goals = [g for g in self.goals if g["scenario"] == sid]
            ran = bool(self.runs[sid]) or any(s == sid for (s, _, _) in self.s3)
            text = "## %s\n\n" % title
            text += bodies[sid] if ran else "_not run_"
            if goals and ran:
                text += "\n\nGoals:\n\n" + table(
                    ["goal", "figure", "reference", "ratio", "limit", "verdict"],
                    [[g["goal"], "%s = %s" % (g["figure"], num(g["value"])),
                      ("%s = %s" % (g["reference"], num(g["reference_value"])) if g["reference"]
                       else "(absolute)"),
                      num(g["ratio"]),
                      ("%s %s %s" % ("ratio" if g["reference"] else "value", g["op"], num(g["limit"]))
                       if g["op"] else "— (reported)"),
                      g["verdict"]] for g in goals])
            sections.append(text)
        m = self.machine
        verdicts = [g["verdict"] for g in self.goals]
        header = "\n".join([
            "# rlock benchmark results",
            "",
            "Generated by `bench/report.py` from the raw results of one `scripts/bench` run.",
            "",
            table(["", ""], [
                ["command", "`%s`" % m.get("command", "?")],
                ["date", m.get("date", "?")],
                ["mode", m.get("mode", "?")],
                ["CPU", "%s (nproc %s)" % (m.get("cpu_model", "?"), m.get("nproc", "?"))],
                ["kernel", m.get("kernel", "?")],
                ["redis-server", "%s (pinned to CPU %s; clients pinned to CPU %s)" % (
                    m.get("redis_version", "?"), m.get("server_cpu", "?"), m.get("client_cpu", "?"))],
                ["clients", "node %s, python %s, redis-py %s" % (m.get("node_version", "?"), m.get(
                    "python_version", "?"), m.get("redis_py_version", "?"))],
                ["acquire script", "%s, sha %s" % (m.get("acquire_script_source", "?"),
                                                    m.get("acquire_sha", "?"))],
                ["wall time", "%s s" % m.get("elapsed_s", "?")],
                ["goals", "%d PASS, %d FAIL, %d n/a%s" % (
                    verdicts.count("PASS"), verdicts.count("FAIL"), verdicts.count("n/a"),
                    ("; %d ratio(s) reported without a limit" % verdicts.count("reported"))
                    if "reported" in verdicts else "")],
            ]),
        ])
        extra = []
        if self.unavailable:
            extra.append("Unavailable libraries:\n\n" + "\n".join(
                "- %s: %s" % (l, r) for l, r in sorted(self.unavailable.items())))
        if self.failures:
            extra.append("**Failures** (these make the run exit non-zero):\n\n" + "\n".join(
                "- " + md_escape(f) for f in self.failures))
        if self.notes:
            extra.append("Notes:\n\n" + "\n".join("- " + md_escape(n) for n in self.notes))
        plots = ("Plots: `handoff_latency.png` (S3 handoff gap CDF at P=%d) and `throughput.png` "
                 "(S2 pairs/s vs concurrency)%s." % (
                     plot_p, "; `family.png` (F1 ops/s and waits per kind)" if f1 else ""))
        markdown = "\n\n".join([header] + extra + [plots] + sections) + "\n"
        result = {
            "machine": m,
            "command": m.get("command"),
            "date": m.get("date"),
            "mode": m.get("mode"),
            "unavailable": self.unavailable,
            "failures": self.failures,
            "notes": self.notes,
            "goals": self.goals,
            "results": data,
            "plot_p": plot_p,
            "raw": self.raw_outputs,
        }
        return markdown, result


def main():
    ap = argparse.ArgumentParser(description="Summarize raw rlock benchmark results (issue #3).")
    ap.add_argument("raw", help="directory of raw results (scripts/bench: bench/results/raw)")
    ap.add_argument("--out", help="where latest.json, latest.md and *.dat go (default: RAW)")
    args = ap.parse_args()
    if not os.path.isdir(args.raw):
        ap.error("%s is not a directory" % args.raw)
    out = args.out or args.raw
    os.makedirs(out, exist_ok=True)
    report = Report(args.raw)
    markdown, result = report.build(out)
    for name, text in (("latest.md", markdown), ("latest.json", json.dumps(result, indent=1) + "\n")):
        tmp = os.path.join(out, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, os.path.join(out, name))
    verdicts = [g["verdict"] for g in report.goals]
    sys.stderr.write("report: wrote %s and %s: goals %d PASS, %d FAIL, %d n/a\n" % (
        os.path.join(out, "latest.md"), os.path.join(out, "latest.json"),
        verdicts.count("PASS"), verdicts.count("FAIL"), verdicts.count("n/a")))
    if report.failures:
        sys.stderr.write("report: %d failure(s):\n" % len(report.failures))
        for f in report.failures:
            sys.stderr.write("report:   %s\n" % f)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
