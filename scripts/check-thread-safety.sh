#!/usr/bin/env bash
# Enforces the ABSL_GUARDED_BY / ABSL_*_LOCKS_REQUIRED / ABSL_LOCKS_EXCLUDED annotations:
# parses every C++ translation unit of engine/, controller/ and cuda_twin/ (tests,
# benchmarks and .cu files aside; cuda_twin/ is in the CUDA twin's build only) with
# clang's -Wthread-safety, using the include paths and defines of
# ${ORCA_BUILD_DIR:-build}/compile_commands.json (the build itself uses g++, which ignores
# the annotations). Syntax only, no code generation; ORCA_JOBS files in parallel.
# Arguments, if any, limit the check to files under those paths (e.g. engine/group).
# Only files that can meet an annotation are parsed: those whose own text or project
# headers (followed transitively) mention a lock annotation or an absl::Mutex; the rest
# (most of the tree, and the slowest to parse) cannot warn. ORCA_THREAD_SAFETY_ALL=1
# parses every file.
# Exits non-zero, printing the diagnostics, on any thread-safety warning or on a file
# clang cannot parse (which would leave it unchecked).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ORCA_BUILD_DIR:-build}
jobs=${ORCA_JOBS:-$(nproc)}
clang=${ORCA_CLANGXX:-clang++}
db=$build/compile_commands.json

if ! command -v "$clang" >/dev/null; then
  echo "[thread-safety] $clang not found (scripts/install-deps.sh installs clang)" >&2
  exit 1
fi
if [ ! -f "$db" ]; then
  echo "[thread-safety] $db missing: configure the build first (scripts/build.sh)" >&2
  exit 1
fi
# The sources include the generated protobuf headers; build only those if they are absent.
if ! ls "$build"/gen/orca/v1/*.pb.h >/dev/null 2>&1; then
  cmake --build "$build" --target orca_proto
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One clang response file per translation unit: the compile command's -I/-isystem/-D/-U,
# -std and -include flags (g++-only flags, optimisation and warning options dropped).
python3 - "$db" "$PWD" "$tmp" "${ORCA_THREAD_SAFETY_ALL:-0}" "$@" <<'EOF'
import json, os, re, shlex, sys

db, root, tmp, check_all = sys.argv[1:5]
root = os.path.realpath(root)
only = [os.path.normpath(p) for p in sys.argv[5:]]
keep_with_arg = {"-I", "-isystem", "-iquote", "-idirafter", "-D", "-U", "-include"}
include = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
locking = re.compile(r"\bABSL_\w*(GUARDED|LOCK|CAPABILITY|THREAD_SAFETY|ACQUIRE|RELEASE)\w*"
                     r"|\babsl::\w*(Mutex|CondVar)|absl/synchronization/mutex\.h")
memo = {}

def meets_locking(path):
    """Whether `path` or a project file it includes (transitively) mentions locking."""
    if path not in memo:
        memo[path] = False  # include cycles end here
        with open(path, errors="replace") as f:
            text = f.read()
        found = bool(locking.search(text))
        for name in include.findall(text):
            for base in (os.path.dirname(path), root):
                header = os.path.join(base, name)
                if os.path.isfile(header):
                    found = meets_locking(header) or found
                    break
        memo[path] = found
    return memo[path]

seen, n, skipped = set(), 0, 0
for entry in json.load(open(db)):
    path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, root)
    parts = rel.split(os.sep)
    if (parts[0] not in ("engine", "controller", "cuda_twin") or "tests" in parts or "bench" in parts
            or not rel.endswith((".cc", ".cpp", ".cxx")) or rel in seen
            or (only and not any(rel == p or rel.startswith(p + os.sep) for p in only))):
        continue
    seen.add(rel)
    if check_all != "1" and not meets_locking(path):
        skipped += 1
        continue
    argv = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    args, it = [], iter(argv[1:])
    for a in it:
        if a in keep_with_arg:
            value = next(it)
            if a in ("-I", "-isystem"):
                value = os.path.join(entry["directory"], value)
            args += [a, value]
        elif a.startswith(("-I", "-D", "-U", "-std=")) or a == "-pthread":
            args.append(a)
        elif a in ("-o", "-x", "-MF", "-MT", "-MQ"):
            next(it)
    n += 1
    with open(os.path.join(tmp, "%04d.rsp" % n), "w") as f:
        f.write("\n".join(shlex.quote(a) for a in args + [path]) + "\n")
    with open(os.path.join(tmp, "%04d.name" % n), "w") as f:
        f.write(rel + "\n")
with open(os.path.join(tmp, "skipped"), "w") as f:
    f.write("%d\n" % skipped)
EOF

count=$(find "$tmp" -name '*.rsp' | wc -l)
skipped=$(cat "$tmp/skipped")
if [ "$count" = 0 ] && [ "$skipped" = 0 ]; then
  echo "[thread-safety] no translation unit of $db matches ${*:-engine/ controller/}" >&2
  exit 1
fi
echo "[thread-safety] checking $count files ($skipped more meet no lock annotation), $jobs at a" \
  "time, with $("$clang" --version | head -1)"
start=$SECONDS
# Every other warning is off: g++ keeps the code clean of those, and clang's extra ones
# would only be noise here. -Wthread-safety-beta is quiet on abseil's headers and ours;
# -Wthread-safety-negative is not: it wants every function that locks a mutex to require
# its negative capability (!mu_), which this code base does not annotate.
export clang tmp
# shellcheck disable=SC2016  # expanded by the inner sh
find "$tmp" -name '*.rsp' -printf '%f\n' | sort | xargs -P "$jobs" -I{} sh -c '
  n=${1%.rsp}
  if ! "$clang" -fsyntax-only -Wno-everything -Wthread-safety -Wthread-safety-beta \
       -Werror=thread-safety -Werror=thread-safety-beta -ferror-limit=50 "@$tmp/$1" \
       >"$tmp/$n.log" 2>&1 ||
     [ -s "$tmp/$n.log" ]; then
    echo "[thread-safety] FAIL $(cat "$tmp/$n.name")"
    touch "$tmp/$n.failed"
  fi' _ {}

failed=$(find "$tmp" -name '*.failed' | wc -l)
if [ "$failed" -gt 0 ]; then
  for f in "$tmp"/*.failed; do cat "${f%.failed}.log"; done
  echo "[thread-safety] $failed of $count files failed ($((SECONDS - start)) s)" >&2
  exit 1
fi
echo "[thread-safety] $count files clean ($((SECONDS - start)) s)"
