// Serving groups as separate processes (DESIGN.md section 4), driven by the official
// OpenAI client:
// - `orca serve --tensor-parallel 2 --pipeline-parallel 2` (a scheduler plus four
//   local workers over Gloo) answers exactly as a single-process server, and its
//   --trace-file holds every rank's steps of each iteration;
// - a SIGSTOPped worker of `orca serve --tensor-parallel 2` misses the plan deadline:
//   the in-flight request fails retriably within seconds, the worker is killed and
//   restarted, and the group answers again;
// - the commands orca-controller renders for a scheduler pod and its worker pods
//   (engine.yaml included), run here as processes, form a group; killing a worker
//   fails the in-flight request with a retriable error, the scheduler reports not
//   ready and refuses requests with 503 + Retry-After, and a restarted worker brings
//   the group back;
// - parallelism.pipelineLayers of the rendered CR reaches the scheduler, which splits the
//   layers as asked, or stops naming the split when it does not fit the checkpoint.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, skipOrFail, missingPrerequisite, metricValue, storiesDir } from './orca_server.mjs';
import { controllerOrSkip, readyStatus, startProcess, startRenderedGroup, waitFor } from './rendered_group.mjs';

const prompts = ['Once upon a time', 'The cat sat on the', 'Lily and Ben went to the park. They'];

async function greedy(baseURL, prompt, maxTokens = 24) {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused' });
  const r = await client.completions.create({ model: 'stories260K', prompt, max_tokens: maxTokens, temperature: 0 });
  assert.equal(r.usage.completion_tokens, maxTokens);
  return r.choices[0].text;
}

// The prompt's and the continuation's logprobs (echo + logprobs): the sampling rank
// scores the prompt, and the scores come back over the control plane.
async function echoLogprobs(baseURL, prompt) {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused' });
  const r = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 4, temperature: 0,
                                              echo: true, logprobs: 2 });
  return r.choices[0].logprobs;
}

let reference;  // single-process answers, the ground truth for every group
let referenceEcho;
before(async () => {
  if (missingPrerequisite()) return;
  const single = await startServer();
  try {
    reference = [];
    for (const p of prompts) reference.push(await greedy(single.baseURL, p));
    referenceEcho = await echoLogprobs(single.baseURL, prompts[2]);
  } finally {
    assert.equal(await single.stop(), 0);
  }
});

// The per-iteration trace of a 2x2 group (--trace-file): a complete Chrome trace with
// the scheduler's track and one per rank, each rank's steps as its place in the group
// makes them, and stage 1 receiving only after stage 0 started sending.
function checkGroupTrace(file) {
  const events = JSON.parse(readFileSync(file, 'utf8'));
  const names = new Map(events.filter((e) => e.name === 'process_name').map((e) => [e.pid, e.args.name]));
  assert.equal(names.get(1), 'scheduler');
  for (let r = 0; r < 4; ++r) {
    assert.equal(names.get(100 + r), `rank ${r} (stage ${Math.floor(r / 2)}, tp ${r % 2})`);
  }
  const spans = events.filter((e) => e.ph === 'X');
  const kinds = (pid) => [...new Set(spans.filter((e) => e.pid === pid).map((e) => e.name))].sort();
  assert.deepEqual(kinds(1), ['schedule', 'submit', 'update', 'wait']);
  assert.deepEqual(kinds(100), ['all-reduce', 'layers', 'send']);
  assert.deepEqual(kinds(101), ['all-reduce', 'layers', 'send']);
  assert.deepEqual(kinds(102), ['all-reduce', 'layers', 'lm-head', 'recv', 'sample']);  // samples
  assert.deepEqual(kinds(103), ['all-reduce', 'layers', 'recv']);
  for (const e of spans) {
    assert.ok(Number.isInteger(e.ts) && Number.isInteger(e.dur) && e.dur >= 0, JSON.stringify(e));
  }
  // The scheduler's schedule spans carry the iteration's shape (engine.cc): decodes and
  // prompt tokens, whose sum is at most the context attention reads.
  const shapes = spans.filter((e) => e.pid === 1 && e.name === 'schedule').map((e) => e.args);
  for (const a of shapes) {
    for (const key of ['sequences', 'decodes', 'prompt_tokens', 'context_tokens']) {
      assert.ok(Number.isInteger(a[key]) && a[key] >= 0, `${key} in ${JSON.stringify(a)}`);
    }
    assert.ok(a.sequences >= 1 && a.decodes <= a.sequences, JSON.stringify(a));
    assert.ok(a.decodes + a.prompt_tokens <= a.context_tokens, JSON.stringify(a));
  }
  assert.ok(shapes.some((a) => a.prompt_tokens > 0) && shapes.some((a) => a.decodes > 0),
            'iterations with prompt tokens and with decodes');
  const at = (pid, name, it) => spans.find((e) => e.pid === pid && e.name === name && e.args.iteration === it);
  const iterations = [...new Set(spans.filter((e) => e.pid === 102 && e.name === 'sample').map((e) => e.args.iteration))];
  assert.ok(iterations.length >= 24, `${iterations.length} iterations traced`);
  for (const it of iterations) {
    const submit = at(1, 'submit', it), send = at(100, 'send', it), recv = at(102, 'recv', it);
    assert.ok(submit && send && recv, `iteration ${it}: submit, stage 0's send and stage 1's recv`);
    assert.ok(at(100, 'layers', it).ts >= submit.ts, `iteration ${it}: rank 0 ran before the plan was sent`);
    assert.ok(recv.ts + recv.dur >= send.ts, `iteration ${it}: stage 1 received before stage 0 sent`);
  }
}

test('a local 2x2 group answers as a single process', async (t) => {
  if (skipOrFail(t)) return;
  const traceDir = mkdtempSync(path.join(os.tmpdir(), 'orca-trace-'));
  t.after(() => rmSync(traceDir, { recursive: true, force: true }));
  const traceFile = path.join(traceDir, 'trace.json');
  const group = await startServer(['--tensor-parallel', '2', '--pipeline-parallel', '2', '--threads', '4',
                                   '--trace-file', traceFile],
                                  { timeoutMs: 120000 });
  try {
    const answers = await Promise.all(prompts.map((p) => greedy(group.baseURL, p)));
    assert.deepEqual(answers, reference);
    // Streamed, through the same client.
    const client = new OpenAI({ baseURL: `${group.baseURL}/v1`, apiKey: 'unused' });
    let text = '';
    const stream = await client.completions.create({ model: 'stories260K', prompt: prompts[0], max_tokens: 24,
                                                     temperature: 0, stream: true });
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    assert.equal(text, reference[0]);
    // Prompt logprobs: the same tokens, and logprobs equal up to the order of the
    // tensor-parallel sums, which the float16 KV cache can round apart (1.5e-3 seen
    // under ASan's -O1; a wrong row or target is off by more than 1).
    const echo = await echoLogprobs(group.baseURL, prompts[2]);
    assert.deepEqual(echo.tokens, referenceEcho.tokens);
    assert.equal(echo.token_logprobs[0], null);
    for (let i = 1; i < echo.tokens.length; i++) {
      assert.ok(Math.abs(echo.token_logprobs[i] - referenceEcho.token_logprobs[i]) < 1e-2,
                `token ${i}: ${echo.token_logprobs[i]} vs ${referenceEcho.token_logprobs[i]}`);
      assert.deepEqual(Object.keys(echo.top_logprobs[i]).sort(), Object.keys(referenceEcho.top_logprobs[i]).sort());
    }
    assert.equal((await fetch(`${group.baseURL}/ready`)).status, 200);
    const metrics = await (await fetch(`${group.baseURL}/metrics`)).text();
    assert.equal(metricValue(metrics, 'orca_group_ready'), 1);
    assert.equal(metricValue(metrics, 'orca_group_world_size'), 4);
    assert.equal(metricValue(metrics, 'orca_group_breaks_total'), 0);
  } finally {
    assert.equal(await group.stop(), 0);
  }
  checkGroupTrace(traceFile);
});

// A stopped worker keeps its TCP connection open, so only the plan deadline catches it
// (GroupExecutorOptions::plan_deadline_s, 10 s by default): the in-flight request fails
// retriably, the scheduler kills the worker it names and the supervisor restarts it.
test('a SIGSTOPped worker of a local group fails the request retriably and is restarted', async (t) => {
  if (skipOrFail(t)) return;
  const group = await startServer(['--tensor-parallel', '2', '--threads', '2'], { timeoutMs: 120000 });
  const pidsOf = () => [...group.stderr().matchAll(/started worker stage 0 tp 1 \(pid (\d+)\)/g)].map((m) => Number(m[1]));
  const stoppedChildOfServer = (pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return state === 'T' && Number(ppid) === group.child.pid;
    } catch { return false; }
  };
  let stopped = 0;
  try {
    assert.equal(await greedy(group.baseURL, prompts[0]), reference[0]);
    const [pid] = pidsOf();
    assert.ok(pid > 0, `no "started worker stage 0 tp 1 (pid N)" line:\n${group.stderr()}`);
    const res = await fetch(`${group.baseURL}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'stories260K', prompt: prompts[0], max_tokens: 480, ignore_eos: true,
                             temperature: 0, stream: true }),
    });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let body = decoder.decode((await reader.read()).value ?? new Uint8Array());
    process.kill(pid, 'SIGSTOP');
    stopped = pid;
    const t0 = Date.now();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      body += decoder.decode(value, { stream: true });
    }
    const tookMs = Date.now() - t0;
    t.diagnostic(`the request failed ${tookMs} ms after the worker was stopped`);
    assert.match(body, /service_unavailable_error/, body.slice(-2000));
    assert.ok(tookMs < 15000, `the request failed ${tookMs} ms after the worker stopped:\n${group.stderr().slice(-5000)}`);
    // The scheduler named the stopped worker; the supervisor killed and restarted it.
    await waitFor('the stopped worker is restarted', async () => pidsOf().length >= 2, 30000, group.stderr);
    assert.match(group.stderr(), new RegExp(`killing worker stage 0 tp 1 \\(pid ${pid}\\) to restart it`));
    assert.notEqual(pidsOf().at(-1), pid);
    await waitFor('the group re-forms', async () => (await readyStatus(group.baseURL)) === 200, 60000, group.stderr);
    assert.equal(await greedy(group.baseURL, prompts[1]), reference[1]);
    const metrics = await (await fetch(`${group.baseURL}/metrics`)).text();
    assert.equal(metricValue(metrics, 'orca_group_breaks_total'), 1);
    assert.equal(metricValue(metrics, 'orca_group_ready'), 1);
  } finally {
    if (stopped && stoppedChildOfServer(stopped)) {
      try { process.kill(stopped, 'SIGKILL'); process.kill(stopped, 'SIGCONT'); } catch { /* gone */ }
    }
    assert.equal(await group.stop(), 0);
  }
});

// --- the controller's pods as processes ---------------------------------------------

test('the pods orca-controller renders form a group that survives a lost worker', async (t) => {
  if (skipOrFail(t)) return;
  const controller = controllerOrSkip(t);
  if (!controller) return;
  // 2 stages x 2 tensor ranks: 4 worker pods.
  const group = await startRenderedGroup({ controller, device: 'cpu', tensor: 2 });
  const { url, procs, workers, logs } = group;
  try {
    assert.equal(workers.length, 4);
    await waitFor('the scheduler reports ready', async () => (await readyStatus(url)) === 200, 120000, logs);
    assert.deepEqual(await Promise.all(prompts.map((p) => greedy(url, p))), reference);
    // Every worker pod reports itself ready and busy on its metrics port.
    for (const w of workers) {
      const port = w.args[w.args.indexOf('--metrics-port') + 1];
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      assert.equal(metricValue(text, 'orca_worker_ready'), 1, `${w.name}:\n${text}`);
      assert.ok(metricValue(text, 'orca_worker_iterations_total') > 0, `${w.name}:\n${text}`);
    }

    // Lose the stage-1 worker with tp rank 0 (the sampling rank) mid-request.
    const victim = procs.find((p) => p.name === 'demo-g0-s1-0');
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'stories260K', prompt: prompts[0], max_tokens: 480, ignore_eos: true,
                             temperature: 0, stream: true }),
    });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let body = '';
    body += decoder.decode((await reader.read()).value ?? new Uint8Array());
    await victim.stop('SIGKILL');
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      body += decoder.decode(value, { stream: true });
    }
    // Either the request had already finished (a fast machine) or it failed retriably.
    if (!body.includes('"finish_reason":"length"')) {
      assert.match(body, /service_unavailable_error/, body.slice(-2000));
    }
    await waitFor('the scheduler reports not ready', async () => (await readyStatus(url)) === 503, 30000, logs);
    // While the group is incomplete, requests are refused retriably.
    const refused = await fetch(`${url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'stories260K', prompt: prompts[1], max_tokens: 4 }),
    });
    assert.equal(refused.status, 503);
    assert.ok(refused.headers.get('retry-after'), 'a 503 carries Retry-After');
    assert.equal((await refused.json()).error.code, null);
    // Kubernetes restarts the pod; the group re-forms and serves again.
    const spec = workers.find((w) => w.name === 'demo-g0-s1-0');
    procs.push(startProcess(`${spec.name} (restarted)`, spec.args, spec.env));
    await waitFor('the group re-forms', async () => (await readyStatus(url)) === 200, 120000, logs);
    assert.equal(await greedy(url, prompts[1]), reference[1]);
    assert.equal(await greedy(url, prompts[2]), reference[2]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    assert.equal(metricValue(metrics, 'orca_group_ready'), 1);
    assert.equal(metricValue(metrics, 'orca_group_world_size'), 4);
    assert.equal(metricValue(metrics, 'orca_group_ranks_joined'), 4);
    assert.equal(metricValue(metrics, 'orca_group_generation'), 2);
    assert.equal(metricValue(metrics, 'orca_group_breaks_total'), 1);
    assert.equal(metricValue(metrics, 'orca_kv_cache_usage_perc'), 0);
  } finally {
    await group.stop();
  }
});

// stories260K has 5 layers; the balanced split of two stages is 3 + 2, so 4 + 1 shows the
// CR's split arrived. 3 + 1 passes the CRD (one count per stage) but not the checkpoint.
test('the rendered parallelism.pipelineLayers split the layers, or stop the scheduler naming them', async (t) => {
  if (skipOrFail(t)) return;
  const controller = controllerOrSkip(t);
  if (!controller) return;
  const group = await startRenderedGroup({ controller, device: 'cpu', pipelineLayers: [4, 1] });
  try {
    await waitFor('the scheduler reports ready', async () => (await readyStatus(group.url)) === 200, 120000, group.logs);
    assert.match(group.procs[0].log(), /layers per stage 4 \+ 1/);
    assert.deepEqual(await Promise.all(prompts.map((p) => greedy(group.url, p))), reference);
  } finally {
    await group.stop();
  }
  const bad = await startRenderedGroup({ controller, device: 'cpu', pipelineLayers: [3, 1] });
  try {
    const scheduler = bad.procs[0];
    await waitFor('the scheduler exits', async () => scheduler.child.exitCode !== null, 60000, bad.logs);
    assert.notEqual(scheduler.child.exitCode, 0);
    assert.match(scheduler.log(), /pipeline layers 3,1 sum to 4; the model has 5/);
  } finally {
    await bad.stop();
  }
});

test('a local group with a corrupt checkpoint exits naming the file', async (t) => {
  if (skipOrFail(t)) return;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'orca-bad-'));
  try {
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'tokenizer.model',
                     'generation_config.json', 'model.safetensors']) {
      if (existsSync(path.join(storiesDir, f))) writeFileSync(path.join(dir, f), readFileSync(path.join(storiesDir, f)));
    }
    // The scheduler reads only config.json and the tokenizer; the workers hit the damage.
    const weights = readFileSync(path.join(dir, 'model.safetensors'));
    writeFileSync(path.join(dir, 'model.safetensors'), weights.subarray(0, 1000));
    const child = spawn(process.env.ORCA_BIN, ['serve', '--model', dir, '--pipeline-parallel', '2', '--port', '0',
                                               '--grpc-port', '-1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    const code = await new Promise((resolve) => {
      const timer = setTimeout(() => { child.kill('SIGKILL'); resolve('timeout'); }, 120000);
      child.on('exit', (c) => { clearTimeout(timer); resolve(c); });
    });
    assert.notEqual(code, 0, err.slice(-2000));
    assert.notEqual(code, 'timeout', err.slice(-2000));
    assert.match(err, /orca serve: local workers exited \d+ times before the group formed/);
    assert.match(err, /model\.safetensors: header length \d+ runs past the end of the 1000-byte file/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
