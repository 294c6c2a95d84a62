// `orca serve --device cuda` serving groups over NCCL (DESIGN.md section 4,
// docs/distributed.md), driven by the official OpenAI client. Written for the CUDA twin
// (ORCA_CUDA_TWIN=ON: the CUDA backend, kernels and NCCL run on the host, NCCL over
// loopback TCP), and valid on a machine with four GPUs:
// - one `--device cuda` process answers the prompts greedily token for token as
//   `--device cpu` does (chunked prefill and prefix caching on, prefills chunked);
// - local groups `--tensor-parallel 2`, `--pipeline-parallel 2` and 2x2 (a scheduler
//   plus worker processes, NCCL between them) answer exactly as the CPU process;
// - a `--tensor-parallel 2` group given no KV cache size sizes it by its ranks' device
//   memory (two sizes on the twin) and allocates the smallest capacity on every rank, and
//   so do the scheduler and worker pods orca-controller renders for a gpu group;
// - SIGKILL of one worker of a `--tensor-parallel 2` group mid-request fails that
//   request with a retriable error (its peer's NCCL wait is abandoned, not left to
//   hang); the group re-forms once `orca serve` has restarted the worker, and answers
//   as before.
// Skipped (failed under CI=true) when $ORCA_BIN cannot run `--device cuda`: it probes
// `orca generate --device cuda` first (a build without CUDA, or no device). The twin's
// device count comes from ORCA_CUDA_TWIN_DEVICES, set to 4 here unless already set.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import OpenAI from 'openai';
import { startServer, missingPrerequisite, metricValue, storiesDir } from './orca_server.mjs';
import { controllerOrSkip, readyStatus, startRenderedGroup } from './rendered_group.mjs';

process.env.ORCA_CUDA_TWIN_DEVICES ??= '4';

const prompts = ['Once upon a time', 'The cat sat on the', 'Lily and Ben went to the park. They'];
const maxTokens = 12;  // the twin runs kernels ~100x slower than the CPU backend
// Both servers alike: prefills chunked by 8 tokens, 4-token blocks the prefix cache shares.
const common = ['--chunked-prefill', '--prefix-caching', '--max-batched-tokens', '8', '--block-size', '4',
                '--num-kv-blocks', '128', '--threads', '1'];
const startMs = 300000;  // a group on the twin: processes, weights, NCCL set-up, on 2 shared cores

async function greedy(baseURL, prompt) {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300000 });
  const r = await client.completions.create({ model: 'stories260K', prompt, max_tokens: maxTokens, temperature: 0 });
  assert.equal(r.usage.completion_tokens, maxTokens);
  return r.choices[0].text;
}

// Why this $ORCA_BIN cannot serve `--device cuda`, or null when it can.
let noCuda = null;
function cudaUnavailable() {
  const missing = missingPrerequisite();
  if (missing) return missing;
  const probe = spawnSync(process.env.ORCA_BIN, ['generate', '--model', storiesDir, '--device', 'cuda',
                                                 '--max-tokens', '1', '--num-kv-blocks', '16', '--prompt', 'Once'],
                          { encoding: 'utf8', timeout: 120000 });
  if (probe.status === 0) return null;
  return `orca cannot run --device cuda: ${(probe.stderr || probe.error?.message || '').trim().split('\n').pop()}`;
}

function skipOrFailCuda(t) {
  if (!noCuda) return false;
  if (process.env.CI === 'true') throw new Error(`prerequisite missing in CI: ${noCuda}`);
  t.skip(noCuda);
  return true;
}

let reference;  // the CPU process's answers, the ground truth for every CUDA server
before(async () => {
  noCuda = cudaUnavailable();
  if (noCuda) return;
  const cpu = await startServer(['--device', 'cpu', ...common]);
  try {
    reference = [];
    for (const p of prompts) reference.push(await greedy(cpu.baseURL, p));
  } finally {
    assert.equal(await cpu.stop(), 0);
  }
});

// A group that needs more GPUs than the machine has ends at once with the reason, before
// any worker starts (a worker without its device would only fail and be restarted).
test('a --device cuda group larger than the machine is refused before workers start', (t) => {
  if (skipOrFailCuda(t)) return;
  const r = spawnSync(process.env.ORCA_BIN, ['serve', '--model', storiesDir, '--device', 'cuda',
                                             '--tensor-parallel', '2', '--pipeline-parallel', '2',
                                             '--device-index', '1', '--port', '0', '--grpc-port', '-1'],
                      { encoding: 'utf8', timeout: 120000, env: { ...process.env, ORCA_CUDA_TWIN_DEVICES: '4' } });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /--tensor-parallel 2 x --pipeline-parallel 2: 4 rank\(s\) need CUDA devices 1\.\.4 \(device\.index 1\); this machine has 4 usable CUDA device\(s\)/);
  assert.doesNotMatch(r.stderr, /started worker/);
});

test('one --device cuda process answers as --device cpu', async (t) => {
  if (skipOrFailCuda(t)) return;
  const server = await startServer(['--device', 'cuda', ...common], { timeoutMs: startMs });
  try {
    const answers = [];
    for (const p of prompts) answers.push(await greedy(server.baseURL, p));
    assert.deepEqual(answers, reference);
    // Again, concurrently: the prompts' blocks now come from the prefix cache.
    assert.deepEqual(await Promise.all(prompts.map((p) => greedy(server.baseURL, p))), reference);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

for (const [name, layout] of [['--tensor-parallel 2', ['--tensor-parallel', '2']],
                              ['--pipeline-parallel 2', ['--pipeline-parallel', '2']],
                              ['2x2', ['--tensor-parallel', '2', '--pipeline-parallel', '2']]]) {
  test(`a local --device cuda ${name} group answers as one cpu process`, async (t) => {
    if (skipOrFailCuda(t)) return;
    const group = await startServer(['--device', 'cuda', ...layout, ...common], { timeoutMs: startMs });
    try {
      assert.deepEqual(await Promise.all(prompts.map((p) => greedy(group.baseURL, p))), reference);
      const metrics = await (await fetch(`${group.baseURL}/metrics`)).text();
      assert.equal(metricValue(metrics, 'orca_group_ready'), 1);
      assert.equal(metricValue(metrics, 'orca_group_breaks_total'), 0);
    } finally {
      assert.equal(await group.stop(), 0);
    }
  });
}

// Without a KV cache size (no --num-kv-blocks, --kv-cache-mib 0) each rank of a CUDA
// group profiles its device and the group allocates the smallest capacity on every rank.
// The twin gives the two ranks' devices different memory (ORCA_CUDA_TWIN_DEVICE_MEMORY).
test('a --device cuda group sizes its KV cache by its ranks\' memory, the smallest winning', async (t) => {
  if (skipOrFailCuda(t)) return;
  const sized = common.filter((a, i) => a !== '--num-kv-blocks' && common[i - 1] !== '--num-kv-blocks');
  const group = await startServer(['--device', 'cuda', '--tensor-parallel', '2', ...sized],
                                  { timeoutMs: startMs, env: { ORCA_CUDA_TWIN_DEVICE_MEMORY: '96Mi,64Mi' } });
  try {
    assert.deepEqual(await Promise.all(prompts.map((p) => greedy(group.baseURL, p))), reference);
    const log = group.stderr();
    const m = log.match(/group: KV cache (\d+) blocks of 4 tokens per rank, the smallest of the ranks' \(rank 0: (\d+), rank 1: (\d+)\)/);
    assert.ok(m, `no sizing line in the log:\n${log.slice(-4000)}`);
    const [blocks, rank0, rank1] = m.slice(1).map(Number);
    assert.equal(blocks, rank1, 'rank 1 has the smaller device');
    assert.ok(rank0 > rank1, `${rank0} vs ${rank1}`);
    // The ranks hold equal shards, so their capacities differ by their budgets,
    // 32 MiB x 0.9 (the memory fraction) x 0.98 (less the 2% reserve), in blocks of
    // 2 (K, V) x 5 layers x 2 KV heads per rank x 8 dims x 4 tokens x 2 bytes (float16),
    // less what only rank 0, the sampling rank, holds: its logits and sampler workspaces
    // (8 rows of 512 logits; tens of KiB, under 64 blocks).
    const perBlock = 2 * 5 * 2 * 8 * 4 * 2;
    const expected = (32 * 2 ** 20 * 0.9 * 0.98) / perBlock;
    const diff = rank0 - rank1;
    assert.ok(diff <= expected + 1 && diff >= expected - 64, `capacities differ by ${diff}, expected ${expected} less < 64`);
    const metrics = await (await fetch(`${group.baseURL}/metrics`)).text();
    assert.match(metrics, new RegExp(`vllm:cache_config_info\\{[^}]*num_gpu_blocks="${blocks}"`));
  } finally {
    assert.equal(await group.stop(), 0);
  }
});

// The pods orca-controller renders for `device: gpu` (a scheduler and a 2-stage pipeline,
// no KV cache size: the CRD's default) as processes, each worker's twin device with its
// own memory: the scheduler's engine starts before any rank joins, the ranks size the
// cache by their memory, and the engine and its metrics take the smallest count.
test('the pods orca-controller renders for a gpu group size the KV cache by memory', async (t) => {
  if (skipOrFailCuda(t)) return;
  const controller = controllerOrSkip(t);
  if (!controller) return;
  const memory = { 'demo-g0-s0-0': '96Mi', 'demo-g0-s1-0': '64Mi' };
  const group = await startRenderedGroup({
    controller, device: 'gpu', workerEnv: (name) => ({ ORCA_CUDA_TWIN_DEVICE_MEMORY: memory[name] }),
  });
  try {
    assert.equal(group.workers.length, 2);
    await waitFor('the scheduler reports ready', async () => (await readyStatus(group.url)) === 200, startMs, group.logs);
    assert.deepEqual(await Promise.all(prompts.map((p) => greedy(group.url, p))), reference);
    const log = group.procs[0].log();
    const m = log.match(/group: KV cache (\d+) blocks of 16 tokens per rank, the smallest of the ranks' \(rank 0: (\d+), rank 1: (\d+)\)/);
    assert.ok(m, `no sizing line in the scheduler's log:\n${log.slice(-4000)}`);
    const [blocks, rank0, rank1] = m.slice(1).map(Number);
    assert.equal(blocks, Math.min(rank0, rank1));
    assert.ok(rank0 > rank1, `stage 1's device is the smaller: ${rank0} vs ${rank1}`);
    assert.match(log, new RegExp(`engine: KV cache ${blocks} blocks x 16 tokens, sized by the group's memory`));
    const metrics = await (await fetch(`${group.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`vllm:cache_config_info\\{[^}]*num_gpu_blocks="${blocks}"`));
  } finally {
    await group.stop();
  }
});

async function waitFor(what, fn, timeoutMs, logs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try { if (await fn()) return; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} within ${timeoutMs} ms; log:\n${logs().slice(-5000)}`);
}

test('a killed worker of a --device cuda group fails its request retriably; the group re-forms', async (t) => {
  if (skipOrFailCuda(t)) return;
  const group = await startServer(['--device', 'cuda', '--tensor-parallel', '2', ...common], { timeoutMs: startMs });
  try {
    const url = group.baseURL;
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'stories260K', prompt: prompts[0], max_tokens: 400, ignore_eos: true,
                             temperature: 0, stream: true }),
    });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let body = decoder.decode((await reader.read()).value ?? new Uint8Array());
    // `orca serve` logs each worker it starts: "started worker stage 0 tp 1 (pid N)".
    const started = [...group.stderr().matchAll(/started worker stage 0 tp 1 \(pid (\d+)\)/g)];
    assert.ok(started.length > 0, `no worker pid in the log:\n${group.stderr().slice(-3000)}`);
    process.kill(Number(started.at(-1)[1]), 'SIGKILL');
    const t0 = Date.now();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      body += decoder.decode(value, { stream: true });
    }
    const failedAfterMs = Date.now() - t0;
    // Either the request had already finished (it cannot on the twin) or it failed
    // retriably, well before the 60 s data-plane timeout.
    if (!body.includes('"finish_reason":"length"')) {
      assert.match(body, /service_unavailable_error/, body.slice(-2000));
      assert.ok(failedAfterMs < 45000, `the request failed only after ${failedAfterMs} ms`);
    }
    // While the group is incomplete, a request is refused retriably (503 + Retry-After)
    // or, if the worker is back already, answered.
    const during = await fetch(`${url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'stories260K', prompt: prompts[1], max_tokens: 2 }),
    });
    if (during.status !== 200) {
      assert.equal(during.status, 503, await during.text());
      assert.ok(during.headers.get('retry-after'), 'a 503 carries Retry-After');
    }
    // `orca serve` restarts the worker; the group re-forms under a new generation.
    await waitFor('the group re-forms', async () => (await fetch(`${url}/ready`)).status === 200, startMs,
                  group.stderr);
    assert.deepEqual(await Promise.all(prompts.map((p) => greedy(url, p))), reference);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    assert.equal(metricValue(metrics, 'orca_group_ready'), 1);
    assert.ok(metricValue(metrics, 'orca_group_breaks_total') >= 1, metrics);
    assert.ok(metricValue(metrics, 'orca_group_generation') >= 2, metrics);
  } finally {
    assert.equal(await group.stop(), 0);
  }
});
