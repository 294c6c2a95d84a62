// The official OpenAI client (npm `openai`) against `orca serve` on stories260K.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, skipOrFail, storiesDir, missingPrerequisite } from './orca_server.mjs';

let server;
let client;
const prompt = 'Once upon a time';

before(async () => {
  if (missingPrerequisite()) return;
  server = await startServer(['--max-batch-size', '16', '--max-batched-tokens', '256']);
  client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => { if (server) assert.equal(await server.stop(), 0, 'orca serve exits cleanly on SIGTERM'); });

function expectedContinuation() {
  const text = readFileSync(path.join(storiesDir, 'greedy_once_upon_a_time_256.txt'), 'utf8').trimEnd();
  assert.ok(text.startsWith(prompt));
  return text.slice(prompt.length);
}

test('greedy completion reproduces the reference continuation', async (t) => {
  if (skipOrFail(t)) return;
  const r = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 200, temperature: 0 });
  const text = r.choices[0].text;
  const expected = expectedContinuation();
  assert.ok(text.length > 400, `only ${text.length} characters`);
  assert.equal(text, expected.slice(0, text.length));
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.prompt_tokens, 5);
  assert.equal(r.usage.completion_tokens, 200);
  assert.equal(r.object, 'text_completion');
  assert.equal(r.model, 'stories260K');
});

test('streaming yields the same text as a plain completion, then usage', async (t) => {
  if (skipOrFail(t)) return;
  const stream = await client.completions.create({
    model: 'stories260K', prompt, max_tokens: 120, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
    chunks++;
  }
  assert.ok(chunks > 20, `${chunks} chunks: tokens should stream one by one`);
  assert.equal(finish, 'length');
  assert.deepEqual(usage && [usage.prompt_tokens, usage.completion_tokens], [5, 120]);
  assert.equal(text, expectedContinuation().slice(0, text.length));
  assert.ok(text.length > 250);
});

test('chat completion, streamed and not', async (t) => {
  if (skipOrFail(t)) return;
  const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
  const r = await client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 30, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(r.choices[0].message.content.length > 0);
  const stream = await client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 30, temperature: 0, stream: true });
  let content = '';
  let role = null;
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta ?? {};
    if (d.role) role = d.role;
    content += d.content ?? '';
  }
  assert.equal(role, 'assistant');
  assert.equal(content, r.choices[0].message.content);
});

test('two concurrent streams interleave and each equals its solo output', async (t) => {
  if (skipOrFail(t)) return;
  const prompts = ['Once upon a time', 'The little dog'];
  const solo = [];
  for (const p of prompts) {
    const r = await client.completions.create({ model: 'stories260K', prompt: p, max_tokens: 400, temperature: 0, ignore_eos: true });
    solo.push(r.choices[0].text);
  }
  const arrivals = [];
  const run = async (p, i) => {
    const stream = await client.completions.create({ model: 'stories260K', prompt: p, max_tokens: 400, temperature: 0, ignore_eos: true, stream: true });
    let text = '';
    for await (const chunk of stream) {
      for (const c of chunk.choices) { text += c.text; if (c.text) arrivals.push(i); }
    }
    return text;
  };
  const texts = await Promise.all(prompts.map(run));
  assert.deepEqual(texts, solo);
  // Interleaved: each stream delivered a chunk before the other's last one (one after
  // the other, as request-level scheduling would serve them, fails). Only the order of
  // first and last chunks counts: a loaded client reads each socket in bursts, so how
  // often the arrivals alternate says more about its event loop than about the server.
  const [first0, first1] = [arrivals.indexOf(0), arrivals.indexOf(1)];
  const [last0, last1] = [arrivals.lastIndexOf(0), arrivals.lastIndexOf(1)];
  assert.ok(first0 < last1 && first1 < last0,
    `streams did not overlap (first ${first0}/${first1}, last ${last0}/${last1})`);
});

test('n=3 with a seed is reproducible', async (t) => {
  if (skipOrFail(t)) return;
  const ask = () => client.completions.create({ model: 'stories260K', prompt, max_tokens: 40, temperature: 1.0, n: 3, seed: 1234 });
  const a = await ask();
  const b = await ask();
  assert.equal(a.choices.length, 3);
  assert.deepEqual(a.choices.map((c) => c.text), b.choices.map((c) => c.text));
  assert.equal(new Set(a.choices.map((c) => c.text)).size, 3, 'the three choices should differ');
  assert.deepEqual(a.choices.map((c) => c.index).sort(), [0, 1, 2]);
  assert.equal(a.usage.prompt_tokens, 5);
  assert.equal(a.usage.completion_tokens, 120);
});

test('logprobs, stop strings, token-id prompts, echo', async (t) => {
  if (skipOrFail(t)) return;
  const r = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 5, temperature: 0, logprobs: 2 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, 5);
  assert.equal(lp.token_logprobs.length, 5);
  for (const [i, top] of lp.top_logprobs.entries()) {
    assert.ok(lp.token_logprobs[i] <= 0);
    // Greedy: the chosen token is the most likely one.
    assert.ok(Math.abs(Math.max(...Object.values(top)) - lp.token_logprobs[i]) < 1e-6);
  }
  const s = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 100, temperature: 0, stop: ['Lily'] });
  assert.equal(s.choices[0].finish_reason, 'stop');
  assert.equal(s.choices[0].text, expectedContinuation().split('Lily')[0]);
  const ids = await client.completions.create({ model: 'stories260K', prompt: [1, 403, 407, 261, 378], max_tokens: 10, temperature: 0 });
  assert.equal(ids.choices[0].text, expectedContinuation().slice(0, ids.choices[0].text.length));
  // A long token-id prompt is one prompt, not many (the 64-prompt limit does not apply).
  const longIds = Array.from({ length: 300 }, (_, k) => 3 + (k % 400));
  const l = await client.completions.create({ model: 'stories260K', prompt: longIds, max_tokens: 2 });
  assert.equal(l.usage.prompt_tokens, 300);
  assert.equal(l.choices.length, 1);
  const e = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 3, temperature: 0, echo: true });
  assert.ok(e.choices[0].text.startsWith(prompt));
});

test('models, tokenize, detokenize, health, version', async (t) => {
  if (skipOrFail(t)) return;
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'stories260K');
  const tok = await (await fetch(`${server.baseURL}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt }) })).json();
  assert.deepEqual(tok.tokens, [1, 403, 407, 261, 378]);
  const det = await (await fetch(`${server.baseURL}/detokenize`, { method: 'POST', body: JSON.stringify({ tokens: [403, 407, 261, 378] }) })).json();
  assert.equal(det.prompt, prompt);
  assert.equal((await fetch(`${server.baseURL}/health`)).status, 200);
  assert.equal((await fetch(`${server.baseURL}/ready`)).status, 200);
  assert.match((await (await fetch(`${server.baseURL}/version`)).json()).version, /^\d+\.\d+\.\d+$/);
});

test('a repeated prompt hits the prefix cache and yields the identical completion', async (t) => {
  if (skipOrFail(t)) return;
  const long = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day';
  const first = await client.completions.create({ model: 'stories260K', prompt: long, max_tokens: 40, temperature: 0 });
  const second = await client.completions.create({ model: 'stories260K', prompt: long, max_tokens: 40, temperature: 0 });
  assert.equal(second.choices[0].text, first.choices[0].text);
  const cached = second.usage.prompt_tokens_details?.cached_tokens ?? 0;
  assert.ok(cached >= 16, `expected cached prompt tokens, got ${cached} of ${second.usage.prompt_tokens}`);
  assert.equal(cached % 16, 0, 'whole KV blocks are reused');
});

test('chat templates see the request keys in the client order, as transformers does', async (t) => {
  if (skipOrFail(t)) return;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'orca-chat-template-'));
  const template = path.join(dir, 'key_order.jinja');
  writeFileSync(template, '{% for m in messages %}{{ m | tojson }}{% for k, v in m.items() %} {{ k }}{% endfor %};{% endfor %}');
  const s = await startServer(['--chat-template', template]);
  try {
    const post = async (route, body) =>
      (await fetch(`${s.baseURL}${route}`, { method: 'POST', body: JSON.stringify(body) })).json();
    const messages = [{ role: 'user', name: 'bob', content: 'hi' }, { content: 'yo', role: 'assistant' }];
    // What transformers' Jinja2 renders for these messages (json.loads keeps the order).
    const expected = '{"role": "user", "name": "bob", "content": "hi"} role name content;' +
      '{"content": "yo", "role": "assistant"} content role;';
    const chat = await post('/tokenize', { messages, add_generation_prompt: false });
    const plain = await post('/tokenize', { prompt: expected, add_special_tokens: false });
    assert.ok(plain.tokens.length > 0);
    assert.deepEqual(chat.tokens, plain.tokens);
  } finally {
    assert.equal(await s.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});
