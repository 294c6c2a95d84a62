// Starts `orca serve` as a child process for end-to-end tests and stops it again.
// The binary comes from $ORCA_BIN; the server picks a free port (--port 0) and prints
// "orca: serving NAME on http://HOST:PORT", which is awaited (bounded).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
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

export async function startServer(extraArgs = [], { timeoutMs = 30000, env = {} } = {}) {
  const args = ['serve', '--model', storiesDir, '--served-model-name', 'stories260K', '--host', '127.0.0.1',
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
