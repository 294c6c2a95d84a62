// What the soak reads from outside the server's API: the Prometheus text exposition of
// /metrics (a parser of the 0.0.4 text format: HELP/TYPE lines, escaped label values,
// NaN/±Inf, optional timestamps), and the processes of `orca serve` from /proc (its
// worker children, their ranks and states, and VmRSS).
import { readFileSync, readdirSync } from 'node:fs';

// --- Prometheus text exposition ------------------------------------------------------

const kNameRe = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

function parseValue(text, line) {
  if (text === 'NaN') return NaN;
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  const v = Number(text);
  if (text === '' || Number.isNaN(v)) throw new Error(`metrics: bad sample value '${text}' in: ${line}`);
  return v;
}

// Parses `{a="x",b="y\"z"}` starting at text[i] === '{'; returns [labels, index after '}'].
function parseLabels(text, i, line) {
  const labels = {};
  i++;  // '{'
  for (;;) {
    while (text[i] === ' ' || text[i] === ',') i++;
    if (text[i] === '}') return [labels, i + 1];
    const m = kNameRe.exec(text.slice(i));
    if (!m) throw new Error(`metrics: bad label name at ${i} in: ${line}`);
    const name = m[0];
    i += name.length;
    while (text[i] === ' ') i++;
    if (text[i] !== '=' || text[i + 1] !== '"') throw new Error(`metrics: expected ="..." after ${name} in: ${line}`);
    i += 2;
    let value = '';
    for (;;) {
      const c = text[i];
      if (c === undefined) throw new Error(`metrics: unterminated label value in: ${line}`);
      if (c === '"') { i++; break; }
      if (c === '\\') {
        const e = text[i + 1];
        value += e === 'n' ? '\n' : e;  // \\ -> \, \" -> ", \n -> newline
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    if (name in labels) throw new Error(`metrics: label ${name} repeated in: ${line}`);
    labels[name] = value;
  }
}

// Parses a text exposition into { samples: [{name, labels, value}], types: {family: type} }.
// Throws with the offending line on anything malformed.
export function parseExposition(text) {
  const samples = [];
  const types = {};
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^#\s+(HELP|TYPE)\s+([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\s+(.*))?$/.exec(line);
      if (m && m[1] === 'TYPE') types[m[2]] = m[3];
      continue;  // other comments are allowed
    }
    const m = kNameRe.exec(line);
    if (!m) throw new Error(`metrics: bad sample line: ${line}`);
    const name = m[0];
    let i = name.length;
    let labels = {};
    if (line[i] === '{') [labels, i] = parseLabels(line, i, line);
    const rest = line.slice(i).trim().split(/\s+/);
    if (rest.length < 1 || rest.length > 2) throw new Error(`metrics: bad sample line: ${line}`);
    samples.push({ name, labels, value: parseValue(rest[0], line) });
  }
  return { samples, types };
}

// Returns the value of the one sample named `name` whose labels include `labels`;
// undefined when there is none. Throws when several match (an ambiguous question).
export function sampleValue(parsed, name, labels = {}) {
  const hits = parsed.samples.filter((s) => s.name === name &&
    Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hits.length > 1) throw new Error(`metrics: ${hits.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return hits[0]?.value;
}

// Scrapes `${baseURL}/metrics` and parses it; resolves with { text, parsed }.
export async function scrape(baseURL, timeoutMs = 5000) {
  const res = await fetch(`${baseURL}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${text.slice(0, 200)}`);
  return { text, parsed: parseExposition(text) };
}

// The counters and gauges the soak compares with what its clients saw.
export function serverCounters(parsed) {
  const v = (name, labels) => sampleValue(parsed, name, labels);
  const reason = (r) => v('orca_request_success_total', { finished_reason: r });
  return {
    stop: reason('stop'), length: reason('length'), abort: reason('abort'), error: reason('error'),
    generationTokens: v('orca_generation_tokens_total'),
    promptTokens: v('orca_prompt_tokens_total'),
    preemptions: v('orca_num_preemptions_total'),
    running: v('orca_num_requests_running'),
    waiting: v('orca_num_requests_waiting'),
    kvUsage: v('orca_kv_cache_usage_perc'),
    ready: v('orca_group_ready'),
    breaks: v('orca_group_breaks_total'),
    generation: v('orca_group_generation'),
  };
}

// --- processes -------------------------------------------------------------------------

// Returns { ppid, state } of `pid` from /proc/PID/stat, or null when it is gone.
export function procStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], ppid: Number(fields[1]) };
  } catch {
    return null;
  }
}

// Returns VmRSS of `pid` in MiB, or null when it is gone.
export function rssMiB(pid) {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

// Returns the worker processes of `orca serve` (pid `parent`): [{pid, rank, state}],
// rank "s<stage>t<tp>" read from the worker's command line (--stage, --tp-rank).
export function workersOf(parent) {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = procStat(name);
    if (!st || st.ppid !== parent) continue;
    let argv;
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (argv[1] !== 'worker') continue;
    const flag = (f, dflt) => {
      const a = argv.find((x) => x.startsWith(`--${f}=`));
      return a ? Number(a.slice(f.length + 3)) : dflt;
    };
    out.push({ pid: Number(name), rank: `s${flag('stage', 0)}t${flag('tp-rank', 0)}`, state: st.state });
  }
  return out.sort((a, b) => a.rank.localeCompare(b.rank));
}
