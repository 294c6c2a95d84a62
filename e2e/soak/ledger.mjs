// The soak's books: every outcome record the clients produced, the per-second time
// series, and the comparison of the server's counters with what the clients saw.
//
// The server counts per choice (an n = 2 request is two engine requests), by finish
// reason: orca_request_success_total{finished_reason=stop|length|abort|error}, and the
// tokens it generated (orca_generation_tokens_total). Under faults a client cannot know
// every count exactly (a cancelled request may finish before the server sees the
// cancel; an n = 2 request's first choice may finish before the group breaks), so the
// whole run is checked against bounds that are exact where the client knows:
//   total     sum of the four reasons lies in [choices that certainly reached the engine,
//             that + choices that may have (cancelled before an answer) + choices
//             withdrawn by a 429];
//   stop, length   each >= the finishes the clients saw with that reason, and their sum
//             <= those + the choices whose end no client saw;
//   error     >= the requests that failed retriably after admission (one errored choice
//             each at least), <= the choices whose end no client saw;
//   abort     <= the choices whose end no client saw + the withdrawn ones;
//   abort + error >= the streams cancelled with >= 100 tokens to go (none may count as
//             finished);
//   tokens    in [tokens the clients received, that + max_tokens of every choice whose
//             end no client saw].
// The quiet phase after the faults (soak.mjs) checks the same counters exactly.

export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const kOutcomes = ['ok', 'retriable', 'rejected', 'aborted', 'violation'];

export class Ledger {
  constructor() {
    this.records = [];
  }

  add(records) {
    for (const r of records) this.records.push(r);
  }

  // Counts by outcome, and by kind and outcome.
  counts() {
    const total = Object.fromEntries(kOutcomes.map((o) => [o, 0]));
    const byKind = {};
    for (const r of this.records) {
      total[r.outcome]++;
      byKind[r.kind] ??= Object.fromEntries(kOutcomes.map((o) => [o, 0]));
      byKind[r.kind][r.outcome]++;
    }
    return { total, byKind, requests: this.records.length };
  }

  violations() {
    return this.records.filter((r) => r.outcome === 'violation');
  }

  // Sums the accounts of `records` (default: all) for the counter checks.
  sums(records = this.records) {
    const s = { reachedChoices: 0, maybeChoices: 0, partialChoices: 0, seenStop: 0, seenLength: 0, unseenChoices: 0,
                errorAtLeast: 0, cancelledEarly: 0, tokensLo: 0, tokensHi: 0, promptTokens: 0 };
    for (const { account: a } of records) {
      if (!a) continue;
      if (a.reached === 'yes') s.reachedChoices += a.choices;
      if (a.reached === 'maybe') s.maybeChoices += a.choices;
      s.partialChoices += a.partial;
      s.seenStop += a.seen.stop;
      s.seenLength += a.seen.length;
      if (a.reached !== 'no') s.unseenChoices += a.choices - a.seen.stop - a.seen.length;
      s.errorAtLeast += a.errorAtLeast;
      s.cancelledEarly += a.cancelledEarly;
      s.tokensLo += a.tokensLo;
      s.tokensHi += a.tokensHi;
      // usage.prompt_tokens counts each prompt once; the server counts it per choice.
      if (a.promptTokens !== undefined) s.promptTokens += a.promptTokens * a.choices;
    }
    return s;
  }

  // The time series: one row per second of the run (`seconds`), with what ended in it.
  series(seconds, samples, faults) {
    const rows = [];
    const cumulative = Object.fromEntries(kOutcomes.map((o) => [o, 0]));
    const bySecond = new Map();
    for (const r of this.records) {
      const k = Math.floor(r.end / 1000);
      if (!bySecond.has(k)) bySecond.set(k, []);
      bySecond.get(k).push(r);
    }
    let sample = null;
    let next = 0;
    for (let t = 0; t < seconds; t++) {
      const ended = bySecond.get(t) ?? [];
      const done = Object.fromEntries(kOutcomes.map((o) => [o, 0]));
      for (const r of ended) done[r.outcome]++;
      for (const o of kOutcomes) cumulative[o] += done[o];
      const lat = ended.filter((r) => r.outcome === 'ok' && r.latencyMs !== undefined).map((r) => r.latencyMs).sort((a, b) => a - b);
      const ttft = ended.filter((r) => r.outcome === 'ok' && r.ttftMs !== undefined).map((r) => r.ttftMs).sort((a, b) => a - b);
      // The last sample taken before the end of this second (the sampler drifts a little).
      while (next < samples.length && samples[next].t < (t + 1) * 1000) sample = samples[next++];
      rows.push({
        t,
        rss_mib: sample?.rss ?? null,
        server: sample?.server ?? null,
        load1: sample?.load1 ?? null,
        done,
        cumulative: { ...cumulative },
        latency_ms: { p50: percentile(lat, 50), p99: percentile(lat, 99), n: lat.length },
        ttft_ms: { p50: percentile(ttft, 50), p99: percentile(ttft, 99), n: ttft.length },
        faults: faults.filter((f) => Math.floor(f.t / 1000) === t).map((f) => ({ kind: f.kind, rank: f.rank, pid: f.pid })),
      });
    }
    return rows;
  }
}

// Compares the server's counter growth `d` (stop, length, abort, error,
// generationTokens) with the clients' sums `s` over the faulty run (bounds, as above).
// Returns [{ name, ok, detail }].
export function boundedCounterChecks(s, d) {
  const checks = [];
  const check = (name, ok, detail) => checks.push({ name, ok, detail });
  const total = d.stop + d.length + d.abort + d.error;
  const lo = s.reachedChoices;
  const hi = s.reachedChoices + s.maybeChoices + s.partialChoices;
  check('finished requests (stop+length+abort+error) within what clients sent', total >= lo && total <= hi,
        `server ${total}, clients: ${lo} certainly reached the engine, ${hi} at most`);
  check('finished by stop >= stops clients saw', d.stop >= s.seenStop, `server ${d.stop}, clients saw ${s.seenStop}`);
  check('finished by length >= lengths clients saw', d.length >= s.seenLength, `server ${d.length}, clients saw ${s.seenLength}`);
  check('stop+length <= seen + choices whose end no client saw',
        d.stop + d.length <= s.seenStop + s.seenLength + s.unseenChoices,
        `server ${d.stop + d.length}, clients saw ${s.seenStop + s.seenLength} + ${s.unseenChoices} unseen`);
  check('error >= requests failed retriably after admission', d.error >= s.errorAtLeast,
        `server ${d.error}, clients got ${s.errorAtLeast} such failures`);
  check('error <= choices whose end no client saw', d.error <= s.unseenChoices, `server ${d.error}, ${s.unseenChoices} unseen`);
  check('abort <= unseen + withdrawn choices', d.abort <= s.unseenChoices + s.partialChoices,
        `server ${d.abort}, ${s.unseenChoices} unseen + ${s.partialChoices} withdrawn`);
  check('abort+error >= streams cancelled with >= 100 tokens to go', d.abort + d.error >= s.cancelledEarly,
        `server ${d.abort + d.error}, clients cancelled ${s.cancelledEarly}`);
  check('generated tokens within what clients received and could have been sent',
        d.generationTokens >= s.tokensLo && d.generationTokens <= s.tokensHi,
        `server ${d.generationTokens}, clients received >= ${s.tokensLo}, at most ${s.tokensHi}`);
  return checks;
}

// The quiet phase: every request completed, so every count is known exactly.
export function exactCounterChecks(s, d) {
  const checks = [];
  const check = (name, server, clients) => checks.push({ name, ok: server === clients, detail: `server ${server}, clients ${clients}` });
  check('quiet phase: finished by stop', d.stop, s.seenStop);
  check('quiet phase: finished by length', d.length, s.seenLength);
  check('quiet phase: aborted', d.abort, 0);
  check('quiet phase: failed', d.error, 0);
  check('quiet phase: generated tokens', d.generationTokens, s.tokensLo);
  check('quiet phase: prompt tokens (per choice)', d.promptTokens, s.promptTokens);
  return checks;
}
