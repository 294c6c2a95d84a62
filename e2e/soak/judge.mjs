// How the soak judges one answer. Every request ends in exactly one outcome:
//   ok         a complete, valid answer (every choice finished: stop or length);
//   retriable  HTTP 429 or 503 with Retry-After and an OpenAI error object, or a stream
//              that ends with an SSE error event of type service_unavailable_error;
//   rejected   the documented 4xx for a hostile request;
//   aborted    the client cancelled it (AbortController, a destroyed socket);
//   violation  anything else: no answer (reset, hang past the client timeout), a 5xx
//              other than 503, a 4xx for a valid request, a malformed or incomplete body.
// Besides the outcome, each judgement fills in what the server must have counted for
// the request (ledger.mjs): how many engine requests (choices) it reached the engine
// with, which finishes the client saw, and bounds on the tokens generated for it.

// The accounting part of an outcome, before anything is known: the request did not
// reach the engine and nothing was generated.
export function emptyAccount(choices, maxTokens) {
  return {
    choices,        // engine requests the server makes for it: n x prompts
    maxTokens,      // per choice
    reached: 'no',  // 'yes' | 'maybe' | 'no': whether its choices were submitted to the engine
    seen: { stop: 0, length: 0 },  // choices whose finish the client saw
    tokensLo: 0,    // tokens the server certainly generated for it
    tokensHi: 0,    // tokens it may have generated for it
    errorAtLeast: 0,   // 1: failed after admission, so at least one choice ended in error
    cancelledEarly: 0, // choices cancelled mid-stream well before their end (abort or error)
    partial: 0,     // choices submitted and then withdrawn (an n > 1 request refused with 429)
  };
}

// Classifies a non-200 answer. Returns { outcome, detail, account changes }.
export function judgeErrorAnswer(status, retryAfter, text, account) {
  let err;
  try {
    err = JSON.parse(text).error;
  } catch { /* judged below */ }
  const shape = err && typeof err.message === 'string' && typeof err.type === 'string';
  if (!shape) return { outcome: 'violation', detail: `HTTP ${status} without an OpenAI error object: ${text.slice(0, 300)}` };
  if (status === 429) {
    if (!retryAfter) return { outcome: 'violation', detail: `429 without Retry-After: ${err.message}` };
    if (err.type !== 'rate_limit_error') return { outcome: 'violation', detail: `429 of type ${err.type}` };
    // An n > 1 request may have had its first choices submitted before the queue filled;
    // they are aborted again (counted as abort).
    account.partial = account.choices - 1;
    account.tokensHi = account.partial * account.maxTokens;
    return { outcome: 'retriable', detail: '429' };
  }
  if (status === 503) {
    if (!retryAfter) return { outcome: 'violation', detail: `503 without Retry-After: ${err.message}` };
    if (err.type !== 'service_unavailable_error') return { outcome: 'violation', detail: `503 of type ${err.type}` };
    if (!/not ready|shutting down|too many open connections/.test(err.message)) {
      // Refused before admission otherwise; this one failed in the engine (the group broke,
      // or its queue deadline passed).
      account.reached = 'yes';
      account.errorAtLeast = 1;
      account.tokensHi = account.choices * account.maxTokens;
      return { outcome: 'retriable', detail: `503 after admission: ${err.message}` };
    }
    return { outcome: 'retriable', detail: `503 before admission: ${err.message}` };
  }
  return { outcome: 'violation', detail: `HTTP ${status} for a valid request: ${text.slice(0, 300)}` };
}

// Judges a 200 non-streamed completion or chat completion body.
export function judgeFull(text, { chat, n, maxTokens, ignoreEos }, account) {
  let j;
  try {
    j = JSON.parse(text);
  } catch {
    return { outcome: 'violation', detail: `200 with a body that is not JSON: ${text.slice(0, 300)}` };
  }
  const object = chat ? 'chat.completion' : 'text_completion';
  if (j.object !== object || typeof j.id !== 'string') return { outcome: 'violation', detail: `not a ${object}: ${text.slice(0, 300)}` };
  if (!Array.isArray(j.choices) || j.choices.length !== n) {
    return { outcome: 'violation', detail: `${j.choices?.length} choices for n=${n}` };
  }
  const seen = { stop: 0, length: 0 };
  for (let i = 0; i < n; i++) {
    const c = j.choices.find((x) => x.index === i);
    if (!c) return { outcome: 'violation', detail: `choice ${i} missing` };
    const content = chat ? c.message?.content : c.text;
    if (typeof content !== 'string') return { outcome: 'violation', detail: `choice ${i} has no text` };
    if (c.finish_reason !== 'stop' && c.finish_reason !== 'length') {
      return { outcome: 'violation', detail: `choice ${i} finished with ${c.finish_reason}` };
    }
    if (ignoreEos && c.finish_reason !== 'length') return { outcome: 'violation', detail: `ignore_eos choice ${i} finished with stop` };
    seen[c.finish_reason]++;
  }
  return judgeUsage(j.usage, seen, { n, maxTokens }, account);
}

// Checks `usage` against the finishes seen; fills in the account of a complete answer.
function judgeUsage(usage, seen, { n, maxTokens }, account) {
  if (!usage || !Number.isInteger(usage.completion_tokens) || !Number.isInteger(usage.prompt_tokens)) {
    return { outcome: 'violation', detail: `no usage: ${JSON.stringify(usage)}` };
  }
  if (usage.total_tokens !== usage.prompt_tokens + usage.completion_tokens) {
    return { outcome: 'violation', detail: `usage does not add up: ${JSON.stringify(usage)}` };
  }
  // Independent of the server's own count: a choice finished by length has exactly
  // max_tokens tokens, one finished by stop at most that many.
  const lo = seen.length * maxTokens;
  if (usage.completion_tokens < lo || usage.completion_tokens > n * maxTokens) {
    return { outcome: 'violation', detail: `completion_tokens ${usage.completion_tokens} outside [${lo}, ${n * maxTokens}] for ${JSON.stringify(seen)}` };
  }
  account.reached = 'yes';
  account.seen = seen;
  account.tokensLo = account.tokensHi = usage.completion_tokens;
  account.promptTokens = usage.prompt_tokens;
  return { outcome: 'ok' };
}

// Reads an SSE body (an async iterable of byte chunks) frame by frame; `onEvent(json)`
// sees each parsed `data:` payload but [DONE]. Resolves with { done, frames } or throws
// (a broken connection, an abort) with `.frames` set.
export async function readSse(body, onEvent) {
  const decoder = new TextDecoder();
  let buffer = '';
  let frames = 0;
  try {
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      let k;
      while ((k = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, k);
        buffer = buffer.slice(k + 2);
        if (!frame.startsWith('data: ')) throw Object.assign(new Error(`SSE frame without data: ${frame.slice(0, 200)}`), { malformed: true });
        frames++;
        const payload = frame.slice(6);
        if (payload === '[DONE]') return { done: true, frames, trailing: buffer };
        let j;
        try {
          j = JSON.parse(payload);
        } catch {
          throw Object.assign(new Error(`SSE data is not JSON: ${payload.slice(0, 200)}`), { malformed: true });
        }
        onEvent(j);
      }
    }
  } catch (e) {
    e.frames = frames;
    throw e;
  }
  return { done: false, frames };
}

// Follows a streamed completion or chat completion chunk by chunk (feed each parsed SSE
// payload to add()), then judges it with finish().
export class StreamJudge {
  constructor({ chat, n, maxTokens, ignoreEos, includeUsage }, account) {
    Object.assign(this, { chat, n, maxTokens, ignoreEos, includeUsage, account });
    this.finish = new Array(n).fill(null);
    this.contentChunks = new Array(n).fill(0);
    this.usage = null;
    this.error = null;
    this.malformed = null;
    this.firstTokenAt = null;
  }

  add(j) {
    if (this.error || this.malformed) {
      this.malformed ??= `data after the error event: ${JSON.stringify(j).slice(0, 200)}`;
      return;
    }
    if (j.error) {
      this.error = j.error;
      return;
    }
    const object = this.chat ? 'chat.completion.chunk' : 'text_completion';
    if (j.object !== object) {
      this.malformed = `chunk of object ${j.object}`;
      return;
    }
    if (j.usage) this.usage = j.usage;
    for (const c of j.choices ?? []) {
      if (!(c.index >= 0 && c.index < this.n)) {
        this.malformed = `chunk for choice ${c.index} of ${this.n}`;
        return;
      }
      if (this.finish[c.index] !== null) {
        this.malformed = `choice ${c.index} continues after its finish`;
        return;
      }
      const text = this.chat ? c.delta?.content : c.text;
      if (text) {
        this.contentChunks[c.index]++;
        this.firstTokenAt ??= performance.now();
      }
      if (c.finish_reason) this.finish[c.index] = c.finish_reason;
    }
  }

  // Choices that finished with stop or length.
  seen() {
    const seen = { stop: 0, length: 0 };
    for (const f of this.finish) if (f === 'stop' || f === 'length') seen[f]++;
    return seen;
  }

  // Judges a stream that ended (`done`: it carried [DONE]); `aborted`: the client cut it.
  judge(done, aborted) {
    const a = this.account;
    a.reached = 'yes';  // the headers came: every choice was submitted
    const seen = this.seen();
    a.seen = seen;
    const chunks = this.contentChunks.reduce((s, x) => s + x, 0);
    const unfinished = this.n - seen.stop - seen.length;
    a.tokensLo = chunks;  // a chunk with text carries at least one token
    a.tokensHi = seen.length * this.maxTokens + (this.n - seen.length) * this.maxTokens;
    if (this.malformed) return { outcome: 'violation', detail: `malformed stream: ${this.malformed}` };
    if (this.error) {
      if (this.error.type !== 'service_unavailable_error') {
        return { outcome: 'violation', detail: `SSE error event of type ${this.error.type}: ${this.error.message}` };
      }
      if (!done && !aborted) return { outcome: 'violation', detail: 'the stream broke after its error event without [DONE]' };
      a.errorAtLeast = 1;
      return { outcome: 'retriable', detail: `SSE error: ${this.error.message}` };
    }
    if (aborted) return { outcome: 'aborted' };
    if (!done) return { outcome: 'violation', detail: `the stream ended without [DONE] after ${chunks} content chunks` };
    if (unfinished > 0) return { outcome: 'violation', detail: `[DONE] with ${unfinished} unfinished choice(s)` };
    for (const f of this.finish) {
      if (f !== 'stop' && f !== 'length') return { outcome: 'violation', detail: `a choice finished with ${f}` };
      if (this.ignoreEos && f !== 'length') return { outcome: 'violation', detail: 'an ignore_eos choice finished with stop' };
    }
    if (!this.includeUsage) {
      a.tokensLo = Math.max(chunks, seen.length * this.maxTokens);
      return { outcome: 'ok' };
    }
    const r = judgeUsage(this.usage, seen, { n: this.n, maxTokens: this.maxTokens }, a);
    if (r.outcome === 'ok' && chunks > this.usage.completion_tokens) {
      return { outcome: 'violation', detail: `${chunks} content chunks but completion_tokens ${this.usage.completion_tokens}` };
    }
    return r;
  }
}
