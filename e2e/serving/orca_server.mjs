// Starts `orca serve` as a child process for end-to-end tests and stops it again.
// The binary comes from $ORCA_BIN; the server picks a free port (--port 0) and prints
// "orca: serving NAME on http://HOST:PORT", which is awaited (bounded). Also helpers for
// tests that run the roles of a serving group as processes (startProcess, freePort,
// waitFor) and read SSE streams (readSse).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
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
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
    srv.on('error', reject);
  });
}

// Starts `orca ARGS...` with stdout and stderr collected into log(). `exited` resolves
// with { code, signal, at } (at: performance.now() of the exit).
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
