// At least 40 malformed or hostile requests: each gets the documented status and an
// OpenAI error object, and the server answers a normal request correctly afterwards.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer, skipOrFail, missingPrerequisite, metricValue } from './orca_server.mjs';

let server;
const KEY = 'sk-test-orca';

before(async () => {
  if (missingPrerequisite()) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'orca-key-'));
  writeFileSync(path.join(dir, 'key'), `${KEY}\n`);
  server = await startServer(['--api-key-file', path.join(dir, 'key'), '--max-body-bytes', '65536']);
});
after(async () => { if (server) assert.equal(await server.stop(), 0, 'orca serve exits cleanly (no sanitizer report)'); });

const C = '/v1/completions';
const CH = '/v1/chat/completions';
const ok = { model: 'stories260K', prompt: 'Once upon a time', max_tokens: 4 };
const chatOk = { model: 'stories260K', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 };

// [name, path, body (object | string | Buffer), expected status, options]
const cases = [
  ['malformed JSON', C, '{"prompt": "x",', 400],
  ['JSON array body', C, '[1,2,3]', 400],
  ['JSON string body', C, '"hello"', 400],
  ['empty body', C, '', 400],
  ['invalid UTF-8 in body', C, Buffer.from([0x7b, 0x22, 0x70, 0x72, 0x6f, 0x6d, 0x70, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), 400],
  ['missing prompt', C, { model: 'stories260K' }, 400],
  ['empty prompt', C, { ...ok, prompt: '' }, 400],
  ['prompt is a number', C, { ...ok, prompt: 42 }, 400],
  ['prompt is an object', C, { ...ok, prompt: { a: 1 } }, 400],
  ['empty prompt array', C, { ...ok, prompt: [] }, 400],
  ['negative token id', C, { ...ok, prompt: [1, -5, 3] }, 400],
  ['token id beyond the vocabulary', C, { ...ok, prompt: [1, 100000] }, 400],
  ['fractional token id', C, { ...ok, prompt: [1, 2.5] }, 400],
  ['max_tokens is a string', C, { ...ok, max_tokens: '10' }, 400],
  ['max_tokens zero', C, { ...ok, max_tokens: 0 }, 400],
  ['max_tokens negative', C, { ...ok, max_tokens: -3 }, 400],
  ['max_tokens absurd', C, { ...ok, max_tokens: 1e12 }, 400],
  ['max_tokens over the context', C, { ...ok, max_tokens: 600 }, 400],
  ['prompt over the context', C, { ...ok, prompt: 'word '.repeat(2000) }, 400],
  ['temperature negative', C, { ...ok, temperature: -1 }, 400],
  ['temperature too high', C, { ...ok, temperature: 7 }, 400],
  ['temperature is a string', C, { ...ok, temperature: 'hot' }, 400],
  ['top_p zero', C, { ...ok, top_p: 0 }, 400],
  ['top_p above one', C, { ...ok, top_p: 1.5 }, 400],
  ['top_k below -1', C, { ...ok, top_k: -7 }, 400],
  ['min_p above one', C, { ...ok, min_p: 2 }, 400],
  ['repetition_penalty zero', C, { ...ok, repetition_penalty: 0 }, 400],
  ['presence_penalty out of range', C, { ...ok, presence_penalty: 5 }, 400],
  ['n zero', C, { ...ok, n: 0 }, 400],
  ['n huge', C, { ...ok, n: 100000 }, 400],
  ['best_of differs from n', C, { ...ok, best_of: 3 }, 400],
  ['stop list too long', C, { ...ok, stop: Array.from({ length: 40 }, (_, i) => `s${i}`) }, 400],
  ['stop is a number', C, { ...ok, stop: 7 }, 400],
  ['empty stop string', C, { ...ok, stop: [''] }, 400],
  ['logprobs too many', C, { ...ok, logprobs: 50 }, 400],
  ['stream is a string', C, { ...ok, stream: 'yes' }, 400],
  ['stream_options without stream', C, { ...ok, stream_options: { include_usage: true } }, 400],
  ['min_tokens above max_tokens', C, { ...ok, min_tokens: 10 }, 400],
  ['stop_token_ids not an array', C, { ...ok, stop_token_ids: 5 }, 400],
  ['logit_bias with a bad key', C, { ...ok, logit_bias: { abc: 1 } }, 400],
  ['logit_bias out of range', C, { ...ok, logit_bias: { 5: 1000 } }, 400],
  ['seed is a string', C, { ...ok, seed: 'abc' }, 400],
  ['suffix is unsupported', C, { ...ok, suffix: 'x' }, 400],
  ['unknown model', C, { ...ok, model: 'gpt-9' }, 404],
  ['model is a number', C, { ...ok, model: 3 }, 400],
  ['chat: missing messages', CH, { model: 'stories260K' }, 400],
  ['chat: messages not an array', CH, { ...chatOk, messages: 'hi' }, 400],
  ['chat: empty messages', CH, { ...chatOk, messages: [] }, 400],
  ['chat: unknown role', CH, { ...chatOk, messages: [{ role: 'wizard', content: 'x' }] }, 400],
  ['chat: content is a number', CH, { ...chatOk, messages: [{ role: 'user', content: 5 }] }, 400],
  ['chat: image content part', CH, { ...chatOk, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 400],
  ['chat: top_logprobs without logprobs', CH, { ...chatOk, top_logprobs: 3 }, 400],
  ['chat: unknown model', CH, { ...chatOk, model: 'nope' }, 404],
  ['body too large', C, { ...ok, prompt: 'x'.repeat(200000) }, 413],
  ['no API key', C, ok, 401, { noAuth: true }],
  ['wrong API key', C, ok, 401, { auth: 'Bearer nope' }],
  ['unknown path', '/v1/engines', ok, 404],
  ['detokenize: ids not numbers', '/detokenize', { tokens: ['a'] }, 400],
  ['tokenize: prompt missing', '/tokenize', {}, 400],
];

async function send(p, body, opts = {}) {
  const headers = { 'Content-Type': 'application/json' };
  if (!opts.noAuth) headers.Authorization = opts.auth ?? `Bearer ${KEY}`;
  const payload = Buffer.isBuffer(body) || typeof body === 'string' ? body : JSON.stringify(body);
  return fetch(`${server.baseURL}${p}`, { method: 'POST', headers, body: payload });
}

test(`bad-input suite (${cases.length} cases)`, async (t) => {
  if (skipOrFail(t)) return;
  assert.ok(cases.length >= 40);
  for (const [name, p, body, status, opts] of cases) {
    const res = await send(p, body, opts);
    const text = await res.text();
    assert.equal(res.status, status, `${name}: got ${res.status} ${text}`);
    let j;
    assert.doesNotThrow(() => { j = JSON.parse(text); }, `${name}: error body is not JSON: ${text}`);
    assert.equal(typeof j.error?.message, 'string', `${name}: no error.message in ${text}`);
    assert.ok(j.error.message.length > 0, name);
    assert.equal(typeof j.error.type, 'string', name);
    assert.ok('param' in j.error && 'code' in j.error, `${name}: error lacks param/code`);
  }
  // Still healthy and correct afterwards.
  const res = await send(C, { ...ok, temperature: 0, max_tokens: 8 });
  assert.equal(res.status, 200);
  const j = await res.json();
  assert.equal(j.choices[0].text, ', there was a little girl');
  assert.equal((await fetch(`${server.baseURL}/health`)).status, 200, 'health needs no key');
});

test('the waiting queue is bounded: 429 with Retry-After', async (t) => {
  if (skipOrFail(t)) return;
  const small = await startServer(['--max-waiting-requests', '2', '--max-batch-size', '1']);
  try {
    const body = JSON.stringify({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 500, ignore_eos: true });
    const results = await Promise.all(Array.from({ length: 30 }, () =>
      fetch(`${small.baseURL}${C}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body })
        .then(async (r) => ({ status: r.status, retry: r.headers.get('retry-after'), body: await r.text() }))));
    const rejected = results.filter((r) => r.status === 429);
    assert.ok(rejected.length > 0, `no 429 among ${results.map((r) => r.status)}`);
    for (const r of rejected) {
      assert.equal(r.retry, '1');
      assert.equal(JSON.parse(r.body).error.type, 'rate_limit_error');
    }
    assert.ok(results.some((r) => r.status === 200));
  } finally {
    assert.equal(await small.stop(), 0);
  }
});

// Issue 16, bug 1: without chunked prefill a prompt over --max-batched-tokens can never
// be scheduled; it used to wait at the head of the queue forever, and every request
// behind it with it. It is refused at once, naming the limit.
test('a prompt over --max-batched-tokens without chunked prefill: 400, and serving goes on', async (t) => {
  if (skipOrFail(t)) return;
  const small = await startServer(['--no-chunked-prefill', '--max-batched-tokens', '64']);
  let exitCode;
  try {
    const post = (body) => fetch(`${small.baseURL}${C}`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
      signal: AbortSignal.timeout(20000),
    });
    const prompt = Array.from({ length: 100 }, (_, i) => i + 1);
    const res = await post({ model: 'stories260K', prompt, max_tokens: 4 });
    const text = await res.text();
    assert.equal(res.status, 400, text);
    const err = JSON.parse(text).error;
    assert.equal(err.type, 'invalid_request_error', text);
    assert.match(err.message, /the prompt has 100 tokens but --max-batched-tokens is 64 and chunked prefill is off/);
    const next = await post({ ...ok, temperature: 0, max_tokens: 8 });
    assert.equal(next.status, 200);
    assert.equal((await next.json()).choices[0].text, ', there was a little girl');
    const metrics = await (await fetch(`${small.baseURL}/metrics`)).text();
    assert.equal(metricValue(metrics, 'orca_num_requests_waiting'), 0, 'nothing is left waiting');
  } finally {
    exitCode = await small.stop();  // (asserted below, so a failure above is the one reported)
  }
  assert.equal(exitCode, 0);
});
