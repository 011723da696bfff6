#!/usr/bin/env python3
"""The published benchmark results are complete: every scenario, every library (each kind of
rlock's among them) and every F1 run that `scripts/bench --list` names has a row in
bench/results/latest.json, made by a driver that exited 0, and latest.md says when it ran.

So a new kind or scenario cannot land without published figures. Not timed: it reads files.
Usage: results_test.py --source DIR
"""
import argparse
import json
import pathlib
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True, help="the checkout")
    args = parser.parse_args()
    source = pathlib.Path(args.source)
    listed = subprocess.run([str(source / "scripts" / "bench"), "--list"], check=True,
                            capture_output=True, text=True).stdout.split("\n")
    wanted = {"scenario": [], "library": [], "f1-run": []}
    for line in filter(None, listed):
        what, name = line.split(" ", 1)
        wanted[what].append(name)
    results = json.loads((source / "bench" / "results" / "latest.json").read_text())
    raw = results.get("raw", [])
    ran = [r for r in raw if r.get("exit") == 0 and not r.get("failure")]
    problems = []
    if results.get("mode") != "full":
        problems.append("latest.json is from a %r run, not a full one: run scripts/bench"
                        % results.get("mode"))
    for scenario in wanted["scenario"]:
        if not any(r.get("scenario") == scenario for r in ran):
            problems.append("scenario %s has no row: run scripts/bench (or --scenarios %s) and "
                            "commit bench/results" % (scenario, scenario))
    unavailable = results.get("unavailable") or {}
    for library in wanted["library"]:
        if library in unavailable:
            problems.append("library %s was unavailable in the published run: %s"
                            % (library, unavailable[library]))
        elif not any(r.get("library") == library for r in ran):
            problems.append("library %s has no row: run scripts/bench and commit bench/results"
                            % library)
    for run in wanted["f1-run"]:
        if not any(r.get("scenario") == "F1" and (r.get("params") or {}).get("run") == run
                   for r in ran):
            problems.append("F1 run %s has no row: run scripts/bench (F1) and commit "
                            "bench/results" % run)
    date = results.get("date", "")
    markdown = (source / "bench" / "results" / "latest.md").read_text()
    if not date or date not in markdown:
        problems.append("latest.md does not carry latest.json's date %r: both come from one run"
                        % date)
    for p in problems:
        print("results_test: " + p, file=sys.stderr)
    print("results_test: %d scenarios, %d libraries, %d F1 runs checked in the run of %s: %s"
          % (len(wanted["scenario"]), len(wanted["library"]), len(wanted["f1-run"]), date,
             "missing rows" if problems else "complete"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
