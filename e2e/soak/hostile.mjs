// The hostile and malformed requests of the soak. Each case is answered at once with
// its documented 4xx status and an OpenAI error object, never with a hang, a reset or
// a 5xx. Cases marked `afterReady` are validated by the engine after the readiness
// check (context length, vocabulary, chat rendering): while the group re-forms they may
// be refused first with 503 "not ready" + Retry-After, which is retriable and correct.
import http from 'node:http';

const C = '/v1/completions';
const CH = '/v1/chat/completions';
const ok = { model: 'stories260K', prompt: 'Once upon a time', max_tokens: 4 };
const chatOk = { model: 'stories260K', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 };
const nested = (depth) => `{"prompt": "Once", "max_tokens": 1, "x": ${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;

// [name, path, body (object | string | Buffer | {chunked: bytes}), status, options]
export const hostileCases = [
  ['malformed JSON', C, '{"prompt": "x",', 400],
  ['JSON array body', C, '[1,2,3]', 400],
  ['empty body', C, '', 400],
  ['invalid UTF-8', C, Buffer.from('{"prompt":"\xff\xfe"}', 'latin1'), 400],
  ['prompt is a number', C, { ...ok, prompt: 42 }, 400],
  ['max_tokens is a string', C, { ...ok, max_tokens: '10' }, 400],
  ['max_tokens absurd', C, { ...ok, max_tokens: 1e12 }, 400],
  ['max_tokens huge (over the context)', C, { ...ok, max_tokens: 100000 }, 400, { afterReady: true }],
  ['prompt over the context', C, { ...ok, prompt: 'word '.repeat(2000) }, 400, { afterReady: true }],
  ['token id beyond the vocabulary', C, { ...ok, prompt: [1, 100000] }, 400, { afterReady: true }],
  ['temperature negative', C, { ...ok, temperature: -1 }, 400],
  ['stream is a string', C, { ...ok, stream: 'yes' }, 400],
  ['n huge', C, { ...ok, n: 100000 }, 400],
  ['unknown model', C, { ...ok, model: 'gpt-9' }, 404],
  ['chat: unknown role', CH, { ...chatOk, messages: [{ role: 'wizard', content: 'x' }] }, 400],
  ['chat: content is a number', CH, { ...chatOk, messages: [{ role: 'user', content: 5 }] }, 400],
  ['deep nesting (30000 levels, within the body limit)', C, nested(30000), 400, { match: /128 levels/ }],
  ['body over the limit (Content-Length)', C, 'LIMIT+1', 413],
  ['chunked body over the limit', C, { chunked: 4 }, 413],
  ['no API key', C, ok, 401, { noAuth: true }],
  ['wrong API key', C, ok, 401, { auth: 'Bearer sk-wrong' }],
  ['unknown path', '/v1/engines', ok, 404],
];

function drainedOrClosed(req) {
  return new Promise((resolve) => {
    const done = () => { req.off('drain', done); req.off('close', done); resolve(); };
    req.on('drain', done);
    req.on('close', done);
  });
}

// POSTs a chunked body of `total` bytes, 16 KB at a time, and stops writing once an
// answer arrives. Resolves with { status, headers, text } or { error } (no answer).
function postChunked(url, headers, total, signal) {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', signal, headers: {
      ...headers, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } });
    let answered = false;
    req.on('response', async (res) => {
      answered = true;
      let text = '';
      try {
        for await (const d of res) text += d;
      } catch (error) {
        resolve({ error });
        return;
      }
      resolve({ status: res.statusCode, headers: res.headers, text });
      req.destroy();
    });
    req.on('error', (error) => { if (!answered) resolve({ error }); });
    (async () => {
      let sent = 0;
      const filler = Buffer.alloc(16 << 10, 'a');
      req.write('{"max_tokens": 1, "prompt": "');
      while (!answered && !req.destroyed && sent < total) {
        if (!req.write(filler)) await drainedOrClosed(req);
        sent += filler.length;
      }
      if (!answered && !req.destroyed) req.end('"}');
    })().catch(() => {});
  });
}

// Sends hostile case `c` to the server; resolves with { status, retryAfter, text } or
// { error } when no answer came (a reset, a timeout through `signal`).
export async function sendHostile(c, { baseURL, apiKey, maxBodyBytes, signal }) {
  const [, path, body, , opts = {}] = c;
  const headers = { 'Content-Type': 'application/json' };
  if (!opts.noAuth) headers.Authorization = opts.auth ?? `Bearer ${apiKey}`;
  if (body && typeof body === 'object' && 'chunked' in body) {
    const r = await postChunked(new URL(path, baseURL), headers, body.chunked * maxBodyBytes, signal);
    return r.error ? r : { status: r.status, retryAfter: r.headers['retry-after'] ?? null, text: r.text };
  }
  let payload = Buffer.isBuffer(body) || typeof body === 'string' ? body : JSON.stringify(body);
  if (payload === 'LIMIT+1') payload = JSON.stringify({ ...ok, prompt: 'x'.repeat(maxBodyBytes + 1) });
  try {
    const res = await fetch(`${baseURL}${path}`, { method: 'POST', headers, body: payload, signal });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), text: await res.text() };
  } catch (error) {
    return { error };
  }
}

// Returns null when `r` is a correct answer to hostile case `c`, else why it is not.
export function judgeHostile(c, r) {
  const [name, , , status, opts = {}] = c;
  if (r.error) return `${name}: no answer (${r.error.cause?.code ?? r.error.name}: ${r.error.message})`;
  let err;
  try {
    err = JSON.parse(r.text).error;
  } catch {
    return `${name}: ${r.status} with a body that is not JSON: ${r.text.slice(0, 200)}`;
  }
  if (typeof err?.message !== 'string' || typeof err.type !== 'string' || !('param' in err) || !('code' in err)) {
    return `${name}: ${r.status} without an OpenAI error object: ${r.text.slice(0, 200)}`;
  }
  if (opts.afterReady && r.status === 503 && r.retryAfter && /not ready/.test(err.message)) return null;
  if (r.status !== status) return `${name}: expected ${status}, got ${r.status}: ${r.text.slice(0, 300)}`;
  if (opts.match && !opts.match.test(err.message)) return `${name}: message does not match ${opts.match}: ${err.message}`;
  return null;
}
