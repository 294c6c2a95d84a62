// Starts the soak's `orca serve --tensor-parallel 2` (stories260K) with limits small
// enough that the soak reaches them: 8 sequences per iteration and 64 KV blocks of 16
// tokens per rank (two full 512-token contexts), so running requests are preempted;
// 16 waiting requests before 429; a 3 s rank deadline, so a stopped worker is found
// quickly; a 30 s queue deadline (503 rather than an endless wait while the group is
// down); an API key; 64 KiB bodies. Its stderr goes to `logPath`.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const kServeLimits = {
  maxBatchSize: 8, numKvBlocks: 64, blockSize: 16, maxWaiting: 16, rankDeadlineS: 3, queueTimeoutS: 30,
  maxBodyBytes: 65536,
};

// Returns the model directory: models/stories260K in the checkout, else the shared copy.
export function findModel(sourceDir) {
  for (const dir of [path.join(sourceDir, 'models/stories260K'), '/work/shared/models/stories260K']) {
    if (existsSync(path.join(dir, 'config.json'))) return dir;
  }
  return null;
}

// Starts the server; resolves with { baseURL, pid, child, apiKey, stop(), tail() } once
// it listens and its group is ready (bounded by `timeoutMs`).
export async function startServe({ bin, model, outDir, apiKey, limits = kServeLimits, timeoutMs = 120000 }) {
  const keyFile = path.join(outDir, 'api-key');
  writeFileSync(keyFile, `${apiKey}\n`, { mode: 0o600 });
  const args = ['serve', '--model', model, '--served-model-name', 'stories260K', '--host', '127.0.0.1',
    '--port', '0', '--grpc-port', '-1', '--tensor-parallel', '2', '--threads', '2',
    '--max-batch-size', String(limits.maxBatchSize), '--num-kv-blocks', String(limits.numKvBlocks),
    '--block-size', String(limits.blockSize), '--max-waiting-requests', String(limits.maxWaiting),
    '--rank-deadline', String(limits.rankDeadlineS), '--queue-timeout', String(limits.queueTimeoutS),
    '--api-key-file', keyFile, '--max-body-bytes', String(limits.maxBodyBytes), '--shutdown-timeout', '10'];
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(path.join(outDir, 'server.log'));
  let tail = '';
  const keep = (d) => { log.write(d); tail = (tail + d).slice(-20000); };
  child.stderr.on('data', keep);
  const exited = new Promise((r) => child.once('exit', (code, signal) => r(code ?? signal)));
  const baseURL = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`orca serve did not start in ${timeoutMs} ms:\n${tail}`)), timeoutMs);
    let out = '';
    child.stdout.on('data', (d) => {
      keep(d);
      out += d;
      const m = out.match(/serving \S+ on (http:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    exited.then((code) => { clearTimeout(timer); reject(new Error(`orca serve exited with ${code}:\n${tail}`)); });
  });
  const killOnExit = () => { try { child.kill('SIGKILL'); } catch { /* gone */ } };
  process.on('exit', killOnExit);
  return {
    baseURL, pid: child.pid, child, apiKey, args,
    tail: () => tail,
    // SIGTERM (a drain), SIGKILL after `graceMs`; resolves with the exit code or signal.
    async stop(graceMs = 20000) {
      process.off('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(t);
      await new Promise((r) => log.end(r));
      return code;
    },
  };
}
