#!/usr/bin/env bash
# The GPU acceptance run (docs/cuda.md "Running on a GPU"): on a machine with an NVIDIA
# GPU it builds orca with CUDA for that GPU (or takes binaries built elsewhere), then
#   1. runs every `gpu` test for real (ORCA_REQUIRE_GPU=1: a skip is a failure),
#   2. compares `orca generate` on stories260K, --device cuda against --device cpu,
#   3. runs orca-bench-kernels (measured peaks, kernels, the device sampler against the
#      host for each kind of request, whole llama-1B BF16 iterations; then iterations
#      over each KV cache dtype, sampling on the device and the host, and with 16-bit
#      against float32 activations),
#   4. serves a random llama-1B BF16 with `orca serve --device cuda` and runs an
#      `orca bench serve` closed-loop sweep against it (greedy), then at temperature 1
#      over float32 and float16 KV caches, with tokens drawn on the host, and greedy
#      again with float32 activations; then
#      guided decoding's per-token overhead (a pattern, a JSON schema, a grammar) on a
#      random llama-110m at 1 and 32 clients (bench/guided/guided_overhead.py),
#   5. runs the gpu tests under compute-sanitizer (memcheck, racecheck on attention and
#      the sampler, synccheck).
# Every step has its own time limit, so a slow or hung step costs only its share; the
# figures and logs go to --out (summary.txt first). Record them in docs/cuda.md.
#
# usage: scripts/gpu-check.sh [--out DIR] [--prebuilt DIR] [--quick] [--device cpu]
#   --prebuilt DIR  binaries already built (DIR/bin: orca, orca-bench-kernels and the gpu
#                   test binaries; DIR/lib or DIR/lib.tar.xz: the shared libraries they
#                   need besides glibc, libstdc++ and CUDA's), e.g. for a GPU machine
#                   that cannot build; CUDA, cuBLAS and NCCL come from the machine.
#   --pack DIR      make such a DIR from the CUDA build in ${ORCA_BUILD_DIR:-build} (stripped
#                   binaries, and lib.tar.xz with every library they need that is not
#                   glibc's, libstdc++'s or CUDA's) and exit; DIR must be empty or absent
#   --quick         shorter benchmarks (fewer repetitions and sweep points)
#   --steps LIST    only these steps (comma-separated: tests, generate, kernels, serve,
#                   guided, sanitizer; default all), for a short device session
#   --device cpu    dry run of the plumbing on a machine without a GPU (tests skip)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/out/gpu-check
prebuilt=""
pack=""
quick=0
steps=tests,generate,kernels,serve,guided,sanitizer
device=cuda
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --prebuilt) prebuilt=$2; shift 2 ;;
    --pack) pack=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --steps) steps=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
gpu_tests="cuda_backend_ops_test cuda_kernels_direct_test cuda_end_to_end_test \
cuda_kv_memory_test nccl_communicator_test"

if [ -n "$pack" ]; then
  build=${ORCA_BUILD_DIR:-build}
  mkdir -p "$pack/bin" "$pack/lib" || exit 1
  for b in engine/cli/orca bench/kernels/orca-bench-kernels; do
    strip -o "$pack/bin/$(basename $b)" "$build/$b" || exit 1
  done
  for t in $gpu_tests; do strip -o "$pack/bin/$t" "$build/tests/kernels/$t" || exit 1; done
  # Libraries by path from ldd, less those the GPU machine has its own (newer) copies of.
  ldd "$pack"/bin/* | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl)\.so' |
    xargs -r cp -L -t "$pack/lib"
  tar -C "$pack" -cf - lib | xz -T0 -6 >"$pack/lib.tar.xz" && rm -rf "$pack/lib"
  du -sh "$pack"
  exit 0
fi

mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
failures=0

# --- binaries --------------------------------------------------------------------------
if [ -n "$prebuilt" ]; then
  bin=$(cd "$prebuilt/bin" && pwd)
  lib=$(cd "$prebuilt" && pwd)/lib
  if [ ! -d "$lib" ] && [ -f "$prebuilt/lib.tar.xz" ]; then
    tar -C "$prebuilt" -xJf "$prebuilt/lib.tar.xz" 2>/dev/null ||
      python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
        "$prebuilt/lib.tar.xz" "$prebuilt"
  fi
  # CUDA's own libraries from the machine: the toolkit first, then Python wheels.
  cuda_dirs=""
  for name in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    found=""
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
      /usr/lib/x86_64-linux-gnu; do
      [ -e "$d/$name" ] && found=$d/$name && break
    done
    [ -z "$found" ] && found=$(find /usr/local /opt -maxdepth 9 -name "$name" -print -quit 2>/dev/null)
    [ -n "$found" ] && cuda_dirs="$cuda_dirs:$(dirname "$found")"
  done
  export LD_LIBRARY_PATH="$lib$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  tests_dir=$bin
  orca=$bin/orca
  bench_kernels=$bin/orca-bench-kernels
else
  build=${ORCA_CUDA_BUILD_DIR:-build-cuda}
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
  ORCA_BUILD_DIR=$build ORCA_TARGETS="orca orca-bench-kernels cuda_backend_ops_test \
cuda_kernels_direct_test cuda_end_to_end_test cuda_kv_memory_test nccl_communicator_test" \
    scripts/build.sh -DORCA_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}" || exit 1
  tests_dir=$build/tests/kernels
  orca=$build/engine/cli/orca
  bench_kernels=$build/bench/kernels/orca-bench-kernels
fi
export ORCA_SOURCE_DIR=$root ORCA_REQUIRE_GPU=1 CI=true
# orca bench serve draws its plot with matplotlib: the first python3 on PATH that has it.
export ORCA_BENCH_PYTHON=${ORCA_BENCH_PYTHON:-$(command -v python3)}

# wanted STEP: whether --steps names it.
wanted() { case ",$steps," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

# step NAME LIMIT_S LOG CMD...: runs CMD with a time limit, appends to LOG, notes the result.
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local t0=$SECONDS
  echo "=== $name ($(date -u +%T), limit ${limit}s): $*" >>"$log"
  timeout -k 10 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  local verdict=ok
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && verdict="TIMED OUT"
  [ $rc -ne 0 ] && [ "$verdict" = ok ] && verdict="FAILED (rc $rc)"
  [ "$verdict" != ok ] && failures=$((failures + 1))
  note "$(printf '%-44s %-16s %4d s' "$name" "$verdict" $((SECONDS - t0)))"
  return $rc
}

note "gpu-check $(date -u +%FT%TZ) on $(hostname), commit $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.max.sm \
  --format=csv 2>&1 | tee -a "$summary"
note "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) cores"

# --- 1. the gpu tests ------------------------------------------------------------------
wanted tests && for t in $gpu_tests; do
  [ -x "$tests_dir/$t" ] || { note "$t: not built"; failures=$((failures + 1)); continue; }
  step "gpu test $t" 120 "$out/tests.log" "$tests_dir/$t" --gtest_brief=1
done
wanted tests && grep -hE '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]' "$out/tests.log" |
  sort | uniq -c | tee -a "$summary"

# --- 2. stories260K: cuda against cpu ----------------------------------------------------
gen() {
  timeout 120 "$orca" generate --model "$root/models/stories260K" --device "$1" \
    --max-tokens 200 --temperature 0 --ignore-eos --prompt "Once upon a time" \
    2>>"$out/generate.log"
}
if wanted generate; then
  cpu_text=$(gen cpu)
  gpu_text=$(gen "$device")
  { echo "--- cpu"; echo "$cpu_text"; echo "--- $device"; echo "$gpu_text"; } >>"$out/generate.log"
  if [ -n "$cpu_text" ] && [ "$cpu_text" = "$gpu_text" ]; then
    note "stories260K greedy, 200 tokens: $device text identical to cpu"
  else
    note "stories260K greedy, 200 tokens: $device text DIFFERS from cpu (generate.log)"
    failures=$((failures + 1))
  fi
fi

# --- 3. orca-bench-kernels on a random llama-1B BF16 ------------------------------------
preset=llama-1b
dtype=BF16
[ "$device" = cpu ] && preset=tiny dtype=F32
model=$(mktemp -d)/$preset
if wanted kernels || wanted serve; then
  "$orca" model random --preset $preset --dtype $dtype --out "$model" >>"$out/bench.log" 2>&1
fi
reps=20 batches=1,8,32,64,128,256
[ $quick = 1 ] && reps=5 batches=1,16,64,256
if [ "$device" = cuda ] && wanted kernels; then
  step "orca-bench-kernels" 150 "$out/bench.log" bash -c \
    "'$bench_kernels' --reps $reps --decode-batches $batches --model-dir '$model' \
     >'$out/bench-kernels.json'"
  # Whole iterations over float32, float16 and bfloat16 KV caches, tokens drawn on the
  # device and on the host.
  step "orca-bench-kernels KV dtypes x sampling" 200 "$out/bench.log" bash -c \
    "'$bench_kernels' --reps $reps --decode-batches 1,16,64,256 --prefill-lens 512,2048 \
     --kv-cache-dtypes float32,float16,bfloat16 --sampling device,host --tokens 1 \
     --skip-sampling --model-dir '$model' >'$out/bench-kv-sampling.json'"
  # Whole iterations with the layers in bfloat16 (the default) and in float32.
  step "orca-bench-kernels activations 16 vs 32" 150 "$out/bench.log" bash -c \
    "'$bench_kernels' --reps $reps --decode-batches 1,16,64,256 --prefill-lens 512,2048 \
     --activations 16,32 --tokens 1 --skip-sampling --model-dir '$model' \
     >'$out/bench-activations.json'"
fi

# --- 4. orca serve --device cuda + orca bench serve -------------------------------------
sweep=1,8,32,128 requests=128 output=128
[ $quick = 1 ] && sweep=1,8,32 requests=32 output=64
[ "$device" = cpu ] && sweep=1,4 requests=4
port=18437
# serve_sweep NAME TEMPERATURE EXTRA-BODY SERVE-FLAGS...: one server, one closed-loop
# sweep (EXTRA-BODY: JSON merged into every request, "" for none), its figures in
# bench-serve-NAME.{json,png}.
serve_sweep() {
  local name=$1 temperature=$2 extra=$3
  shift 3
  "$orca" serve --model "$model" --device "$device" --host 127.0.0.1 --port $port \
    --grpc-port -1 --max-batch-size 256 "$@" >>"$out/bench.log" 2>&1 &
  local serve_pid=$!
  for _ in $(seq 1 120); do
    python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/ready', timeout=2)" \
      2>/dev/null && break
    sleep 1
  done
  step "orca bench serve $name (128/$output, $sweep)" 150 "$out/bench.log" \
    "$orca" bench serve --url "http://127.0.0.1:$port" --trace fixed --input-len 128 \
    --output-len $output --num-requests $requests --sweep-concurrency $sweep --cooldown 0 \
    --temperature "$temperature" ${extra:+--extra-body "$extra"} \
    --out "$out/bench-serve-$name.json" --plot "$out/bench-serve-$name.png"
  kill -TERM $serve_pid 2>/dev/null
  wait $serve_pid 2>/dev/null
}
if wanted serve; then
  serve_sweep default 0 ""
  if [ "$device" = cuda ]; then
    # 16-bit KV caches and where tokens are drawn, at temperature 1 (OpenAI's default);
    # then nucleus sampling (top_p 0.9, the device's radix selection).
    serve_sweep t1-kv-float32 1 "" --kv-cache-dtype float32
    serve_sweep t1-kv-float16 1 "" --kv-cache-dtype float16
    serve_sweep t1-kv-float16-host-sampling 1 "" --kv-cache-dtype float16 --no-device-sampling
    serve_sweep t1-top-p-0.9 1 '{"top_p": 0.9}'
    serve_sweep f32-activations 0 "" --no-sixteen-bit-activations
  fi
fi
rm -rf "$(dirname "$model")"

# --- 4b. guided decoding: per-token overhead against unconstrained ------------------------
# A random llama-110m in BF16 (docs/cuda.md's guided runs), 1 and 32 clients: a pattern,
# a realistic JSON schema and a recursive grammar, tokens drawn on the device.
gpreset=llama-110m gdtype=BF16 glevels=1,32 grounds=3 gtokens=256
[ $quick = 1 ] && grounds=2 gtokens=128
[ "$device" = cpu ] && gpreset=tiny gdtype=F32 glevels=1,4 grounds=1 gtokens=64
if wanted guided; then
  guided_model=$(mktemp -d)/$gpreset
  "$orca" model random --preset $gpreset --dtype $gdtype --out "$guided_model" \
    >>"$out/bench.log" 2>&1
  for g in regex schema grammar; do
    flag=""
    [ $g != regex ] && flag=--$g
    step "guided overhead ($g, $glevels clients)" 120 "$out/guided-$g.log" \
      python3 bench/guided/guided_overhead.py --orca "$orca" --model "$guided_model" \
      --concurrency $glevels --tokens $gtokens --rounds $grounds $flag \
      --serve-args "--device $device" --out "$out/guided-overhead-$g.json"
    grep -h "^\[guided\] concurrency [0-9]*:" "$out/guided-$g.log" | while read -r line; do
      note "  $g: ${line#\[guided\] }"
    done
  done
  rm -rf "$(dirname "$guided_model")"
fi

# --- 5. compute-sanitizer ---------------------------------------------------------------
if ! wanted sanitizer; then
  :
elif [ "$device" = cuda ] && command -v compute-sanitizer >/dev/null; then
  cs="compute-sanitizer --error-exitcode 9 --print-limit 20"
  step "memcheck cuda_kernels_direct_test" 60 "$out/sanitizer.log" \
    $cs --tool memcheck "$tests_dir/cuda_kernels_direct_test"
  step "memcheck cuda_end_to_end_test" 90 "$out/sanitizer.log" \
    $cs --tool memcheck "$tests_dir/cuda_end_to_end_test"
  step "memcheck cuda_backend_ops_test" 120 "$out/sanitizer.log" \
    $cs --tool memcheck "$tests_dir/cuda_backend_ops_test"
  step "racecheck attention" 60 "$out/sanitizer.log" \
    $cs --tool racecheck "$tests_dir/cuda_backend_ops_test" --gtest_filter='CudaAttention*'
  step "racecheck sampling" 90 "$out/sanitizer.log" \
    $cs --tool racecheck "$tests_dir/cuda_kernels_direct_test" --gtest_filter='SamplingKernel*'
  step "synccheck cuda_kernels_direct_test" 45 "$out/sanitizer.log" \
    $cs --tool synccheck "$tests_dir/cuda_kernels_direct_test"
else
  note "compute-sanitizer: not run (device $device or not installed)"
fi

note "gpu-check: $failures step(s) failed, ${SECONDS} s"
[ $failures -eq 0 ]
