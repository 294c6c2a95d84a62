// Measures the scheduler's own CPU time per iteration (orca_scheduler_overhead_seconds:
// scheduling, detokenizing, stop checks and streaming, i.e. everything outside model
// execution) as a fraction of the iteration time, with C concurrent streaming clients
// on `orca serve`. Prints one JSON document.
//
//   ORCA_BIN=build/engine/cli/orca node bench/serving/scheduler_overhead.mjs \
//       [--model DIR] [--concurrency 64] [--requests 256] [--max-tokens 200]
import { parseArgs } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { startServer, metricValue, sourceDir } from '../../e2e/serving/orca_server.mjs';

const { values: opt } = parseArgs({ options: {
  model: { type: 'string', default: path.resolve(sourceDir, 'models/stories260K') },
  concurrency: { type: 'string', default: '64' },
  requests: { type: 'string', default: '256' },
  'max-tokens': { type: 'string', default: '200' },
} });
const C = Number(opt.concurrency), N = Number(opt.requests), maxTokens = Number(opt['max-tokens']);

const server = await startServer(['--model', opt.model, '--max-batch-size', String(Math.max(C, 1)), '--max-batched-tokens', '1024']);
async function stream(i) {
  const res = await fetch(`${server.baseURL}/v1/completions`, { method: 'POST', body: JSON.stringify({
    prompt: `Once upon a time ${i}`, max_tokens: maxTokens, ignore_eos: true, temperature: 0.8, seed: i, stream: true }) });
  const reader = res.body.getReader();
  while (!(await reader.read()).done) { /* drain */ }
}
const before = await (await fetch(`${server.baseURL}/metrics`)).text();
const t0 = performance.now();
let next = 0;
await Promise.all(Array.from({ length: C }, async () => { while (next < N) await stream(next++); }));
const wall = (performance.now() - t0) / 1000;
const after = await (await fetch(`${server.baseURL}/metrics`)).text();
await server.stop();

const delta = (name) => metricValue(after, name) - (metricValue(before, name) || 0);
const overhead = delta('orca_scheduler_overhead_seconds_sum');
const iterTime = delta('orca_iteration_duration_seconds_sum');
const iterations = delta('orca_iteration_duration_seconds_count');
const tokens = delta('orca_generation_tokens_total');
console.log(JSON.stringify({
  benchmark: 'scheduler_overhead', model: opt.model, concurrency: C, requests: N, max_tokens: maxTokens,
  iterations, generation_tokens: tokens, wall_s: wall, tokens_per_s: tokens / wall,
  mean_iteration_ms: 1000 * iterTime / iterations, mean_overhead_ms: 1000 * overhead / iterations,
  overhead_fraction_of_iteration: overhead / iterTime, mean_batch_size: delta('orca_batch_size_sum') / iterations,
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model },
}, null, 2));
