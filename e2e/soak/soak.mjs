#!/usr/bin/env node
// The soak with faults (issue 16): `orca serve --tensor-parallel 2` on stories260K under
// a seeded mix of clients (streamed and non-streamed completions and chat completions,
// n > 1, requests cancelled mid-stream and mid-wait, clients that disconnect, hostile
// and over-limit requests, bursts over the waiting limit) while a fault injector kills,
// stops and continues its workers. Then, once idle, it checks:
//   - every request was answered: a complete valid answer, a retriable error (429/503
//     with Retry-After, an SSE service_unavailable_error event) or the documented 4xx
//     for hostile input; never a hang, a reset without an answer, or another 5xx;
//   - the group re-formed after every fault, and no stopped worker was left behind;
//   - zero KV blocks in use and nothing running or waiting, after the faults and again
//     after a quiet phase;
//   - the server's counters agree with what the clients saw: within bounds over the
//     faulty phase, exactly over the quiet phase (ledger.mjs says which and why);
//   - the scheduler's and workers' RSS (VmRSS, sampled every second) stay below a bound,
//     and the scheduler's grows less than a limit over the second half of the run;
//   - the limits were exercised: 429s seen, preemptions counted, faults of every kind;
//   - the server drains and exits 0 on SIGTERM.
// --out DIR receives summary.json, timeseries.json (one row per second), the final
// /metrics page, server.log and soak.png (plot.py, python3-matplotlib).
//
//   node e2e/soak/soak.mjs [--seconds N] [--out DIR] [--concurrency C] [--seed S]
//        [--request-timeout S] [--rss-limit-mib M] [--rss-growth-mib G]
//        [--fault-interval LO,HI] [--quiet-requests Q] [--burst-size B]
// --seconds defaults to $ORCA_SOAK_SECONDS, else 180. The binary is $ORCA_BIN.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import OpenAI from 'openai';
import { FaultInjector } from './faults.mjs';
import { boundedCounterChecks, exactCounterChecks, Ledger } from './ledger.mjs';
import { rssMiB, scrape, serverCounters, workersOf } from './observe.mjs';
import { Rng } from './rng.mjs';
import { runScenario } from './scenarios.mjs';
import { findModel, kServeLimits, startServe } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const sourceDir = process.env.ORCA_SOURCE_DIR ?? path.resolve(here, '../..');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Relative weights of the request kinds each client loop draws from.
export const kMix = {
  completion: 18, completion_stream: 16, chat: 8, chat_stream: 8, chat_raw_stream: 5,
  cancel_stream: 10, cancel_wait: 7, disconnect: 7, hostile: 14,
};
// Besides the client loops, a burst over the waiting limit every 20-40 s (seeded).
const kBurstIntervalS = [20, 40];
const kFaultKinds = ['kill', 'stop_cont', 'stop_leave', 'stop_late'];

export function defaultOptions() {
  return {
    seconds: Number(process.env.ORCA_SOAK_SECONDS ?? 180),
    out: null,
    concurrency: 12,
    seed: 16,
    requestTimeoutS: 90,
    rssLimitMiB: 512,
    rssGrowthMiB: 32,
    faultIntervalS: [8, 20],
    quietRequests: 24,
    burstSize: 24,
    bin: process.env.ORCA_BIN,
    python: process.env.ORCA_SOAK_PYTHON ?? '/usr/bin/python3',
    log: (line) => console.log(line),
  };
}

export function parseArgs(argv) {
  const o = defaultOptions();
  const number = (flag, v) => {
    const x = Number(v);
    if (v === undefined || !Number.isFinite(x) || x < 0) throw new Error(`${flag} needs a non-negative number, got '${v}'`);
    return x;
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--seconds': o.seconds = number(flag, value()); break;
      case '--out': o.out = value(); break;
      case '--concurrency': o.concurrency = Math.max(1, Math.floor(number(flag, value()))); break;
      case '--seed': o.seed = Math.floor(number(flag, value())); break;
      case '--request-timeout': o.requestTimeoutS = number(flag, value()); break;
      case '--rss-limit-mib': o.rssLimitMiB = number(flag, value()); break;
      case '--rss-growth-mib': o.rssGrowthMiB = number(flag, value()); break;
      case '--quiet-requests': o.quietRequests = Math.floor(number(flag, value())); break;
      case '--burst-size': o.burstSize = Math.floor(number(flag, value())); break;
      case '--fault-interval': {
        const v = value() ?? '';
        const [lo, hi] = v.split(',').map((x) => number(flag, x));
        if (!(hi >= lo && lo > 0)) throw new Error(`--fault-interval needs LO,HI seconds with 0 < LO <= HI, got '${v}'`);
        o.faultIntervalS = [lo, hi];
        break;
      }
      case '--help':
        o.help = true;
        break;
      default:
        throw new Error(`unknown flag ${argv[i]} (see the header of e2e/soak/soak.mjs)`);
    }
  }
  if (!(o.seconds > 0)) throw new Error(`--seconds must be positive, got ${o.seconds}`);
  return o;
}

// Samples RSS and the server's gauges every second; scrape failures are counted.
class Sampler {
  constructor(server, now) {
    Object.assign(this, { server, now, samples: [], scrapeErrors: [], parseErrors: [], running: false });
  }

  async tick() {
    const rss = { scheduler: rssMiB(this.server.pid) };
    const workers = workersOf(this.server.pid);
    for (const w of workers) rss[w.rank] = rssMiB(w.pid);
    const sample = { t: this.now(), rss, pids: Object.fromEntries(workers.map((w) => [w.rank, w.pid])), server: null,
                     load1: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]) };
    try {
      const c = serverCounters((await scrape(this.server.baseURL, 5000)).parsed);
      sample.server = { running: c.running, waiting: c.waiting, kv_usage: c.kvUsage, ready: c.ready,
                        preemptions: c.preemptions, breaks: c.breaks };
    } catch (e) {
      (/^metrics:/.test(e.message) ? this.parseErrors : this.scrapeErrors).push(`t=${(sample.t / 1000).toFixed(0)} s: ${e.message}`);
    }
    this.samples.push(sample);
  }

  async run() {
    this.running = true;
    while (this.running) {
      const next = Date.now() + 1000;
      await this.tick();
      await sleep(Math.max(0, next - Date.now()));
    }
  }
}

// Waits until the server is idle: ready, nothing running or waiting, no KV block in use.
// Resolves with the last counters and whether it got there within `timeoutMs`.
async function waitIdle(baseURL, timeoutMs) {
  const end = Date.now() + timeoutMs;
  let c = null;
  while (Date.now() < end) {
    try {
      c = serverCounters((await scrape(baseURL)).parsed);
      if (c.ready === 1 && c.running === 0 && c.waiting === 0 && c.kvUsage === 0) return { c, idle: true };
    } catch { /* not yet */ }
    await sleep(250);
  }
  return { c, idle: false };
}

function delta(after, before) {
  const d = {};
  for (const k of Object.keys(after)) d[k] = after[k] - before[k];
  return d;
}

// RSS over the run, per process role (scheduler, s0t0, s0t1): peak, and for the
// scheduler (never restarted) the growth over the second half: the median of the last
// tenth of the samples less the median of the tenth around the middle.
function rssStats(samples) {
  const roles = [...new Set(samples.flatMap((s) => Object.keys(s.rss)))];
  const median = (xs) => { const s = xs.filter((x) => x !== null).sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : null; };
  const out = {};
  for (const role of roles) {
    const xs = samples.map((s) => s.rss[role] ?? null);
    const n = xs.length;
    const tenth = Math.max(1, Math.floor(n / 10));
    const mid = Math.floor(n / 2);
    const middle = median(xs.slice(Math.max(0, mid - Math.floor(tenth / 2)), mid + Math.ceil(tenth / 2)));
    const last = median(xs.slice(n - tenth));
    out[role] = { peak: Math.max(...xs.filter((x) => x !== null)), middle, last,
                  growthSecondHalf: middle !== null && last !== null ? last - middle : null };
  }
  return out;
}

// Runs the whole soak; resolves with { ok, summary }. Writes everything to opts.out.
export async function runSoak(opts) {
  const log = opts.log;
  const model = findModel(sourceDir);
  if (!opts.bin || !existsSync(opts.bin)) throw new Error('ORCA_BIN is not set to the orca binary');
  if (!model) throw new Error('models/stories260K not found (nor /work/shared/models/stories260K)');
  const out = opts.out ?? mkdtempSync(path.join(os.tmpdir(), 'orca-soak-'));
  mkdirSync(out, { recursive: true });
  const rng = new Rng(opts.seed);
  const apiKey = `sk-soak-${opts.seed}`;
  const durationMs = opts.seconds * 1000;
  const timeoutMs = opts.requestTimeoutS * 1000;
  const checks = [];
  const check = (name, ok, detail) => { checks.push({ name, ok: Boolean(ok), detail }); };

  log(`soak: ${opts.seconds} s, ${opts.concurrency} clients, seed ${opts.seed}, out ${out}`);
  const server = await startServe({ bin: opts.bin, model, outDir: out, apiKey });
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  // The clients' own event-loop lag, reported: a client starved of CPU for seconds
  // holds stale keep-alive sockets and timers late, which the server cannot help.
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  const sampler = new Sampler(server, now);
  const samplerDone = sampler.run();
  const ledger = new Ledger();
  const injector = new FaultInjector({ serverPid: server.pid, rng: rng.fork(), baseURL: server.baseURL,
                                       rankDeadlineS: kServeLimits.rankDeadlineS, intervalS: opts.faultIntervalS,
                                       now, kinds: kFaultKinds });
  let final = null;
  let exitCode = null;
  try {
    const before = serverCounters((await scrape(server.baseURL)).parsed);
    const ctx = { baseURL: server.baseURL, apiKey, maxBodyBytes: kServeLimits.maxBodyBytes, timeoutMs, now,
                  burstSize: opts.burstSize,
                  openai: new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey, maxRetries: 0, timeout: timeoutMs + 10000 }) };

    // --- the faulty phase ---
    const faultsUntil = Math.max(0, durationMs - 15000);
    const faultsDone = injector.run(faultsUntil);
    let progress = 0;
    // What each client is doing, for the watchdog below.
    const inFlight = new Set();
    const tracked = async (kind, c, r) => {
      const entry = { kind, start: now() };
      inFlight.add(entry);
      try {
        return await runScenario(kind, c, r);
      } finally {
        inFlight.delete(entry);
      }
    };
    const loop = async (r) => {
      while (now() < durationMs) {
        const records = await tracked(r.weighted(kMix), ctx, r);
        ledger.add(records);
        // A client told to retry (429/503 with Retry-After: 1) waits about that long.
        if (records.some((x) => x.outcome === 'retriable')) await sleep(r.uniform(500, 1500));
        if (now() >= progress) {
          progress = now() + 30000;
          const c = ledger.counts().total;
          log(`soak: t=${(now() / 1000).toFixed(0)} s ${JSON.stringify(c)} faults ${JSON.stringify(injector.counts())}`);
        }
      }
    };
    const bursts = async (r) => {
      for (;;) {
        const at = now() + r.uniform(kBurstIntervalS[0], kBurstIntervalS[1]) * 1000;
        if (at >= durationMs) return;
        await sleep(at - now());
        ledger.add(await tracked('burst', ctx, r));
      }
    };
    // Every request has its client timeout, so the clients end by then; a client past
    // it is a hang in the soak itself, named here rather than left to ctest's timeout.
    const clientsDone = Promise.all([...Array.from({ length: opts.concurrency }, () => loop(rng.fork())),
                                     bursts(rng.fork())]);
    await watchdog(clientsDone, durationMs + 2 * timeoutMs + 30000, now, () =>
      [...inFlight].map((x) => `${x.kind} since t=${(x.start / 1000).toFixed(1)} s`).join(', '));
    injector.stop();
    await faultsDone;
    const faultyEnd = now();
    log(`soak: clients done at t=${(faultyEnd / 1000).toFixed(0)} s; waiting for the group and for idle`);

    // --- after the faults: the group back, nothing left ---
    const { c: afterFaults, idle } = await waitIdle(server.baseURL, 90000);
    const stoppedLeft = workersOf(server.pid).filter((w) => w.state === 'T');
    check('no worker left stopped', stoppedLeft.length === 0, JSON.stringify(stoppedLeft));
    check('group ready and idle after the faults (ready 1, running 0, waiting 0, KV usage 0)', idle,
          `last: ${JSON.stringify(afterFaults)}`);
    for (const p of injector.problems) check('fault recovery', false, p);
    const counts = ledger.counts();
    const violations = ledger.violations();
    check('every request answered or failed retriably (no hang, reset, bad 5xx, bad body)', violations.length === 0,
          violations.slice(0, 20).map((r) => `${r.kind}${r.case ? ` (${r.case})` : ''} t=${(r.start / 1000).toFixed(1)}..${(r.end / 1000).toFixed(1)} s: ${r.detail}`).join('\n') ||
          `${counts.requests} requests`);
    const sums = ledger.sums();
    const d = delta(afterFaults, before);
    for (const c of boundedCounterChecks(sums, d)) checks.push(c);

    // --- the quiet phase: exact counts ---
    log(`soak: idle=${idle} at t=${(now() / 1000).toFixed(0)} s; quiet phase`);
    const quietCtx = { ...ctx, now };
    const quietRng = rng.fork();
    const quiet = new Ledger();
    const jobs = Array.from({ length: opts.quietRequests }, (_, i) => i);
    const quietLoop = async () => {
      for (let i = jobs.shift(); i !== undefined; i = jobs.shift()) {
        const kind = ['completion', 'completion_stream', 'chat', 'chat_stream', 'chat_raw_stream'][i % 5];
        quiet.add(await runScenario(kind, { ...quietCtx, quiet: true }, quietRng.fork()));
      }
    };
    await Promise.all(Array.from({ length: 8 }, quietLoop));
    const quietCounts = quiet.counts();
    check('quiet phase: every request completed', quietCounts.total.ok === quietCounts.requests,
          quiet.records.filter((r) => r.outcome !== 'ok').slice(0, 5).map((r) => `${r.kind}: ${r.outcome} ${r.detail ?? ''}`).join('\n') ||
          `${quietCounts.requests} requests`);
    log(`soak: quiet phase done at t=${(now() / 1000).toFixed(0)} s`);
    const { c: afterQuiet, idle: idle2 } = await waitIdle(server.baseURL, 30000);
    check('idle after the quiet phase (running 0, waiting 0, KV usage 0)', idle2, JSON.stringify(afterQuiet));
    const dq = delta(afterQuiet, afterFaults);
    for (const c of exactCounterChecks(quiet.sums(), dq)) checks.push(c);
    check('quiet phase preempted requests (KV pressure reached)', dq.preemptions > 0 || d.preemptions > 0,
          `preemptions: ${d.preemptions} under faults, ${dq.preemptions} in the quiet phase`);

    // --- coverage: the limits and faults were reached ---
    const saw429 = ledger.records.filter((r) => r.status === 429).length;
    const faultCounts = injector.counts();
    const nFaults = injector.faults.length;
    if (opts.seconds >= 60) {
      check('over-limit bursts got 429 with Retry-After', saw429 > 0, `${saw429} answers were 429`);
      check('faults of every kind injected', kFaultKinds.every((k) => faultCounts[k] > 0), JSON.stringify(faultCounts));
      check('some requests completed', counts.total.ok > 0, JSON.stringify(counts.total));
    }
    check('group breaks <= faults injected (no break without a fault)', afterQuiet.breaks <= nFaults,
          `${afterQuiet.breaks} breaks, ${nFaults} faults`);
    check('/metrics always parsed', sampler.parseErrors.length === 0, sampler.parseErrors.slice(0, 5).join('\n'));

    // --- memory ---
    sampler.running = false;
    await samplerDone;
    const rss = rssStats(sampler.samples);
    for (const [role, r] of Object.entries(rss)) {
      check(`RSS of ${role} below ${opts.rssLimitMiB} MiB`, r.peak < opts.rssLimitMiB, `peak ${r.peak.toFixed(1)} MiB`);
    }
    const g = rss.scheduler?.growthSecondHalf;
    check(`scheduler RSS growth over the second half below ${opts.rssGrowthMiB} MiB`, g !== null && g < opts.rssGrowthMiB,
          `middle ${rss.scheduler?.middle?.toFixed(1)} MiB, last ${rss.scheduler?.last?.toFixed(1)} MiB, growth ${g?.toFixed(1)} MiB`);

    final = await scrape(server.baseURL);
    writeFileSync(path.join(out, 'metrics-final.txt'), final.text);
    exitCode = await server.stop();
    check('orca serve drains and exits 0 on SIGTERM', exitCode === 0, `exit ${exitCode}`);

    const summary = {
      options: { ...opts, log: undefined, bin: opts.bin },
      serve: { args: server.args, limits: kServeLimits },
      cpu: cpuModel(),
      duration_s: opts.seconds,
      requests: counts,
      by_status: countBy(ledger.records, (r) => String(r.status ?? 'none')),
      hostile_cases: countBy(ledger.records.filter((r) => r.case), (r) => r.case),
      retriable_reasons: countBy(ledger.records.filter((r) => r.outcome === 'retriable'), (r) => `${r.kind === 'hostile' ? 'hostile ' : ''}${r.detail ?? ''}`.replace(/\d+/g, 'N')),
      latency_ms: latencySummary(ledger.records),
      faults: { counts: faultCounts, list: injector.faults, problems: injector.problems },
      server: { before, after_faults: afterFaults, after_quiet: afterQuiet },
      client_sums: sums,
      quiet: { requests: quietCounts, sums: quiet.sums(), server_delta: dq },
      rss_mib: rss,
      metrics_scrape_errors: sampler.scrapeErrors.length,
      load_average_1m: { mean: Number((sampler.samples.reduce((a, x) => a + x.load1, 0) / sampler.samples.length).toFixed(2)),
                         max: Math.max(...sampler.samples.map((x) => x.load1)) },
      client_event_loop_delay_ms: { p50: loopDelay.percentile(50) / 1e6, p99: loopDelay.percentile(99) / 1e6,
                                    max: loopDelay.max / 1e6 },
      checks,
      ok: checks.every((c) => c.ok),
    };
    writeFileSync(path.join(out, 'summary.json'), JSON.stringify(summary, null, 1));
    const series = ledger.series(Math.ceil(faultyEnd / 1000), sampler.samples, injector.faults);
    writeFileSync(path.join(out, 'timeseries.json'), JSON.stringify(series));
    plot(opts, out, log);
    for (const c of checks) log(`${c.ok ? 'PASS' : 'FAIL'} ${c.name}: ${c.detail}`);
    log(`soak: ${summary.ok ? 'passed' : 'FAILED'}; ${counts.requests} requests ${JSON.stringify(counts.total)}, ` +
        `${nFaults} faults; results in ${out}`);
    return { ok: summary.ok, summary, out };
  } finally {
    injector.stop();
    sampler.running = false;
    if (exitCode === null) await server.stop(5000);
  }
}

// Resolves with `work`, or rejects once `now()` passes `untilMs`, naming what
// `describe()` says is still in flight.
export async function watchdog(work, untilMs, now, describe) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the clients did not finish by t=${(untilMs / 1000).toFixed(0)} s ` +
                                              `(a client hang); in flight: ${describe() || 'nothing'}`)),
                       Math.max(0, untilMs - now()));
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

function countBy(records, key) {
  const c = {};
  for (const r of records) c[key(r)] = (c[key(r)] ?? 0) + 1;
  return c;
}

function latencySummary(records) {
  const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s.length ? Math.round(s[Math.min(s.length - 1, Math.ceil(p / 100 * s.length) - 1)]) : null; };
  const ok = records.filter((r) => r.outcome === 'ok');
  const lat = ok.filter((r) => r.latencyMs !== undefined).map((r) => r.latencyMs);
  const ttft = ok.filter((r) => r.ttftMs !== undefined).map((r) => r.ttftMs);
  return { e2e: { p50: pct(lat, 50), p99: pct(lat, 99), n: lat.length }, ttft: { p50: pct(ttft, 50), p99: pct(ttft, 99), n: ttft.length } };
}

function cpuModel() {
  try {
    const info = spawnSync('sh', ['-c', "grep -m1 'model name' /proc/cpuinfo; nproc"], { encoding: 'utf8' }).stdout;
    return info.trim().replace(/\s+/g, ' ');
  } catch {
    return 'unknown';
  }
}

// Draws soak.png with plot.py; a missing matplotlib is reported, not fatal.
function plot(opts, out, log) {
  const r = spawnSync(opts.python, [path.join(here, 'plot.py'), out, path.join(out, 'soak.png')], { encoding: 'utf8' });
  if (r.status !== 0) log(`soak: plot.py failed (${opts.python}; python3-matplotlib installed?): ${r.stderr || r.error}`);
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`soak: ${e.message}`);
    process.exit(2);
  }
  if (opts.help) {
    console.log('usage: node e2e/soak/soak.mjs [--seconds N] [--out DIR] [--concurrency C] [--seed S] ' +
                '[--request-timeout S] [--rss-limit-mib M] [--rss-growth-mib G] [--fault-interval LO,HI] ' +
                '[--quiet-requests Q] [--burst-size B]');
    return;
  }
  const { ok } = await runSoak(opts);
  process.exit(ok ? 0 : 1);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(`soak: ${e.stack ?? e}`);
    process.exit(1);
  });
}
