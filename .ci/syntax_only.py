#!/usr/bin/env python3
"""Runs a configured tree's compile commands with -fsyntax-only: the compiler's front end
(every clang warning, -Werror included) without code generation, for the sources under the
given paths. Usage: syntax_only.py BUILD/compile_commands.json ROOT PATH... (PATH relative to
ROOT: a folder or a file). Exit 1 when a command fails (its output printed), 2 when nothing
matched (a check that read nothing must not pass)."""
import json, os, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

def main():
    db, root, paths = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3:]
    wanted = [os.path.join(root, p) for p in paths]
    seen, jobs = set(), []
    for e in json.load(open(db)):
        f = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if f in seen or not any(f == w or f.startswith(w.rstrip("/") + "/") for w in wanted):
            continue
        seen.add(f)
        args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        out, skip = [], False
        for i, a in enumerate(args):
            if skip:
                skip = False
                continue
            if a in ("-o", "-MT", "-MF", "-MQ"):
                skip = True
                continue
            if a in ("-c", "-MD", "-MMD"):
                continue
            out.append(a)
        jobs.append((f, e["directory"], out + ["-fsyntax-only"]))
    if not jobs:
        print("syntax_only: no compile command matched %s" % " ".join(paths), file=sys.stderr)
        return 2

    def run(job):
        f, d, cmd = job
        p = subprocess.run(cmd, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return f, p.returncode, p.stdout

    failed = 0
    with ThreadPoolExecutor(max_workers=int(os.environ.get("JOBS", "2"))) as ex:
        for f, rc, text in ex.map(run, jobs):
            if rc != 0 or text.strip():
                sys.stdout.write(text)
            failed += rc != 0
    print("syntax_only: %d file(s), %d failed" % (len(jobs), failed))
    return 1 if failed else 0

sys.exit(main())
