// The soak's request kinds. Each `run<Kind>(ctx, rng)` sends one request (a burst sends
// many), judges the answer (judge.mjs) and resolves with outcome records, never throws.
// ctx: { baseURL, apiKey, maxBodyBytes, timeoutMs, openai (an OpenAI client), now() }.
import http from 'node:http';
import { APIError } from 'openai';
import { emptyAccount, judgeErrorAnswer, judgeFull, readSse, StreamJudge } from './judge.mjs';
import { hostileCases, judgeHostile, sendHostile } from './hostile.mjs';

const kPrompts = [
  'Once upon a time', 'The cat sat on the', 'Lily and Ben went to the park. They',
  'One day, a little bird', 'Tom had a red ball. He', 'The sun was hot and the dog',
  'Mom said, "Come here!"', 'There was a big tree in the garden.',
];

// A prompt of at most ~100 tokens (stories260K: 512 in the context, so prompt + up to
// 400 new tokens always fit), as text or as token ids.
function makePrompt(rng) {
  if (rng.chance(0.15)) return Array.from({ length: rng.int(1, 48) }, () => rng.int(3, 511));
  return makeText(rng);
}

function makeText(rng) {
  let p = rng.pick(kPrompts);
  while (p.length < 40 && rng.chance(0.5)) p += ` ${rng.pick(kPrompts)}`;
  return p;
}

function sampling(rng) {
  const s = { temperature: rng.chance(0.3) ? 0 : Number(rng.uniform(0.2, 1.2).toFixed(2)), seed: rng.int(0, 1e6) };
  if (rng.chance(0.3)) s.top_p = Number(rng.uniform(0.5, 1).toFixed(2));
  if (rng.chance(0.2)) s.top_k = rng.int(1, 50);
  return s;
}

// A per-request deadline: `signal` aborts when the client times out or cancels.
function deadline(ms) {
  const controller = new AbortController();
  const d = { signal: controller.signal, timedOut: false, cancelled: false };
  const timer = setTimeout(() => { d.timedOut = true; controller.abort(); }, ms);
  d.cancel = () => { d.cancelled = true; controller.abort(); };
  d.clear = () => clearTimeout(timer);
  return d;
}

function record(kind, ctx, t0, verdict, account, extra = {}) {
  return { kind, start: t0, end: ctx.now(), ...verdict, account, ...extra };
}

// What a request that got no answer counts as: cancelled by us, timed out, or broken.
function noAnswer(d, e, what) {
  if (d.timedOut) return { outcome: 'violation', detail: `hang: ${what} not answered within the client timeout` };
  if (d.cancelled) return { outcome: 'aborted' };
  const chain = [];
  for (let x = e; x && chain.length < 4; x = x.cause) chain.push(`${x.code ?? x.name}: ${x.message}`);
  return { outcome: 'violation', detail: `no answer (${chain.join(' <- ')})` };
}

function headers(ctx) {
  return { 'Content-Type': 'application/json', Authorization: `Bearer ${ctx.apiKey}` };
}

// A completion (chat: false) or chat completion through fetch, streamed or not.
// cancel: { afterMs } (non-streamed) or { afterChunks } (streamed) makes the client abort.
async function rawGeneration(kind, ctx, rng, { stream, chat = false, n = 1, maxTokens, ignoreEos, cancel }) {
  const t0 = ctx.now();
  const body = { model: 'stories260K', max_tokens: maxTokens, n, ignore_eos: ignoreEos, ...sampling(rng) };
  if (chat) body.messages = [{ role: 'user', content: makeText(rng) }];
  else body.prompt = makePrompt(rng);
  const includeUsage = stream && (ctx.quiet || rng.chance(0.8));
  if (stream) Object.assign(body, { stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) });
  const account = emptyAccount(n, maxTokens);
  const d = deadline(ctx.timeoutMs);
  let cancelTimer;
  if (cancel?.afterMs !== undefined) {
    account.reached = 'maybe';
    account.tokensHi = n * maxTokens;
    cancelTimer = setTimeout(d.cancel, cancel.afterMs);
  }
  const start = performance.now();
  try {
    let res;
    try {
      res = await fetch(`${ctx.baseURL}${chat ? '/v1/chat/completions' : '/v1/completions'}`,
                        { method: 'POST', headers: headers(ctx), body: JSON.stringify(body), signal: d.signal });
    } catch (e) {
      return record(kind, ctx, t0, noAnswer(d, e, 'the request'), account);
    }
    if (res.status !== 200 || !stream) {
      let text;
      try {
        text = await res.text();
      } catch (e) {
        return record(kind, ctx, t0, noAnswer(d, e, 'the body'), account);
      }
      if (res.status !== 200) {
        const v = judgeErrorAnswer(res.status, res.headers.get('retry-after'), text, account);
        return record(kind, ctx, t0, v, account, { status: res.status });
      }
      const v = judgeFull(text, { chat, n, maxTokens, ignoreEos }, account);
      return record(kind, ctx, t0, v, account, { status: 200, latencyMs: performance.now() - start });
    }
    const judge = new StreamJudge({ chat, n, maxTokens, ignoreEos, includeUsage }, account);
    let chunks = 0;
    let done = false;
    try {
      ({ done } = await readSse(res.body, (j) => {
        judge.add(j);
        if (cancel?.afterChunks !== undefined && ++chunks > cancel.afterChunks) d.cancel();
      }));
    } catch (e) {
      if (e.malformed) return record(kind, ctx, t0, { outcome: 'violation', detail: e.message }, account, { status: 200 });
      const v = noAnswer(d, e, 'the stream');
      if (v.outcome !== 'aborted') {
        // A stream that broke after its error event is judged by it.
        if (judge.error) return record(kind, ctx, t0, judge.judge(false, false), account, { status: 200 });
        return record(kind, ctx, t0, v, account, { status: 200 });
      }
    }
    const v = judge.judge(done, d.cancelled);
    if (v.outcome === 'aborted') {
      // Cancelled well before the end (n = 1, >= 100 tokens to go): the server must count
      // it as aborted (or as failed, if the group broke meanwhile), not as finished.
      const seen = judge.contentChunks[0];
      if (n === 1 && ignoreEos && maxTokens - seen >= 100 && judge.finish[0] === null) account.cancelledEarly = 1;
    }
    const extra = { status: 200, latencyMs: performance.now() - start };
    if (judge.firstTokenAt !== null) extra.ttftMs = judge.firstTokenAt - start;
    return record(kind, ctx, t0, v, account, extra);
  } finally {
    clearTimeout(cancelTimer);
    d.clear();
  }
}

// A chat completion through the official OpenAI client (maxRetries 0: every outcome is
// seen as it happened), streamed or not.
async function clientChat(kind, ctx, rng, { stream }) {
  const t0 = ctx.now();
  const n = rng.chance(0.2) ? 2 : 1;
  const maxTokens = rng.int(1, 200);
  const ignoreEos = rng.chance(0.5);
  const account = emptyAccount(n, maxTokens);
  const d = deadline(ctx.timeoutMs);
  const start = performance.now();
  const params = { model: 'stories260K', messages: [{ role: 'user', content: makeText(rng) }],
                   max_tokens: maxTokens, n, ignore_eos: ignoreEos, ...sampling(rng) };
  const errorVerdict = (e) => {
    if (e?.status) {
      const text = JSON.stringify({ error: e.error });
      return judgeErrorAnswer(e.status, e.headers?.get?.('retry-after') ?? e.headers?.['retry-after'], text, account);
    }
    if (e instanceof APIError && e.status === undefined && e.error) {
      return null;  // an SSE error event: judged by the stream judge
    }
    return noAnswer(d, e, 'the chat request');
  };
  try {
    if (!stream) {
      let r;
      try {
        r = await ctx.openai.chat.completions.create(params, { signal: d.signal });
      } catch (e) {
        return record(kind, ctx, t0, errorVerdict(e) ?? { outcome: 'violation', detail: String(e) }, account);
      }
      const v = judgeFull(JSON.stringify(r), { chat: true, n, maxTokens, ignoreEos }, account);
      return record(kind, ctx, t0, v, account, { status: 200, latencyMs: performance.now() - start });
    }
    const judge = new StreamJudge({ chat: true, n, maxTokens, ignoreEos, includeUsage: true }, account);
    let s;
    try {
      s = await ctx.openai.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } },
                                                   { signal: d.signal });
    } catch (e) {
      return record(kind, ctx, t0, errorVerdict(e) ?? { outcome: 'violation', detail: String(e) }, account);
    }
    try {
      for await (const chunk of s) judge.add(chunk);
    } catch (e) {
      const v = errorVerdict(e);
      if (v) return record(kind, ctx, t0, v, Object.assign(account, { reached: 'yes', tokensHi: n * maxTokens }), { status: 200 });
      judge.add({ error: e.error });
      return record(kind, ctx, t0, judge.judge(true, false), account, { status: 200 });
    }
    const v = judge.judge(true, false);
    const extra = { status: 200, latencyMs: performance.now() - start };
    if (judge.firstTokenAt !== null) extra.ttftMs = judge.firstTokenAt - start;
    return record(kind, ctx, t0, v, account, extra);
  } finally {
    d.clear();
  }
}

// A non-streamed completion whose client closes its socket after `afterMs` (as a client
// that goes away does), through node:http.
function disconnecting(kind, ctx, rng) {
  const t0 = ctx.now();
  const n = rng.chance(0.3) ? 2 : 1;
  const maxTokens = rng.int(100, 400);
  const account = emptyAccount(n, maxTokens);
  account.reached = 'maybe';
  account.tokensHi = n * maxTokens;
  const body = JSON.stringify({ model: 'stories260K', prompt: makePrompt(rng), max_tokens: maxTokens, n,
                                ignore_eos: true, ...sampling(rng) });
  const afterMs = rng.int(10, 3000);
  return new Promise((resolve) => {
    let settled = false;
    const settle = (v, extra) => { if (!settled) { settled = true; clearTimeout(timer); resolve(record(kind, ctx, t0, v, account, extra)); } };
    const req = http.request(new URL('/v1/completions', ctx.baseURL), { method: 'POST', headers: headers(ctx) });
    let timer = setTimeout(() => { req.destroy(); settle({ outcome: 'aborted' }); }, afterMs);
    req.on('error', (e) => settle({ outcome: 'violation', detail: `no answer (${e.code}: ${e.message})` }));
    req.on('response', async (res) => {
      // Answered before we left: the body, too, must end within the client timeout.
      clearTimeout(timer);
      timer = setTimeout(() => {
        settle({ outcome: 'violation', detail: 'hang: the answer\'s body did not end within the client timeout' },
               { status: res.statusCode });
        res.destroy();
      }, ctx.timeoutMs);
      let text = '';
      try {
        for await (const d of res) text += d;
      } catch (e) {
        settle({ outcome: 'violation', detail: `the body broke (${e.code}: ${e.message})` });
        return;
      }
      if (res.statusCode !== 200) {
        settle(judgeErrorAnswer(res.statusCode, res.headers['retry-after'], text, account), { status: res.statusCode });
      } else {
        settle(judgeFull(text, { chat: false, n, maxTokens, ignoreEos: true }, account), { status: 200 });
      }
    });
    req.end(body);
  });
}

async function hostile(kind, ctx, rng) {
  const t0 = ctx.now();
  const c = rng.pick(hostileCases);
  const d = deadline(ctx.timeoutMs);
  const r = await sendHostile(c, { baseURL: ctx.baseURL, apiKey: ctx.apiKey, maxBodyBytes: ctx.maxBodyBytes, signal: d.signal });
  d.clear();
  const account = emptyAccount(0, 0);
  if (r.error && d.timedOut) return [record(kind, ctx, t0, { outcome: 'violation', detail: `hang: hostile '${c[0]}' not answered` }, account)];
  const why = judgeHostile(c, r);
  const v = why ? { outcome: 'violation', detail: why }
    : r.status === 503 ? { outcome: 'retriable', detail: '503 before admission: not ready' } : { outcome: 'rejected' };
  return [record(kind, ctx, t0, v, account, { status: r.status, case: c[0] })];
}

// Runs one request of `kind`; resolves with a list of outcome records.
export async function runScenario(kind, ctx, rng) {
  const n = () => (rng.chance(0.25) ? 2 : 1);
  switch (kind) {
    case 'completion':
      return [await rawGeneration(kind, ctx, rng, { stream: false, n: n(), maxTokens: rng.int(1, 300), ignoreEos: rng.chance(0.5) })];
    case 'completion_stream':
      return [await rawGeneration(kind, ctx, rng, { stream: true, n: n(), maxTokens: rng.int(1, 300), ignoreEos: rng.chance(0.5) })];
    case 'chat':
      return [await clientChat(kind, ctx, rng, { stream: false })];
    case 'chat_stream':
      return [await clientChat(kind, ctx, rng, { stream: true })];
    case 'chat_raw_stream':
      return [await rawGeneration(kind, ctx, rng, { stream: true, chat: true, n: n(), maxTokens: rng.int(1, 200), ignoreEos: rng.chance(0.5) })];
    case 'cancel_stream':
      return [await rawGeneration(kind, ctx, rng, { stream: true, chat: rng.chance(0.3), n: 1, maxTokens: rng.int(250, 400),
                                                    ignoreEos: true, cancel: { afterChunks: rng.int(0, 120) } })];
    case 'cancel_wait':
      return [await rawGeneration(kind, ctx, rng, { stream: false, n: n(), maxTokens: rng.int(150, 400), ignoreEos: true,
                                                    cancel: { afterMs: rng.int(10, 3000) } })];
    case 'disconnect':
      return [await disconnecting(kind, ctx, rng)];
    case 'hostile':
      return hostile(kind, ctx, rng);
    case 'burst': {
      // Over the waiting limit at once: some must get 429 + Retry-After, none may fail otherwise.
      const size = ctx.burstSize;
      return Promise.all(Array.from({ length: size }, () => rawGeneration(kind, ctx, rng.fork(),
        { stream: rng.chance(0.3), n: 1, maxTokens: rng.int(16, 96), ignoreEos: true })));
    }
    default:
      throw new Error(`unknown scenario ${kind}`);
  }
}
