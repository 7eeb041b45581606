#!/usr/bin/env python3
"""Summarises a trace written by `go build|test|vet -debug-trace=FILE`:
the time spent per kind of action (compile, vet, link, test run), the
longest actions, and the critical path, found by walking back from the last
action to whichever of its dependencies finished last.

    GOCACHE=$(mktemp -d) go test -trimpath -vet=all -count=1 \
        -debug-trace=/tmp/test.trace ./...
    python3 scripts/buildtrace.py /tmp/test.trace [N]

Times are wall-clock times of each action: on a busy machine they include
the time the action waited for a CPU. See docs/performance.md.
"""
import collections
import json
import re
import sys


def main():
    events = json.load(open(sys.argv[1]))
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    t0 = min(e["ts"] for e in events)
    t1 = max(e["ts"] for e in events)
    stacks = collections.defaultdict(list)
    actions = {}  # name -> (start, end), seconds from the start of the trace
    deps = collections.defaultdict(set)
    prefix = "Executing action ("
    for e in events:
        if e["ph"] == "B":
            stacks[(e["pid"], e["tid"])].append(e)
        elif e["ph"] == "E":
            b = stacks[(e["pid"], e["tid"])].pop()
            if b["name"].startswith(prefix):
                actions[b["name"][len(prefix):-1]] = ((b["ts"] - t0) / 1e6, (e["ts"] - t0) / 1e6)
        elif e["ph"] == "s":
            m = re.match(r"Executing action \((.*)\) -> Executing action \((.*)\)$", e["name"])
            if m:
                deps[m.group(2)].add(m.group(1))
    print(f"{(t1 - t0) / 1e6:.1f}s in all, {len(actions)} actions")

    kinds, counts = collections.Counter(), collections.Counter()
    for name, (s, f) in actions.items():
        words = name.split(" ")
        kind = " ".join(words[:3]) if name.startswith("build check cache") else words[0]
        if name.startswith("test "):
            kind = " ".join(words[:2])
        elif kind == "build" and " [" in name:
            kind = "build (with tests)"
        kinds[kind] += f - s
        counts[kind] += 1
    print("time per kind of action (s, count):")
    for kind, t in kinds.most_common():
        print(f"  {kind:20s} {t:8.1f} {counts[kind]:5d}")

    print(f"the {top} longest actions:")
    for name, (s, f) in sorted(actions.items(), key=lambda a: a[1][0] - a[1][1])[:top]:
        print(f"  {f - s:7.1f}s  [{s:6.1f} - {f:6.1f}]  {name}")

    print("critical path, from the end (actions of 0.5 s or more):")
    name = max(actions, key=lambda n: actions[n][1])
    while name:
        s, f = actions[name]
        if f - s >= 0.5:
            print(f"  {f - s:7.1f}s  [{s:6.1f} - {f:6.1f}]  {name}")
        ds = [d for d in deps.get(name, ()) if d in actions]
        name = max(ds, key=lambda d: actions[d][1]) if ds else None


if __name__ == "__main__":
    main()
