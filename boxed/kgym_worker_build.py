"""A candidate's extension builds, split from their use (docs/build.md).

The build stage imports the candidate once, with no device, and records
every build torch.utils.cpp_extension runs for it (load_inline and load both
go through _jit_compile): a key made of the extension's name, its sources'
contents and its build arguments, and the library built, copied with a
manifest into the prebuilt directory. A verification worker imports the
candidate again with that manifest: a build call whose key the manifest
holds loads the library built for it; any other is refused (error kind
"unbuilt") and nothing is compiled. The worker's escape guard refuses every
subprocess there, so no compiler can run on the device at all.

The `pch` command (trusted: it runs outside the candidate's box and imports
torch only) precompiles torch/extension.h once per torch, compiler and
flags, for the builds to include.

Standard library and torch only; torch 1.13 and 2.x.
"""

import hashlib
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from kgym_worker_common import WorkerError, exception_line, log

MANIFEST = "manifest.json"
# Arguments that say where a build happens or how loud it is, not what it builds.
WHERE = ("sources", "build_directory", "verbose", "keep_intermediates")


def file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ExtensionBuilds:
    """Installed before the candidate is imported. mode "build": builds run
    and are recorded into `directory`; mode "prebuilt": builds are looked up
    in `directory`'s manifest and loaded, never run. `pch_dir` (build mode)
    holds the precompiled header's variants: a build whose C++ flags have
    one includes it (an -I that is not part of the key)."""

    def __init__(self, mode, directory, candidate_dir, pch_dir=None):
        if mode not in ("build", "prebuilt"):
            raise ValueError(mode)
        self.mode = mode
        self.directory = directory
        self.candidate_dir = os.path.realpath(candidate_dir)
        self.pch_dir = pch_dir
        self.entries = []
        self.refused = []
        self.manifest = {}
        if mode == "prebuilt":
            with open(os.path.join(directory, MANIFEST), "r", encoding="utf-8") as f:
                for entry in json.load(f).get("extensions", []):
                    self.manifest[entry["key"]] = entry

    # ------------------------------------------------------------ the key

    def portable(self, value):
        """`value` with the candidate's own directory written as <candidate>:
        the build stage and the verification see the sources at different paths."""
        if isinstance(value, str):
            return value.replace(self.candidate_dir, "<candidate>")
        if isinstance(value, (list, tuple)):
            return [self.portable(v) for v in value]
        if isinstance(value, dict):
            return {k: self.portable(v) for k, v in value.items()}
        if value is None or isinstance(value, (bool, int, float)):
            return value
        return repr(value)

    def described(self, call):
        """What a build call builds, as the key and the evidence show it."""
        what = {name: self.portable(value) for name, value in call.items() if name not in WHERE}
        what["sources"] = [[os.path.basename(s), file_digest(s)] for s in call.get("sources") or []]
        return what

    @staticmethod
    def key_of(what):
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()

    # ------------------------------------------------------------ install

    def install(self):
        from torch.utils import cpp_extension

        original = cpp_extension._jit_compile
        signature = inspect.signature(original)
        builds = self

        def jit_compile(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            call = dict(bound.arguments)
            what = builds.described(call)
            if builds.mode == "build":
                return builds.build(cpp_extension, original, call, what)
            return builds.load(cpp_extension, what)

        cpp_extension._jit_compile = jit_compile
        # torch 2's own precompiled header for load_inline is written into
        # torch's install, which no box lets a candidate write; the build
        # stage's header takes its place.
        load_inline = cpp_extension.load_inline
        if "use_pch" in inspect.signature(load_inline).parameters:
            def load_inline_without_pch(*args, **kwargs):
                kwargs["use_pch"] = False
                return load_inline(*args, **kwargs)

            cpp_extension.load_inline = load_inline_without_pch

    def build(self, cpp_extension, original, call, what):
        key = self.key_of(what)
        run = dict(call)
        own = list(run.get("extra_cflags") or [])
        header = self.pch_dir and os.path.join(self.pch_dir, variant_id(own))
        with_pch = bool(header) and os.path.isfile(os.path.join(header, "torch", "extension.h.gch"))
        if with_pch:
            # -fpch-preprocess: ccache's preprocessor pass uses the header too.
            run["extra_cflags"] = ["-I" + header, "-fpch-preprocess"] + own
        result = original(**run)
        if any(e["key"] == key for e in self.entries):
            return result
        name = call["name"]
        version = cpp_extension.JIT_EXTENSION_VERSIONER.get_version(name)
        built = f"{name}_v{version}" if version else name
        library = os.path.join(call["build_directory"], built + self.library_suffix(cpp_extension, call))
        if not os.path.isfile(library):
            raise WorkerError("compile", f"extension '{name}' built, but its library {library} is missing")
        index = len(self.entries)
        target = os.path.join(self.directory, f"e{index}")
        os.makedirs(target, exist_ok=True)
        shutil.copyfile(library, os.path.join(target, os.path.basename(library)))
        self.entries.append({"key": key, "name": built, "file": os.path.join(f"e{index}", os.path.basename(library)),
                             "python_module": bool(call.get("is_python_module", True)),
                             "standalone": bool(call.get("is_standalone", False)), "pch": with_pch,
                             "what": what})
        return result

    @staticmethod
    def library_suffix(cpp_extension, call):
        if call.get("is_standalone"):
            return getattr(cpp_extension, "EXEC_EXT", "")
        return getattr(cpp_extension, "LIB_EXT", ".so")

    def write_manifest(self):
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, MANIFEST)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"extensions": self.entries}, f, indent=1)
        os.replace(path + ".tmp", path)

    def load(self, cpp_extension, what):
        key = self.key_of(what)
        entry = self.manifest.get(key)
        if entry is None:
            refusal = self.refusal(what)
            self.refused.append(refusal)
            raise WorkerError("unbuilt", refusal)
        library = os.path.join(self.directory, entry["file"])
        if entry["standalone"]:
            return library
        return cpp_extension._import_module_from_library(entry["name"], os.path.dirname(library),
                                                         entry["python_module"])

    def refusal(self, what):
        name = what.get("name", "?")
        same_name = [e["what"] for e in self.manifest.values() if e["what"].get("name") == name]
        if not same_name:
            differs = "the build stage built no extension of that name"
        else:
            built = same_name[0]
            fields = sorted(k for k in set(built) | set(what) if built.get(k) != what.get(k))
            differs = "its " + ", ".join(fields) + " differ from the build stage's"
        return (f"the candidate asked at verification for a build of extension '{name}' that the build stage "
                f"did not produce ({differs}); kgym builds only when it imports the candidate before the "
                f"device is leased, so build at import with the same sources and flags")

    def check_import(self):
        """After the import and every later request in prebuilt mode: a
        refused build fails the request even when the candidate caught the
        refusal."""
        if self.refused:
            raise WorkerError("unbuilt", self.refused[0])


def install_builds(header, guard):
    """The ExtensionBuilds an import request asks for ("builds": mode, dir,
    pch), installed, with the escape guard told whether torch's builder may
    run; None when the request names none."""
    builds = header.get("builds")
    if not builds:
        return None
    extensions = ExtensionBuilds(builds["mode"], builds["dir"], os.path.dirname(header["candidate"]),
                                 builds.get("pch"))
    extensions.install()
    if guard is not None:
        guard.extension_builds = builds["mode"] == "build"
    return extensions


def construct_for_builds(module, init_inputs):
    """The build stage builds ModelNew once too, so that the kernels its
    __init__ builds are built here, not on the device. Whatever else goes
    wrong is the verification's to find."""
    import torch

    try:
        torch.manual_seed(0)
        module.ModelNew(*init_inputs)
    except WorkerError:
        raise
    except Exception as exc:
        log(f"build stage: ModelNew(...) failed ({exception_line(exc)}); the verification will tell")


# ---------------------------------------------------------------- pch

PCH_FORMAT = 2
# At most this many variants per torch, compiler and flags (each is
# hundreds of megabytes).
PCH_MAX_VARIANTS = 4
# The only flags a variant is compiled with: they come from candidates'
# builds, and the header is compiled outside any box, so nothing that
# loads code or names files (-fplugin, -B, -specs, @file, -include) ever
# reaches the compiler here.
PCH_FLAG = re.compile(r"^-(O[0-3sg]?|Ofast|g[0-3]?|fopenmp|ffast-math|funroll-loops|fno-math-errno|"
                      r"march=native|mtune=native|mavx|mavx2|mavx512f|mavx512bw|mavx512vl|mfma|mf16c|"
                      r"msse4\.1|msse4\.2|std=(c|gnu)\+\+(14|17|20|2a)|D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.]*)?)$")


def variant_id(cflags):
    return "base" if not cflags else hashlib.sha256(json.dumps(cflags).encode()).hexdigest()[:12]


def torch_compile_flags(torch):
    """The flags torch's cpp_extension compiles a load_inline C++ source
    with (its build.ninja's cflags and post_cflags), without the
    extension's name: what a header precompiled for it must match."""
    from torch.utils import cpp_extension

    with tempfile.TemporaryDirectory() as scratch:
        source = os.path.join(scratch, "main.cpp")
        with open(source, "w") as f:
            f.write("#include <torch/extension.h>\n")
        kwargs = dict(path=os.path.join(scratch, "build.ninja"), name="kgym_pch_probe", sources=[source],
                      extra_cflags=[], extra_cuda_cflags=[], extra_ldflags=[], extra_include_paths=[],
                      with_cuda=False)
        parameters = inspect.signature(cpp_extension._write_ninja_file_to_build_library).parameters
        if "extra_sycl_cflags" in parameters:
            kwargs.update(extra_sycl_cflags=[], with_sycl=False)
        if "is_standalone" in parameters:
            kwargs["is_standalone"] = False
        cpp_extension._write_ninja_file_to_build_library(**kwargs)
        with open(kwargs["path"], "r") as f:
            lines = f.read().splitlines()
    flags = []
    for line in lines:
        for name in ("cflags", "post_cflags"):
            if line.startswith(name + " = "):
                flags += shlex.split(line[len(name) + 3:])
    return [flag for flag in flags if not flag.startswith("-DTORCH_EXTENSION_NAME=")]


def wanted_variants(manifest):
    """The C++ flag sets of the builds a build stage recorded that a variant
    may be compiled for (every flag allowed by PCH_FLAG)."""
    try:
        with open(manifest, "r", encoding="utf-8") as f:
            extensions = json.load(f).get("extensions", [])
    except (OSError, ValueError, AttributeError):
        return []
    wanted = []
    for entry in extensions if isinstance(extensions, list) else []:
        what = entry.get("what") if isinstance(entry, dict) else None
        cflags = what.get("extra_cflags") if isinstance(what, dict) else None
        cflags = cflags or []
        if isinstance(cflags, list) and all(isinstance(f, str) and PCH_FLAG.match(f) for f in cflags):
            if cflags not in wanted:
                wanted.append(cflags)
    return wanted


def pch(args):
    """Prints {"dir": D}: the directory of the precompiled header's variants
    for this torch, compiler and flags, one per candidate flag set V, each
    D/variant_id(V)/torch/extension.h.gch with the real header linked beside
    it (what a preprocessor that does not take the header reads); with
    --wanted (a build stage's manifest), first compiles the variants its
    builds lacked, for the builds after it. The caller holds the root's lock."""
    import torch
    from torch.utils import cpp_extension

    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        raise WorkerError("unsupported", "no C++ compiler on PATH")
    flags = torch_compile_flags(torch)
    header = None
    for include in cpp_extension.include_paths():
        if os.path.isfile(os.path.join(include, "torch", "extension.h")):
            header = os.path.join(include, "torch", "extension.h")
            break
    if header is None:
        raise WorkerError("unsupported", "torch/extension.h not found in torch's include paths")
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True).stdout
    identity = json.dumps({"format": PCH_FORMAT, "torch": torch.__version__,
                           "torch_dir": os.path.dirname(torch.__file__), "header_mtime": os.stat(header).st_mtime_ns,
                           "compiler": [os.path.realpath(compiler), version.splitlines()[0]], "flags": flags},
                          sort_keys=True)
    key = hashlib.sha256(identity.encode()).hexdigest()[:16]
    final = os.path.join(args.root, key)
    os.makedirs(final, exist_ok=True)
    for path in (args.root, final):
        os.chmod(path, 0o755)
    with open(os.path.join(final, "identity.json"), "w") as f:
        f.write(identity + "\n")
    built, start = [], time.perf_counter()
    for cflags in wanted_variants(args.wanted) if args.wanted else []:
        variant = os.path.join(final, variant_id(cflags))
        have = [n for n in os.listdir(final) if os.path.isdir(os.path.join(final, n))]
        if os.path.isdir(variant) or len(have) >= PCH_MAX_VARIANTS:
            continue
        staging = tempfile.mkdtemp(prefix=".variant.", dir=final)
        os.makedirs(os.path.join(staging, "torch"))
        os.symlink(header, os.path.join(staging, "torch", "extension.h"))
        command = [compiler] + flags + cflags + ["-x", "c++-header", header, "-o",
                                                 os.path.join(staging, "torch", "extension.h.gch")]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            log(f"precompiling {header} with {cflags} failed: {done.stderr.strip()[-400:]}")
            continue
        for path in (staging, os.path.join(staging, "torch")):
            os.chmod(path, 0o755)
        os.chmod(os.path.join(staging, "torch", "extension.h.gch"), 0o644)
        os.rename(staging, variant)
        built.append(cflags)
    print(json.dumps({"dir": final, "key": key, "built": built, "built_s": time.perf_counter() - start}))
    sys.stdout.flush()
    return 0
