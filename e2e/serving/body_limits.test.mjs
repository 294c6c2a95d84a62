// Request-body limits hold whatever the transfer encoding: a chunked body over
// --max-body-bytes is answered 413 while it is still being sent (cpp-httplib 0.11.4
// checks only Content-Length: a 210 MB chunked body was read, parsed and tokenized, at
// 7.9 GB peak RSS), and JSON nested deeper than 128 levels is a 400 naming the limit
// (1.3M levels were accepted, at about 0.6 GB).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startServer, skipOrFail, missingPrerequisite } from './orca_server.mjs';

const kLimit = 1 << 20;
const kOffered = 64 << 20;  // what the client would send if nobody stopped it

let server;
before(async () => {
  if (missingPrerequisite()) return;
  server = await startServer(['--max-body-bytes', String(kLimit)]);
});
after(async () => { if (server) assert.equal(await server.stop(), 0); });

function drainedOrClosed(req) {
  return new Promise((resolve) => {
    const done = () => { req.off('drain', done); req.off('close', done); resolve(); };
    req.on('drain', done);
    req.on('close', done);
  });
}

// POSTs a chunked body of up to `total` bytes, written 64 KB at a time, and stops writing
// as soon as a response arrives. Resolves with the status, the answer and the bytes sent.
function postChunked(path, total) {
  return new Promise((resolve) => {
    const url = new URL(path, server.baseURL);
    const req = http.request(url, { method: 'POST', headers: {
      'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } });
    let sent = 0;
    let answered = false;
    req.on('response', async (res) => {
      answered = true;
      let text = '';
      for await (const d of res) text += d;
      resolve({ status: res.statusCode, text, sent });
      req.destroy();
    });
    req.on('error', (error) => { if (!answered) resolve({ error, sent }); });
    (async () => {
      const head = Buffer.from('{"max_tokens": 1, "prompt": "');
      const filler = Buffer.alloc(64 << 10, 'a');
      req.write(head);
      sent += head.length;
      while (!answered && !req.destroyed && sent < total) {
        const piece = filler.subarray(0, Math.min(filler.length, total - sent));
        if (!req.write(piece)) await drainedOrClosed(req);
        sent += piece.length;
      }
      if (!answered && !req.destroyed) req.end('"}');
    })().catch(() => {});
  });
}

test('a chunked body over --max-body-bytes is refused with 413 before it is sent whole', async (t) => {
  if (skipOrFail(t)) return;
  const r = await postChunked('/v1/completions', kOffered);
  assert.equal(r.error, undefined, `no answer, the connection failed (${r.error}) after ${r.sent} bytes`);
  assert.equal(r.status, 413, r.text);
  // How much the client got to send before it read the answer is a race on loopback (the
  // server drops what arrives after its 413); the old server answered 400 after parsing
  // and tokenizing the whole body, so the status is the regression check.
  const e = JSON.parse(r.text).error;
  assert.match(e.message, new RegExp(String(kLimit)));
  t.diagnostic(`413 after ${r.sent} bytes sent (limit ${kLimit})`);

  // The server goes on serving, chunked bodies within the limit included.
  const ok = await postChunked('/v1/completions', 200);
  assert.equal(ok.status, 200, ok.text);
  const plain = await fetch(`${server.baseURL}/v1/completions`, { method: 'POST',
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 8, temperature: 0 }) });
  assert.equal((await plain.json()).choices[0].text, ', there was a little girl');
});

test('a Content-Length over --max-body-bytes is refused with 413', async (t) => {
  if (skipOrFail(t)) return;
  const res = await fetch(`${server.baseURL}/v1/completions`, { method: 'POST',
    body: JSON.stringify({ prompt: 'a'.repeat(kLimit + 1), max_tokens: 1 }) });
  assert.equal(res.status, 413);
  assert.equal((await res.json()).error.type, 'invalid_request_error');
});

test('JSON nested deeper than 128 levels is a 400 naming the limit', async (t) => {
  if (skipOrFail(t)) return;
  const nested = (depth) => `{"prompt": "Once", "max_tokens": 1, "x": ${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
  for (const path of ['/v1/completions', '/v1/chat/completions', '/tokenize']) {
    const res = await fetch(`${server.baseURL}${path}`, { method: 'POST', body: nested(400000) });
    assert.equal(res.status, 400, path);
    const e = (await res.json()).error;
    assert.match(e.message, /128 levels/, path);
    assert.equal(e.type, 'invalid_request_error');
  }
  const within = await fetch(`${server.baseURL}/v1/completions`, { method: 'POST', body: nested(128) });
  assert.equal(within.status, 200);
});
