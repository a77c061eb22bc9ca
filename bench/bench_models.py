#!/usr/bin/python3
"""bench_models: torchvision's ResNet-18, MobileNetV2 and ViT-B/16 (issue 14;
random seeded weights, batch 1, traces/models/vision.py), exported into
$SPYRE_BUILD/models/NAME (not stored in the repository: 45, 14 and 350 MB)
and run with `spyre run DIR --check` on spyre and spyre-4core.  Prints per
model and chip `MODEL.CHIP.cycles=`, `.mac_utilization=`, `.fallback_ops=`
and `.check=ok|vacuous|fail|error` (vacuous: some tolerance infinite, end to end and stepwise;
the error line on stderr) with `.checked=end-to-end|stepwise` (docs/validation.md); last,
`models_validated=` out of the runs.  SPYRE_MODELS=resnet18,... picks some."""
import os
import re
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.environ.get("SPYRE_BUILD", os.path.join(root, "build"))
models = os.environ.get("SPYRE_MODELS", "resnet18,mobilenet_v2,vit_b_16").split(",")
chips = ["spyre", "spyre-4core"]


def export(name, source="traces/models/vision.py"):
    """The export of source's FUNC name into $SPYRE_BUILD/models/NAME (kept once made)."""
    out = os.path.join(build, "models", name)
    if not os.path.exists(os.path.join(out, "graph.txt")):
        subprocess.run([sys.executable, os.path.join(root, "tools", "export.py"),
                        f"{source}:{name}", "-o", out], cwd=root, check=True)
    return out


KEYS = ("cycles", "mac_utilization", "fallback_ops", "check", "checked")


def run(directory, chip):
    p = subprocess.run([os.path.join(build, "spyre"), "run", directory, "--check", "--config", chip],
                       capture_output=True, text=True)
    text = p.stdout + p.stderr
    got = {}
    for key in ("cycles", "mac_utilization", "fallback_ops"):
        m = re.search(rf"^{key}=(\S+)", text, re.M)
        got[key] = m.group(1) if m else "none"
    checks = re.findall(r"^check .*", text, re.M)
    steps = [c for c in checks if re.match(r"check \S+ (stepwise|cut) ", c)]
    got["checked"] = "stepwise" if steps else "end-to-end"
    if p.returncode == 0 and checks and all(c.endswith((" ok", " vacuous")) for c in checks):
        # an infinite tolerance, or a count ending the line in "vacuous"
        # (differ=, beyond=), proves nothing (docs/validation.md); a
        # stepwise check stands in for a vacuous end-to-end one
        got["check"] = "vacuous" if any(" vacuous=" in c or c.endswith(" vacuous")
                                        for c in (steps or checks)) else "ok"
    else:
        got["check"] = "fail" if checks else "error"
        sys.stderr.write(f"{os.path.basename(directory)} on {chip}: " +
                         (text.strip().splitlines() or ["no output"])[-1] + "\n")
    return got


def host_ops(directory, chip):
    """The ops `spyre compile --report` runs on the host, by graph line ("-" if
    none, "error" if it does not compile)."""
    p = subprocess.run([os.path.join(build, "spyre"), "compile", os.path.join(directory, "graph.txt"),
                        "-o", os.devnull, "--report", "--config", chip], capture_output=True, text=True)
    if p.returncode:
        return "error"
    ops = re.findall(r"host fallback aten\.(\S+?)(?:\.\w+)? \(graph line (\d+)\)", p.stdout + p.stderr)
    return ",".join(f"{op}@{line}" for op, line in ops) or "-"


def run_all(names, on, last_key, source="traces/models/vision.py", hosted_key=None):
    """Export and run each model (of file source, or source(name)) on each chip, print their lines, then
    last_key=validated/runs (no host op); with hosted_key, also each run's
    `.host_ops=` and hosted_key=validated/runs with host ops allowed.  A
    model that does not export counts as a run with check=error.  Exit 1
    unless every run validated with no host op."""
    ok = hosted = total = 0
    for name in names:
        try:
            d = export(name, source(name) if callable(source) else source)
        except subprocess.CalledProcessError:
            d = None
        for chip in on:
            got = run(d, chip) if d else dict.fromkeys(KEYS, "none") | {"check": "error"}
            keys = KEYS + ("host_ops",) if hosted_key else KEYS
            if hosted_key:
                got["host_ops"] = host_ops(d, chip) if d else "none"
            for key in keys:
                print(f"{name}.{chip}.{key}={got[key]}", flush=True)
            total += 1
            ok += got["check"] == "ok" and got["fallback_ops"] == "0"
            hosted += got["check"] == "ok"
    if hosted_key:
        print(f"{hosted_key}={hosted}/{total}")
    print(f"{last_key}={ok}/{total}")
    return 0 if ok == total else 1


if __name__ == "__main__":
    sys.exit(run_all(models, chips, "models_validated"))
