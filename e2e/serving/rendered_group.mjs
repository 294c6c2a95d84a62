// The pods orca-controller renders for one group of an InferenceDeployment, run here as
// processes of $ORCA_BIN on loopback (group.test.mjs on the CPU, cuda_twin_group.test.mjs
// on the CUDA twin): the scheduler Deployment's command and each worker StatefulSet
// pod's, with engine.yaml from the rendered ConfigMap. What Kubernetes would do is done
// by hand: $(VAR) expanded from the container's env, the config and the model mounted
// (paths rewritten), ports moved to free ones (the processes share one network
// namespace; flags override engine.yaml).
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, sourceDir, storiesDir } from './orca_server.mjs';

// Starts $ORCA_BIN with `args`; its stdout and stderr are kept for log().
export function startProcess(name, args, env) {
  const child = spawn(process.env.ORCA_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let log = '';
  const keep = (d) => { log += d; if (log.length > 1e6) log = log.slice(-5e5); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  return {
    name, child, log: () => log,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// Polls `fn` every 200 ms until it returns true; throws with `logs()` after `timeoutMs`.
export async function waitFor(what, fn, timeoutMs, logs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try { if (await fn()) return; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} within ${timeoutMs} ms; logs:\n${logs()}`);
}

export const readyStatus = async (url) => (await fetch(`${url}/ready`)).status;

// Returns $ORCA_CONTROLLER_BIN, the orca-controller that renders the pods; without it,
// skips test `t` (returns null), or throws in CI, where ctest always sets it.
export function controllerOrSkip(t) {
  const controller = process.env.ORCA_CONTROLLER_BIN;
  if (controller && existsSync(controller)) return controller;
  if (process.env.CI === 'true') throw new Error('ORCA_CONTROLLER_BIN is not set in CI');
  t.skip('ORCA_CONTROLLER_BIN is not set to the orca-controller binary');
  return null;
}

// Renders e2e/k8s/inferencedeployment.yaml (a 2-stage pipeline) for `device` ('cpu' or
// 'gpu') with `tensor` ranks per stage (and `pipelineLayers`, the layers of each stage,
// when given), and starts its scheduler and worker pods.
// `workerEnv(name)` adds environment to the worker pod `name` (e.g. 'demo-g0-s1-0').
// Returns { url, procs, workers, logs, stop }: procs[0] is the scheduler; each worker is
// { name, args, env } so a test can start it again; stop() ends them as the controller
// does (the scheduler first) and removes the temporary files.
export async function startRenderedGroup({ controller, device = 'cpu', tensor = 1, pipelineLayers, workerEnv = () => ({}) }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'orca-group-'));
  const cr = readFileSync(path.join(sourceDir, 'e2e/k8s/inferencedeployment.yaml'), 'utf8')
    .replaceAll('@NAME@', 'demo').replaceAll('@NAMESPACE@', 'default').replaceAll('@IMAGE@', 'orca:dev')
    .replaceAll('@MODEL_NAME@', 'stories260K').replaceAll('@MODEL_URI@', 'hostpath:///models/stories260K')
    .replaceAll('@DEVICE@', device).replaceAll('@INGRESS_CLASS@', 'nginx').replaceAll('@HOST@', 'orca.local')
    .replace('tensor: 1', `tensor: ${tensor}`)
    .replace('pipeline: 2', pipelineLayers ? `pipeline: 2\n    pipelineLayers: [${pipelineLayers}]` : 'pipeline: 2');
  writeFileSync(path.join(dir, 'cr.yaml'), cr);
  const objects = JSON.parse(execFileSync(controller, ['render', '-f', path.join(dir, 'cr.yaml'), '-o', 'json']));
  const items = Array.isArray(objects) ? objects : objects.items;
  const configMap = items.find((o) => o.kind === 'ConfigMap');
  // The model is mounted at /models in the pods; here it is the shipped checkpoint.
  writeFileSync(path.join(dir, 'engine.yaml'),
    configMap.data['engine.yaml'].replace('dir: "/models"', `dir: ${JSON.stringify(storiesDir)}`));
  const [httpPort, controlPort] = [await freePort(), await freePort()];
  const rewrite = (argv, vars) => argv.slice(1).map((a) => a
    .replace(/\$\((\w+)\)/g, (_, v) => vars[v])
    .replace('/etc/orca/engine.yaml', path.join(dir, 'engine.yaml')));
  const procs = [];
  const workers = [];
  const logs = () => procs.map((p) => `--- ${p.name}\n${p.log().slice(-3000)}`).join('\n');
  const stop = async () => {
    // As the controller does: the scheduler first (it drains and ends the group), then
    // the workers, which on SIGTERM wait for the scheduler to end their group.
    if (procs.length) await procs[0].stop();
    await Promise.all(procs.slice(1).map((p) => p.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const sched = items.find((o) => o.kind === 'Deployment');
    const schedArgs = [...rewrite(sched.spec.template.spec.containers[0].command, {}),
      '--port', String(httpPort), '--control-port', String(controlPort), '--grpc-port', '0'];
    procs.push(startProcess('scheduler', schedArgs, {}));
    for (const sts of items.filter((o) => o.kind === 'StatefulSet')) {
      const containerEnv = Object.fromEntries(sts.spec.template.spec.containers[0].env.filter((e) => 'value' in e)
        .map((e) => [e.name, e.value]));
      for (let ordinal = 0; ordinal < sts.spec.replicas; ordinal++) {
        const vars = { ...containerEnv, ORCA_SCHEDULER_ADDR: `127.0.0.1:${controlPort}`, ORCA_POD_ORDINAL: String(ordinal) };
        const args = [...rewrite(sts.spec.template.spec.containers[0].command, vars),
          '--metrics-port', String(await freePort()), '--threads', '1'];
        const name = `${sts.metadata.name}-${ordinal}`;
        const env = { ORCA_POD_IP: '127.0.0.1', ...workerEnv(name) };
        workers.push({ name, args, env });
        procs.push(startProcess(name, args, env));
      }
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { url: `http://127.0.0.1:${httpPort}`, procs, workers, logs, stop };
}
