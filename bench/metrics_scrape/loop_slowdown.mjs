// The engine loop's slowdown when an endpoint picker scrapes /metrics every 50 ms: the
// same closed-loop load (C streams of max-tokens tokens) runs on one `orca serve` with no
// scraper, then with a scraper fetching /metrics every --interval-ms (rounds alternate
// none/scraped). Per phase: mean iteration time (orca_iteration_duration_seconds),
// generated tokens/s, and the scraper's own fetch latencies. Prints one JSON document
// (also written to --out) whose `ratio` compares scraped with none; --png draws it.
//
//   ORCA_BIN=build/engine/cli/orca node bench/metrics_scrape/loop_slowdown.mjs \
//       [--concurrency 32] [--requests 96] [--max-tokens 300] [--interval-ms 50] \
//       [--rounds 1] [--out slowdown.json] [--png slowdown.png]
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { startServer, metricValue } from '../../e2e/serving/orca_server.mjs';

const { values: opt } = parseArgs({ options: {
  concurrency: { type: 'string', default: '32' },
  requests: { type: 'string', default: '96' },
  'max-tokens': { type: 'string', default: '300' },
  'interval-ms': { type: 'string', default: '50' },
  rounds: { type: 'string', default: '1' },
  out: { type: 'string' },
  png: { type: 'string' },
} });
const C = Number(opt.concurrency), N = Number(opt.requests), maxTokens = Number(opt['max-tokens']);
const intervalMs = Number(opt['interval-ms']), rounds = Number(opt.rounds);

const server = await startServer(['--max-batch-size', String(C), '--max-batched-tokens', '1024', '--grpc-port', '-1']);
const scrape = async () => (await fetch(`${server.baseURL}/metrics`)).text();

async function stream(i) {
  const res = await fetch(`${server.baseURL}/v1/completions`, { method: 'POST', body: JSON.stringify({
    prompt: `Once upon a time ${i}`, max_tokens: maxTokens, ignore_eos: true, temperature: 0.8, seed: i, stream: true }) });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  const reader = res.body.getReader();
  while (!(await reader.read()).done) { /* drain */ }
}

const percentile = (xs, p) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};

async function phase(scraped) {
  const before = await scrape();
  let stop = false;
  const fetchMs = [];
  let pageBytes = 0;
  const scraper = (async () => {
    while (scraped && !stop) {
      const t = performance.now();
      pageBytes = (await scrape()).length;
      fetchMs.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, Math.max(0, intervalMs - (performance.now() - t))));
    }
  })();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: C }, async () => { while (next < N) await stream(next++); }));
  const wall = (performance.now() - t0) / 1000;
  stop = true;
  await scraper;
  const after = await scrape();
  const delta = (name) => metricValue(after, name) - (metricValue(before, name) || 0);
  const iterations = delta('orca_iteration_duration_seconds_count');
  return {
    scraper: scraped ? `every ${intervalMs} ms` : 'none', wall_s: wall, iterations,
    mean_iteration_ms: 1000 * delta('orca_iteration_duration_seconds_sum') / iterations,
    mean_scheduler_overhead_ms: 1000 * delta('orca_scheduler_overhead_seconds_sum') / iterations,
    tokens_per_s: delta('orca_generation_tokens_total') / wall,
    scrapes: fetchMs.length, page_bytes: pageBytes,
    scrape_fetch_ms: { p50: percentile(fetchMs, 0.5), p99: percentile(fetchMs, 0.99), max: percentile(fetchMs, 1) },
  };
}

const phases = [];
for (let r = 0; r < rounds; ++r) {
  phases.push(await phase(false));
  phases.push(await phase(true));
}
await server.stop();

const of = (scraped) => phases.filter((p) => (p.scraper !== 'none') === scraped);
// Iteration-weighted mean iteration time, and mean tokens/s, of the phases of one kind.
const meanIter = (ps) => ps.reduce((a, p) => a + p.mean_iteration_ms * p.iterations, 0) /
  ps.reduce((a, p) => a + p.iterations, 0);
const meanRate = (ps) => ps.reduce((a, p) => a + p.tokens_per_s, 0) / ps.length;
let cpu = os.cpus()[0]?.model;
try { cpu = execFileSync('lscpu', { encoding: 'utf8' }).match(/Model name:\s*(.*)/)?.[1] ?? cpu; } catch { /* keep os's */ }
const doc = {
  benchmark: 'metrics_scrape_loop_slowdown', concurrency: C, requests: N, max_tokens: maxTokens,
  interval_ms: intervalMs, rounds, phases,
  ratio: {
    mean_iteration_ms_scraped_over_none: meanIter(of(true)) / meanIter(of(false)),
    tokens_per_s_scraped_over_none: meanRate(of(true)) / meanRate(of(false)),
  },
  machine: { cpu, cpus: os.cpus().length, loadavg: os.loadavg() },
};
const json = JSON.stringify(doc, null, 2);
console.log(json);
if (opt.out) writeFileSync(opt.out, json + '\n');
if (opt.png) {
  // Two bars per round: mean iteration time without and with the scraper.
  const py = `
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
d = json.loads(sys.stdin.read())
labels = [f"{p['scraper']}\\n(round {i // 2 + 1})" for i, p in enumerate(d["phases"])]
values = [p["mean_iteration_ms"] for p in d["phases"]]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.bar(labels, values, color=["tab:blue" if p["scraper"] == "none" else "tab:orange" for p in d["phases"]])
ax.set_ylabel("mean engine iteration (ms)")
ax.set_title(f"/metrics scraped every {d['interval_ms']} ms: x{d['ratio']['mean_iteration_ms_scraped_over_none']:.3f}")
fig.tight_layout()
fig.savefig(sys.argv[1], dpi=100)
`;
  execFileSync(process.env.ORCA_BENCH_PYTHON ?? '/usr/bin/python3', ['-c', py, opt.png], { input: json });
}
