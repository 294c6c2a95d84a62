// SIGTERM while requests generate: `orca serve` stops admitting, lets the open requests
// run until its drain deadline (--shutdown-timeout), fails the rest retriably (HTTP 503 /
// an SSE error event of type service_unavailable_error) and exits 0 within the bound
// (e2e/serving/drain.test.mjs checks requests that do finish within the drain). It used to stop the HTTP server first, which waits for every handler,
// so it exited only once every open request had generated to its end (74 s in one
// probe; never, with a request that never finishes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readSse, startServer, skipOrFail } from './orca_server.mjs';

// Enough work that generating it to its end takes far longer than the drain: 4 x 128
// choices of 480 tokens, 2 sequences an iteration (on a 2-core AMD EPYC with packed
// weights, 64 choices at 4 an iteration finished within a 3 s drain).
const kRequests = 4;
const kExitBoundMs = 5000;

function body(extra) {
  return JSON.stringify({ prompt: 'Once upon a time', max_tokens: 480, ignore_eos: true, n: 128,
                          temperature: 0.8, ...extra });
}

test('SIGTERM fails open requests retriably and exits 0 within seconds', async (t) => {
  if (skipOrFail(t)) return;
  // The drain lets in-flight requests run for up to --shutdown-timeout (less the time kept
  // for closing); this work cannot finish in 1 s, so it ends in retriable errors.
  const server = await startServer(['--max-batch-size', '2', '--shutdown-timeout', '1']);
  try {
    const url = `${server.baseURL}/v1/completions`;
    const headers = { 'Content-Type': 'application/json' };
    const plain = Array.from({ length: kRequests }, (_, i) =>
      fetch(url, { method: 'POST', headers, body: body({ seed: i }) })
        .then(async (res) => ({ status: res.status, retryAfter: res.headers.get('retry-after'),
                                json: await res.json() }))
        .catch((error) => ({ error })));
    // The stream asks for as much work as the others: with one choice it could be admitted
    // first and generate its 480 tokens within the 1 s drain (it did once under ASan),
    // ending in finish_reason "length" instead of the error this test waits for.
    const streamed = await fetch(url, { method: 'POST', headers, body: body({ stream: true }) });
    assert.equal(streamed.status, 200);
    const streamDone = readSse(streamed);
    // Generation is under way once the queue shows the requests running.
    for (let k = 0; k < 100; k++) {
      const m = await (await fetch(`${server.baseURL}/metrics`)).text();
      if (/^orca_num_requests_running\S* [1-9]/m.test(m)) break;
      await new Promise((r) => setTimeout(r, 50));
    }

    const start = Date.now();
    const exited = new Promise((r) => server.child.once('exit', (code, signal) => r({ code, signal })));
    server.child.kill('SIGTERM');
    const bound = new Promise((r) => setTimeout(() => r(null), kExitBoundMs));
    const exit = await Promise.race([exited, bound]);
    assert.ok(exit !== null, `orca serve still ran ${kExitBoundMs} ms after SIGTERM`);
    assert.deepEqual(exit, { code: 0, signal: null }, server.stderr());
    const elapsed = Date.now() - start;

    // The non-streamed requests: a 503 with Retry-After and an OpenAI error object.
    for (const r of await Promise.all(plain)) {
      assert.equal(r.error, undefined, `a request failed without an answer: ${r.error}`);
      assert.equal(r.status, 503, JSON.stringify(r.json));
      assert.ok(r.retryAfter, 'a 503 without Retry-After');
      assert.equal(r.json.error.type, 'service_unavailable_error');
    }
    // The stream: tokens, then an error event of the same kind, then [DONE].
    const s = await streamDone;
    assert.equal(s.error, null, `the stream broke instead of ending: ${s.error}`);
    assert.ok(s.data.length >= 2, s.data.join('\n'));
    assert.equal(s.data.at(-1), '[DONE]');
    const last = JSON.parse(s.data.at(-2));
    assert.equal(last.error?.type, 'service_unavailable_error', s.data.at(-2));
    assert.ok(/shut down in/.test(server.stderr()), server.stderr());
    t.diagnostic(`exited ${elapsed} ms after SIGTERM`);
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  }
});
