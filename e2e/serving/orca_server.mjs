// Starts `orca serve` as a child process for end-to-end tests and stops it again.
// The binary comes from $ORCA_BIN; the server picks a free port (--port 0) and prints
// "orca: serving NAME on http://HOST:PORT", which is awaited (bounded). Also helpers for
// tests that run the roles of a serving group as processes (startProcess, freePort,
// waitFor) and read SSE streams (readSse).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const sourceDir = process.env.ORCA_SOURCE_DIR ?? path.resolve(import.meta.dirname, '../..');
export const storiesDir = path.resolve(sourceDir, 'models/stories260K');

// Returns a reason to skip when prerequisites are missing (an error under CI=true).
export function missingPrerequisite() {
  if (!process.env.ORCA_BIN || !existsSync(process.env.ORCA_BIN)) return 'ORCA_BIN is not set to the orca binary';
  if (!existsSync(path.join(storiesDir, 'config.json'))) return `${storiesDir} not found`;
  return null;
}

export function skipOrFail(t) {
  const why = missingPrerequisite();
  if (!why) return false;
  if (process.env.CI === 'true') throw new Error(`prerequisite missing in CI: ${why}`);
  t.skip(why);
  return true;
}

export async function startServer(extraArgs = [], { timeoutMs = 30000, env = {}, modelDir = storiesDir } = {}) {
  const args = ['serve', '--model', modelDir, '--served-model-name', 'stories260K', '--host', '127.0.0.1',
                '--port', '0', '--grpc-port', '0', ...extraArgs];
  const child = spawn(process.env.ORCA_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; if (stderr.length > 1e6) stderr = stderr.slice(-5e5); });
  const baseURL = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`orca serve did not start in ${timeoutMs} ms:\n${stderr}`)), timeoutMs);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/serving \S+ on (http:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`orca serve exited with ${code}:\n${stderr}`)); });
  });
  return {
    baseURL,
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      const exited = new Promise((r) => child.once('exit', (code, sig) => r(code ?? sig)));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

// Reads one metric sample value from a Prometheus exposition (first match).
export function metricValue(text, name, labelFilter = '') {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (!(rest.startsWith('{') || rest.startsWith(' '))) continue;
    if (labelFilter && !line.includes(labelFilter)) continue;
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return NaN;
}

// --- processes of a serving group (orca scheduler / orca worker), as pods would run ---

// Returns a TCP port free on 127.0.0.1 now.
// The kernel's range for the local ports of outgoing connections (and of listen(0)).
function ephemeralPorts() {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low > 0 && high >= low) return [low, high];
  } catch { /* not Linux: the IANA range */ }
  return [49152, 65535];
}

const handedOut = new Set();

// A TCP port free on every address, for a process started later to listen on; never one
// handed out before (by this process) or in `taken` (which it joins). Drawn at random
// from below the kernel's ephemeral range: a port listen(0) returns is one that any
// outgoing connection (a worker dialing its scheduler, a test's HTTP client) may take
// as its local port before the server binds it, which made servers fail to start
// ("cannot listen on 0.0.0.0:44943").
export async function freePort(taken = handedOut) {
  const [ephemeralLow] = ephemeralPorts();
  const low = Math.max(1024, ephemeralLow - 12000);
  for (let attempt = 0; ; ++attempt) {
    const port = attempt < 200 ? low + Math.floor(Math.random() * (ephemeralLow - low)) : 0;
    if (port !== 0 && (taken.has(port) || handedOut.has(port))) continue;
    const bound = await new Promise((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(null));
      srv.listen(port, '0.0.0.0', () => { const p = srv.address().port; srv.close(() => resolve(p)); });
    });
    if (bound === null) continue;
    taken.add(bound);
    handedOut.add(bound);
    return bound;
  }
}

// Starts `orca ARGS...` with stdout and stderr collected into log(). `exited` resolves
// with { code, signal, at } (at: performance.now() of the exit); exitedWithin(ms) with
// that, or null when the process still runs after `ms` (its timer cleared either way,
// so that it does not keep the test file's process alive).
export function startProcess(name, args, env = {}) {
  const child = spawn(process.env.ORCA_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let log = '';
  const keep = (d) => { log += d; if (log.length > 1e6) log = log.slice(-5e5); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal, at: performance.now() })));
  return {
    name, child, exited, log: () => log,
    running: () => child.exitCode === null && child.signalCode === null,
    async exitedWithin(ms) {
      let timer;
      const e = await Promise.race([exited, new Promise((r) => { timer = setTimeout(() => r(null), ms); })]);
      clearTimeout(timer);
      return e;
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// Polls `fn` every 200 ms until it returns true; throws with `logs()` after `timeoutMs`.
export async function waitFor(what, fn, timeoutMs, logs = () => '') {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try { if (await fn()) return; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} within ${timeoutMs} ms; logs:\n${logs()}`);
}

// Reads an SSE response to its end; resolves with its `data:` payloads and how it ended
// (`error`: the connection broke before the body's end). `onData` sees each payload.
export async function readSse(res, onData = () => {}) {
  const data = [];
  let buffer = '';
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk, { stream: true });
      let k;
      while ((k = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, k);
        buffer = buffer.slice(k + 2);
        if (frame.startsWith('data: ')) { data.push(frame.slice(6)); onData(frame.slice(6)); }
      }
    }
    return { data, error: null };
  } catch (e) {
    return { data, error: e };
  }
}
