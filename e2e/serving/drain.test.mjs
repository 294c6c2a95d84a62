// Draining a serving group on SIGTERM (docs/serving.md "Shutdown and drain",
// docs/distributed.md "Worker lifecycle"): the pods orca-controller renders for
// e2e/k8s/inferencedeployment.yaml (an `orca scheduler` and two `orca worker`s, a 2-stage
// pipeline on CPU, stories260K) run here as processes. Under streaming load from several
// clients, every process gets SIGTERM at once, as when Kubernetes garbage-collects a
// deleted InferenceDeployment:
// - with a drain deadline longer than the streams, every stream completes (the workers
//   go on executing plans until the scheduler ends the group);
// - with a shorter one, the streams still open end with a retriable error event;
// either way no stream is cut, no request sent after SIGTERM is admitted (503 with
// Retry-After and an OpenAI error object, or a refused connection), /ready answers 503,
// and every process exits 0 within server.shutdown_timeout_s plus a margin.
// Also: a worker that cannot join exits non-zero after --join-timeout naming the
// scheduler; a worker without a group exits at once on SIGTERM; `orca pre-stop`.
// Without $ORCA_CONTROLLER_BIN the same commands are written out here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { skipOrFail, sourceDir, storiesDir, freePort, startProcess, waitFor, readSse } from './orca_server.mjs';

const kClients = 6;
// A worker waits for the scheduler's drain plus this (worker_command.cc kDrainMargin);
// then a second for a process to exit.
const kWorkerMarginMs = 10000;
const kExitSlackMs = 1500;
// How a request that got no answer at all failed, when the server never took it: the
// connection was refused, or closed unanswered as the listener shut (a connection still
// in the accept queue then). An admitted request always gets an answer (a 503 at worst).
const kNotTaken = new Set(['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET']);

// The pods of one group: engine.yaml (parsed) and each container's command and env.
function renderPods(dir) {
  const controller = process.env.ORCA_CONTROLLER_BIN;
  if (controller && existsSync(controller)) {
    const cr = readFileSync(path.join(sourceDir, 'e2e/k8s/inferencedeployment.yaml'), 'utf8')
      .replaceAll('@NAME@', 'demo').replaceAll('@NAMESPACE@', 'default').replaceAll('@IMAGE@', 'orca:dev')
      .replaceAll('@MODEL_NAME@', 'stories260K').replaceAll('@MODEL_URI@', 'hostpath:///models/stories260K')
      .replaceAll('@DEVICE@', 'cpu').replaceAll('@INGRESS_CLASS@', 'nginx').replaceAll('@HOST@', 'orca.local');
    writeFileSync(path.join(dir, 'cr.yaml'), cr);
    const objects = JSON.parse(execFileSync(controller, ['render', '-f', path.join(dir, 'cr.yaml'), '-o', 'json']));
    const items = Array.isArray(objects) ? objects : objects.items;
    const container = (o) => o.spec.template.spec.containers[0];
    const env = (c) => Object.fromEntries((c.env ?? []).filter((e) => 'value' in e).map((e) => [e.name, e.value]));
    const sched = items.find((o) => o.kind === 'Deployment');
    const workers = [];
    for (const sts of items.filter((o) => o.kind === 'StatefulSet')) {
      for (let ordinal = 0; ordinal < sts.spec.replicas; ordinal++) {
        workers.push({ name: `${sts.metadata.name}-${ordinal}`, command: container(sts).command,
                       env: { ...env(container(sts)), ORCA_POD_ORDINAL: String(ordinal) } });
      }
    }
    return {
      rendered: true,
      engine: YAML.parse(items.find((o) => o.kind === 'ConfigMap').data['engine.yaml']),
      scheduler: { name: 'scheduler', command: container(sched).command, env: env(container(sched)) },
      workers,
    };
  }
  const config = '/etc/orca/engine.yaml';
  return {
    rendered: false,
    engine: {
      model: { dir: '/models', name: 'stories260K' },
      device: { type: 'cpu' },
      scheduler: { max_batch_size: 8, max_batched_tokens: 256 },
      parallelism: { tensor: 1, pipeline: 2, control_port: 8002 },
      server: { port: 8000, grpc_port: 8001 },
      worker: { metrics_port: 9090 },
    },
    scheduler: { name: 'scheduler', command: ['orca', 'scheduler', '--config', config], env: {} },
    workers: [0, 1].map((stage) => ({
      name: `demo-g0-s${stage}-0`,
      command: ['orca', 'worker', '--config', config, '--scheduler', '$(ORCA_SCHEDULER_ADDR)', '--stage',
                '$(ORCA_STAGE_INDEX)', '--pod-index', '$(ORCA_POD_ORDINAL)'],
      env: { ORCA_STAGE_INDEX: String(stage), ORCA_POD_ORDINAL: '0' },
    })),
  };
}

// Starts the group with server.shutdown_timeout_s = `shutdownS` (engine.yaml: the
// scheduler and the workers read it) and waits until it serves.
async function startGroup(t, { shutdownS, maxBatchSize = 8 }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'orca-drain-'));
  const pods = renderPods(dir);
  t.diagnostic(pods.rendered ? 'pods rendered by orca-controller' : 'pods written out (no ORCA_CONTROLLER_BIN)');
  const engine = pods.engine;
  engine.model.dir = storiesDir;  // mounted at /models in the pods
  engine.server = { ...engine.server, shutdown_timeout_s: shutdownS };
  engine.scheduler = { ...engine.scheduler, max_batch_size: maxBatchSize };
  writeFileSync(path.join(dir, 'engine.yaml'), YAML.stringify(engine));
  const [httpPort, controlPort] = [await freePort(), await freePort()];
  const expand = (argv, vars) => argv.slice(1).map((a) => a
    .replace(/\$\((\w+)\)/g, (_, v) => vars[v])
    .replace('/etc/orca/engine.yaml', path.join(dir, 'engine.yaml')));
  const procs = [];
  const group = {
    dir, procs, url: `http://127.0.0.1:${httpPort}`, workerPorts: [],
    logs: () => procs.map((p) => `--- ${p.name}\n${p.log().slice(-4000)}`).join('\n'),
    async cleanup() {
      for (const p of procs) await p.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // Ports move to free ones (the processes share one network namespace): flags override
  // engine.yaml.
  procs.push(startProcess('scheduler', [...expand(pods.scheduler.command, pods.scheduler.env),
    '--port', String(httpPort), '--control-port', String(controlPort), '--grpc-port', '0'], pods.scheduler.env));
  for (const w of pods.workers) {
    const vars = { ...w.env, ORCA_SCHEDULER_ADDR: `127.0.0.1:${controlPort}` };
    const port = await freePort();
    group.workerPorts.push(port);
    procs.push(startProcess(w.name, [...expand(w.command, vars), '--metrics-port', String(port), '--threads', '1'],
                            { ...vars, ORCA_POD_IP: '127.0.0.1' }));
  }
  assert.equal(pods.workers.length, 2);
  try {
    await waitFor('the scheduler reports ready', async () => (await fetch(`${group.url}/ready`)).status === 200,
                  120000, group.logs);
    for (const port of group.workerPorts) {
      await waitFor(`worker :${port} reports ready`,
                    async () => (await fetch(`http://127.0.0.1:${port}/ready`)).status === 200, 30000, group.logs);
      assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
    }
  } catch (e) {
    await group.cleanup();
    throw e;
  }
  return group;
}

// Streaming load: each client sends a stream after the other until told to stop, and
// records every request: when it was sent (before or after SIGTERM: `termAt()` not null
// once the scheduler is known to have handled it) and how it ended.
function startLoad(url, { maxTokens, termAt }) {
  let stop = false;
  const records = [];
  const progress = new Array(kClients).fill(0);  // data frames of each client's current stream
  const client = async (i) => {
    while (!stop) {
      const afterTerm = termAt() !== null;
      const rec = { client: i, afterTerm };
      records.push(rec);
      try {
        const res = await fetch(`${url}/v1/completions`, {
          method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: maxTokens,
                                 ignore_eos: true, temperature: 0.8, seed: i, stream: true }),
        });
        rec.status = res.status;
        rec.retryAfter = res.headers.get('retry-after');
        if (res.status !== 200) {
          rec.body = await res.text();
        } else {
          progress[i] = 0;
          const s = await readSse(res, () => { progress[i]++; });
          rec.data = s.data;
          rec.error = s.error;
        }
      } catch (e) {
        rec.error = e;
        rec.refused = kNotTaken.has(e.cause?.code);
        if (termAt() !== null) break;  // the server is gone
      }
      // After SIGTERM (or a failure) the clients go on, gently.
      if (termAt() !== null || rec.error) await new Promise((r) => setTimeout(r, 100));
    }
  };
  const done = Promise.all(Array.from({ length: kClients }, (_, i) => client(i)));
  return { records, progress, done, stop: () => { stop = true; } };
}

// How a stream that got 200 ended: 'finished' (a finish_reason, then [DONE]),
// 'retriable' (an error event of type service_unavailable_error, then [DONE]), or a
// description of what went wrong.
function streamEnding(rec) {
  if (rec.error) return `cut: ${rec.error.cause?.code ?? rec.error.message}`;
  const d = rec.data;
  if (d.at(-1) !== '[DONE]') return `no [DONE] after ${d.length} events`;
  const last = JSON.parse(d.at(-2) ?? '{}');
  if (last.error) return last.error.type === 'service_unavailable_error' ? 'retriable' : `error ${JSON.stringify(last.error)}`;
  if (last.choices?.[0]?.finish_reason) return 'finished';
  return `ended without a finish_reason: ${d.at(-2)}`;
}

// SIGTERM to every process of `group` at once while `load` streams; returns what
// happened: the load's records, the /ready answers seen after SIGTERM and each
// process's exit { code, signal, ms after SIGTERM }. A process handles a signal a moment
// after kill() returns, so a request sent at once may still be taken: requests count
// as sent after SIGTERM (afterTerm) from the first /ready that is not 200 on, and the
// answers before it may be 200.
// `streaming`: how many clients must have a stream under way (the others may wait for a
// batch slot) when SIGTERM is sent.
async function terminateUnderLoad(t, group, { maxTokens, streaming }) {
  let termAt = null, drainSeenAt = null;
  const load = startLoad(group.url, { maxTokens, termAt: () => drainSeenAt });
  try {
    await waitFor(`${streaming} clients stream`, async () => load.records.length >= kClients &&
                  load.progress.filter((n) => n >= 3).length >= streaming, 60000, group.logs);
  } catch (e) {
    load.stop();
    await load.done;
    throw e;
  }
  const readyAfter = [];
  termAt = performance.now();
  for (const p of group.procs) p.child.kill('SIGTERM');
  const scheduler = group.procs[0];
  // While the scheduler drains: /ready, and new (non-streamed) requests, every 20 ms.
  const polling = (async () => {
    while (scheduler.running()) {
      try { readyAfter.push((await fetch(`${group.url}/ready`)).status); } catch { readyAfter.push('refused'); }
      if (readyAfter.at(-1) !== 200) drainSeenAt ??= performance.now();
      const rec = { client: 'prober', afterTerm: drainSeenAt !== null };
      try {
        const res = await fetch(`${group.url}/v1/completions`, {
          method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 2 }),
        });
        Object.assign(rec, { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() });
      } catch (e) {
        Object.assign(rec, { error: e, refused: kNotTaken.has(e.cause?.code) });
      }
      load.records.push(rec);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const exits = [];
  for (const p of group.procs) {
    const e = await p.exitedWithin(120000);
    exits.push(e === null ? { name: p.name, code: 'still running' }
                          : { name: p.name, code: e.code, signal: e.signal, ms: Math.round(e.at - termAt) });
  }
  load.stop();
  await load.done;
  await polling;
  t.diagnostic(`exits after SIGTERM: ${JSON.stringify(exits)}`);
  return { records: load.records, readyAfter, exits };
}

// Every request sent after SIGTERM got a retriable 503 or was not taken (kNotTaken); at least
// one was answered 503 (sent while the scheduler drained).
function assertNoneAdmittedAfterTerm(records, logs) {
  const after = records.filter((r) => r.afterTerm);
  assert.ok(after.some((r) => r.status === 503), `no 503 during the drain: ${JSON.stringify(after.map((r) => r.status ?? r.error?.cause?.code))}`);
  for (const r of after) {
    if (r.refused) continue;
    assert.equal(r.status, 503, `a request sent after SIGTERM (by ${r.client}) got ${r.status ?? r.error}:\n${logs()}`);
    assert.ok(r.retryAfter, 'a 503 without Retry-After');
    assert.equal(JSON.parse(r.body).error.type, 'service_unavailable_error', r.body);
  }
}

// /ready went from 200 (before the scheduler handled SIGTERM) to 503 and never back.
function assertReadyDropped(readyAfter) {
  assert.ok(readyAfter.includes(503), `/ready after SIGTERM: ${readyAfter}`);
  const dropped = readyAfter.findIndex((s) => s !== 200);
  assert.ok(!readyAfter.slice(dropped).includes(200), `/ready answered 200 after 503: ${readyAfter}`);
}

function assertExits(exits, shutdownS, logs) {
  for (const e of exits) {
    const bound = shutdownS * 1000 + kExitSlackMs + (e.name === 'scheduler' ? 0 : kWorkerMarginMs);
    assert.equal(e.code, 0, `${e.name} exited with ${e.code} (${e.signal}):\n${logs()}`);
    assert.ok(e.ms <= bound, `${e.name} exited ${e.ms} ms after SIGTERM (bound ${bound} ms)`);
  }
}

test('SIGTERM to a whole group under streaming load: every stream completes, nothing new is admitted',
  async (t) => {
    if (skipOrFail(t)) return;
    const shutdownS = 30;
    const group = await startGroup(t, { shutdownS });
    try {
      const { records, readyAfter, exits } =
        await terminateUnderLoad(t, group, { maxTokens: 480, streaming: kClients });
      const streams = records.filter((r) => !r.afterTerm && r.status === 200);
      const endings = streams.map(streamEnding);
      t.diagnostic(`${streams.length} streams admitted before SIGTERM: ${JSON.stringify(endings)}; ` +
                   `${records.filter((r) => r.afterTerm).length} requests after ` +
                   `(${records.filter((r) => r.status === 503).length} answered 503); /ready after: ${[...new Set(readyAfter)]}`);
      assert.ok(streams.length >= kClients);
      // The drain outlasts the streams: each one generated to its end.
      for (const e of endings) assert.equal(e, 'finished', group.logs());
      assertNoneAdmittedAfterTerm(records, group.logs);
      assertReadyDropped(readyAfter);
      assertExits(exits, shutdownS, group.logs);
      assert.match(group.procs[0].log(), /drained: every admitted request finished/);
      for (const w of group.procs.slice(1)) assert.match(w.log(), /worker: draining: 1 of 1 rank\(s\) in a group/);
    } finally {
      await group.cleanup();
    }
  });

test('a drain deadline shorter than the streams ends them with a retriable error, not a cut', async (t) => {
  if (skipOrFail(t)) return;
  const shutdownS = 1;  // 0.5 s of drain (the rest is kept for closing)
  // One sequence an iteration: the six 480-token streams take far longer than the drain.
  const group = await startGroup(t, { shutdownS, maxBatchSize: 1 });
  try {
    const { records, readyAfter, exits } = await terminateUnderLoad(t, group, { maxTokens: 480, streaming: 1 });
    const streams = records.filter((r) => !r.afterTerm && r.status === 200);
    const endings = streams.map(streamEnding);
    t.diagnostic(`endings: ${JSON.stringify(endings)}; /ready after: ${[...new Set(readyAfter)]}`);
    for (const e of endings) assert.ok(e === 'finished' || e === 'retriable', `${e}\n${group.logs()}`);
    assert.ok(endings.includes('retriable'), `no stream outlasted the drain: ${endings}`);
    assertNoneAdmittedAfterTerm(records, group.logs);
    assertReadyDropped(readyAfter);
    assertExits(exits, shutdownS, group.logs);
    assert.match(group.procs[0].log(), /drain deadline reached with \d+ open request/);
  } finally {
    await group.cleanup();
  }
});

test('a worker that cannot join exits non-zero after --join-timeout, naming the scheduler', async (t) => {
  if (skipOrFail(t)) return;
  const dead = `127.0.0.1:${await freePort()}`;  // nothing listens there
  const metricsPort = await freePort();
  const w = startProcess('worker', ['worker', '--model', storiesDir, '--scheduler', dead, '--join-timeout', '2',
                                    '--metrics-port', String(metricsPort), '--threads', '1']);
  const started = performance.now();
  try {
    // While it waits within the timeout: live, not ready.
    await waitFor('the worker serves /health', async () => (await fetch(`http://127.0.0.1:${metricsPort}/health`)).status === 200,
                  1500, w.log);
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/ready`)).status, 503);
    const e = await w.exitedWithin(15000);
    assert.ok(e !== null, `the worker still runs 15 s after start:\n${w.log()}`);
    const ms = e.at - started;
    t.diagnostic(`exited ${Math.round(ms)} ms after start with ${e.code}`);
    assert.notEqual(e.code, 0, w.log());
    assert.ok(ms >= 1900 && ms < 8000, `exited after ${ms} ms`);
    assert.match(w.log(), new RegExp(`could not join the scheduler at ${dead.replaceAll('.', '\\.')}`));
    assert.match(w.log(), /join timeout 2s/);
  } finally {
    await w.stop('SIGKILL');
  }
});

test('a worker without a group exits 0 at once on SIGTERM', async (t) => {
  if (skipOrFail(t)) return;
  const w = startProcess('worker', ['worker', '--model', storiesDir, '--scheduler', `127.0.0.1:${await freePort()}`,
                                    '--threads', '1']);
  try {
    await waitFor('the worker dials', async () => /dialing/.test(w.log()), 10000, w.log);
    const termAt = performance.now();
    w.child.kill('SIGTERM');
    const e = await w.exitedWithin(5000);
    assert.ok(e !== null, `the worker still runs 5 s after SIGTERM:\n${w.log()}`);
    assert.equal(e.code, 0, w.log());
    assert.ok(e.at - termAt < 1500, `exited ${e.at - termAt} ms after SIGTERM`);
  } finally {
    await w.stop('SIGKILL');
  }
});

test('orca pre-stop waits and exits 0 (the preStop hook; the image has no sleep)', async (t) => {
  if (skipOrFail(t)) return;
  const ok = startProcess('pre-stop', ['pre-stop', '--seconds', '0.5']);
  const start = performance.now();
  const e = await ok.exited;
  assert.equal(e.code, 0, ok.log());
  assert.ok(e.at - start >= 500, `exited after ${e.at - start} ms`);
  const bad = startProcess('pre-stop', ['pre-stop', '--seconds', '-1']);
  assert.equal((await bad.exited).code, 2);
  assert.match(bad.log(), /--seconds must be between 0 and 3600/);
});
