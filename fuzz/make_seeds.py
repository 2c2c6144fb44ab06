#!/usr/bin/env python3
"""Writes fuzz/corpus/<target>/ from the tests' own inputs (docs/fuzzing.md).

Run from anywhere; rerun when the inputs it reads change. Each seed is
named by its content's SHA-1, as libFuzzer names what it adds, so rerunning
adds nothing twice. Inputs of targets that read several files at once are
the files joined by lines "%%" (fuzz/fuzz_util.h split_parts).
"""
import hashlib
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEP = b"\n%%\n"
MAX_SEED = 64 * 1024  # larger inputs slow every run and add little


def files(*patterns):
    out = []
    for pattern in patterns:
        out.extend(sorted(p for p in ROOT.glob(pattern) if p.is_file()))
    return out


def write(target, seeds):
    d = ROOT / "fuzz" / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    kept = 0
    for seed in seeds:
        if len(seed) > MAX_SEED:
            continue
        (d / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        kept += 1
    print(f"{target}: {kept} seeds")


def quoted_strings(paths, call):
    """The first string argument of each `call("...")` in C++ test files."""
    out = []
    pattern = re.compile(re.escape(call) + r'\(?\s*"((?:[^"\\]|\\.)*)"')
    for p in paths:
        for m in pattern.finditer(p.read_text()):
            out.append(bytes(m.group(1), "utf-8").decode("unicode_escape").encode())
    return out


def frame(header, payloads):
    header = dict(header, payloads=[len(p) for p in payloads])
    return json.dumps(header).encode() + b"\n" + b"".join(payloads)


def main():
    heredocs = []
    for script in files("tests/e2e/*.sh"):
        heredocs += [m.encode() for m in re.findall(r"<<'?YAML'?\n(.*?)\nYAML\n", script.read_text(), re.S)]
    write("config", [p.read_bytes() for p in files("configs/*.yaml", "configs/examples/*.yaml")] + heredocs
          + [p.read_bytes() + SEP + b"concurrency=3" + SEP + b"verifier.mode=correctness"
             for p in files("configs/default.yaml")])
    selector_tests = files("src/core/selector_test.cc", "src/core/case_set_test.cc")
    write("selector", [s for call in ("parse_ok", "parse_bad", "select_cases(root_, \"level1\",")
                       for s in quoted_strings(selector_tests, call)]
          + [b"19", b"19_ReLU", b"1:21,31", b"level1=1,3;level2=9;pto_case=1:6", b""])
    candidates = files("data/sample/**/*.py", "tests/exploits/**/*.py")
    write("python_rules", [p.read_bytes() for p in candidates]
          + [candidates[0].read_bytes() + SEP + candidates[1].read_bytes()])
    write("cpp_scan", [p.read_bytes() for p in files("tests/e2e/faults/*.cpp")]
          + [p.read_bytes() for p in candidates if b"load_inline" in p.read_bytes()])
    tensor = bytes(range(256)) * 4
    write("protocol", [
        b"\x00" + frame({"op": "ready", "pid": 7}, []),
        b"\x07" + frame({"op": "result", "outputs": [{"dtype": "float32", "shape": [4, 64]}]}, [tensor]),
        b"\xff" + frame({"op": "error", "message": "boom"}, []) + frame({"op": "inputs"}, [b"ab", b"", b"c"]),
        b"\x02" + b'{"op":"timing","samples":[1.5e-6,2e-6]}\n',
    ])
    runs = []
    for run in files("tests/fixtures/runs/*/run.json"):
        run_dir = run.parent
        state = run_dir / "state.json"
        for result in sorted(run_dir.glob("cases/*/*/result.json")):
            runs.append(run.read_bytes() + SEP + (state.read_bytes() if state.exists() else b"{}")
                        + SEP + result.read_bytes())
    fixtures = ROOT / "tests" / "fixtures"
    for result in sorted(fixtures.glob("cases/**/result.json")):
        runs.append((fixtures / "run.json").read_bytes() + SEP + (fixtures / "state.json").read_bytes()
                    + SEP + result.read_bytes())
    write("run_records", runs)
    write("transcript", [p.read_bytes() for p in files("tests/transcripts/*/*", "tests/data/agent_streams/*")
                         if p.suffix != ".md"])
    # perf's report as the outside sampler reads it (verify/cpu_profile_test.cc):
    # the script's half, then the nameless counts and build ids.
    write("perf_report", [
        b"    0 PERF_RECORD_FORK(100:100):(1:1)\n  100 \n\t 7f00 (/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0)"
        b"\n\n  100 \n\t 7f01 (/tmp/kgym/prebuilt/e0/ext.so)\n\n  100 \n\n  100 \n  100 \n  100 \n"
        b"8c759e09a29460666e73b78a56457476a1d8e3db /usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0\n",
        b"   50 \n\t 7f00 (/tmp/x\n\t 1 (/tmp/own.so)\n\n   50 \n   50 \n",
        b"  101 PERF_RECORD_FORK(300:300):(101:101)\n  300 \n\tffffffff8224 ([kernel.kallsyms])\n\t 1088de "
        b"(/usr/bin/python3.11)\n\n  300 \n  101 \n",
    ])
    write("tar", tar_seeds())


def tar_seeds():
    """Archives as a bundle could hold them, and as an attacker would make them."""
    import gzip
    import io
    import tarfile

    def archive(members, fmt=tarfile.USTAR_FORMAT):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
            for name, kind, data in members:
                info = tarfile.TarInfo(name)
                info.mtime = 0
                if kind == "file":
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                else:
                    info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE,
                                 "fifo": tarfile.FIFOTYPE, "chr": tarfile.CHRTYPE}[kind]
                    if kind in ("sym", "hard"):
                        info.linkname = data.decode()
                    tar.addfile(info)
        return out.getvalue()

    problem = (ROOT / "data/sample/level1/1_ReLU.py").read_bytes()
    bundle = [("manifest.json", "file", b'{"format":"kgym-repro","format_version":1,"files":[]}'),
              ("files", "dir", b""), ("files/problem.py", "file", problem), ("files/candidate.py", "file", b"x = 1\n")]
    seeds = [
        archive(bundle),
        gzip.compress(archive(bundle), mtime=0),
        archive([("a/" * 60 + "deep.py", "file", b"deep")]),  # a ustar prefix
        archive([("link", "sym", b"/etc/passwd")]),
        archive([("hard", "hard", b"files/problem.py")]),
        archive([("fifo", "fifo", b"")]),
        archive([("../escape.py", "file", b"x")]),
        archive([("/abs.py", "file", b"x")]),
        archive([("x", "file", b"1"), ("x", "file", b"2")]),
        archive([("x", "file", b"1"), ("x/y", "file", b"2")]),
        archive([("p" * 120, "file", b"long")], fmt=tarfile.PAX_FORMAT),
        archive([("g" * 120, "file", b"long")], fmt=tarfile.GNU_FORMAT),
    ]
    return seeds


if __name__ == "__main__":
    sys.exit(main())
