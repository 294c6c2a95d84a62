// The container e2e of docs/images.md: a PP=2, device cpu InferenceDeployment rendered by
// the controller image, its scheduler and worker pods run as containers of the orca
// image with their rendered commands, env, config and probes, on the host network
// (loopback only); a completion through the scheduler; SIGTERM and exit codes; then the
// controller image answers its health probe.
//
//   node e2e/containers/group_test.mjs
//
// Settings (environment):
//   ORCA_IMAGE             serving image (orca-local/orca:0.1.0-cpu)
//   ORCA_CONTROLLER_IMAGE  controller image (orca-local/orca-controller:0.1.0)
//   ORCA_E2E_TIMEOUT       seconds for the group to become ready (300)
//   ORCA_E2E_KEEP=1        leave the containers and the work directory for debugging
// Needs a Docker engine (docker/dockerd.sh start), curl, and the images
// (scripts/test-images.sh builds them). Exit status 0 when every check passed.

import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { assignPorts, envOf, expand, freePort, hostPort, limitsOf, mountsOf, podsOf } from './pods.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const IMAGE = process.env.ORCA_IMAGE ?? 'orca-local/orca:0.1.0-cpu';
const CONTROLLER_IMAGE = process.env.ORCA_CONTROLLER_IMAGE ?? 'orca-local/orca-controller:0.1.0';
const TIMEOUT_S = Number(process.env.ORCA_E2E_TIMEOUT ?? 300);
const KEEP = process.env.ORCA_E2E_KEEP === '1';
const PREFIX = 'orca-e2e-';  // container names
const PROMPT = 'Once upon a time';
const MAX_TOKENS = 24;

const t0 = Date.now();
let stepStart = Date.now();
const secs = (ms) => (ms / 1000).toFixed(1);
const log = (msg) => console.log(`[containers] ${msg}`);
function step(name) {
  stepStart = Date.now();
  log(`--- ${name}`);
}
function done(what) {
  log(`ok: ${what} (${secs(Date.now() - stepStart)} s; ${secs(Date.now() - t0)} s in all)`);
}
class Failure extends Error {}
const fail = (msg) => { throw new Failure(msg); };

function docker(args, { input, allowFail = false } = {}) {
  const r = spawnSync('docker', args, { input, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0 && !allowFail) {
    fail(`docker ${args.join(' ')} exited ${r.status}:\n${(r.stderr || r.stdout).slice(-3000)}`);
  }
  return r;
}
const inspect = (name, format) => docker(['inspect', '--format', format, name], { allowFail: true }).stdout.trim();
const containerLogs = (name) => {
  const r = docker(['logs', '--tail', '60', name], { allowFail: true });
  return `${r.stdout}${r.stderr}`;
};

// Returns the HTTP status of GET url (0 when nothing answers).
function httpStatus(url, timeoutS = 5) {
  const r = spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', String(timeoutS), url],
                      { encoding: 'utf8' });
  return Number(r.stdout || 0);
}

// Returns the body of GET url ('' when nothing answers).
function httpBody(url) {
  return spawnSync('curl', ['-s', '--max-time', '10', url], { encoding: 'utf8' }).stdout ?? '';
}

// Runs a rendered probe (httpGet only) against the pod's loopback port until it passes,
// within failureThreshold x periodSeconds (capped by ORCA_E2E_TIMEOUT); the container
// must keep running meanwhile.
async function probe(pod, kind, container) {
  const p = container[kind];
  if (!p) return null;
  if (!p.httpGet) fail(`${pod.name}: ${kind} is not an httpGet probe: ${JSON.stringify(p)}`);
  const url = `http://127.0.0.1:${hostPort(pod, p.httpGet.port)}${p.httpGet.path ?? '/'}`;
  const budgetS = Math.min((p.failureThreshold ?? 3) * (p.periodSeconds ?? 10) + (p.initialDelaySeconds ?? 0), TIMEOUT_S);
  const deadline = Date.now() + budgetS * 1000;
  const started = Date.now();
  let status = 0;
  while (Date.now() < deadline) {
    status = httpStatus(url, p.timeoutSeconds ?? 1);
    if (status >= 200 && status < 400) {
      log(`${pod.name}: ${kind} GET ${p.httpGet.path} (port ${p.httpGet.port} -> ${url}) -> ${status} after ${secs(Date.now() - started)} s`);
      return status;
    }
    if (inspect(pod.container, '{{.State.Running}}') !== 'true') {
      fail(`${pod.name} exited (code ${inspect(pod.container, '{{.State.ExitCode}}')}) before its ${kind} passed:\n${containerLogs(pod.container)}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  fail(`${pod.name}: ${kind} ${url} did not pass within ${budgetS} s (last status ${status}):\n${containerLogs(pod.container)}`);
}

function removeContainers() {
  const names = docker(['ps', '-a', '--filter', `name=^${PREFIX}`, '--format', '{{.Names}}'], { allowFail: true })
    .stdout.split('\n').filter(Boolean);
  if (names.length) docker(['rm', '-f', ...names], { allowFail: true });
}

async function main() {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'orca-containers-'));
  fs.chmodSync(work, 0o755);
  const cleanup = () => {
    if (KEEP) { log(`ORCA_E2E_KEEP=1: containers ${PREFIX}* and ${work} left in place`); return; }
    removeContainers();
    fs.rmSync(work, { recursive: true, force: true });
  };
  try {
    await run(work);
  } catch (e) {
    if (!(e instanceof Failure)) throw e;
    console.error(`[containers] FAIL: ${e.message}`);
    process.exitCode = 1;
  } finally {
    cleanup();
  }
}

async function run(work) {
  step('preflight');
  for (const image of [IMAGE, CONTROLLER_IMAGE]) {
    if (docker(['image', 'inspect', image], { allowFail: true }).status !== 0) fail(`image ${image} does not exist (scripts/test-images.sh builds it)`);
  }
  removeContainers();
  done(`images ${IMAGE} and ${CONTROLLER_IMAGE} present`);

  // ---- render: the controller image renders the e2e/k8s example with PP=2 on cpu ----
  step('render the InferenceDeployment with the controller image');
  const cr = fs.readFileSync(path.join(ROOT, 'e2e/k8s/inferencedeployment.yaml'), 'utf8')
    .replaceAll('@NAME@', 'e2e').replaceAll('@NAMESPACE@', 'orca-e2e').replaceAll('@IMAGE@', IMAGE)
    .replaceAll('@MODEL_NAME@', 'stories260K').replaceAll('@MODEL_URI@', 'hostpath:///models/stories260K')
    .replaceAll('@DEVICE@', 'cpu').replaceAll('@INGRESS_CLASS@', 'nginx').replaceAll('@HOST@', 'orca-e2e.local');
  const spec = YAML.parse(cr).spec;
  if (spec.parallelism.pipeline !== 2 || spec.parallelism.device !== 'cpu') fail(`the example is not PP=2 on cpu: ${JSON.stringify(spec.parallelism)}`);
  const rendered = docker(['run', '--rm', '-i', '--network', 'none', CONTROLLER_IMAGE, 'render', '-f', '-', '-o', 'json'], { input: cr });
  const objects = JSON.parse(rendered.stdout);
  const items = Array.isArray(objects) ? objects : objects.items;
  const pods = podsOf(items);
  const scheduler = pods.filter((p) => p.kind === 'Deployment');
  const workers = pods.filter((p) => p.kind === 'StatefulSet');
  if (scheduler.length !== 1 || workers.length !== 2) {
    fail(`expected 1 scheduler pod and 2 worker pods, rendered ${pods.map((p) => p.name).join(', ')}`);
  }
  for (const p of pods) {
    if (p.spec.containers.some((c) => c.image !== IMAGE)) fail(`${p.name} does not run ${IMAGE}`);
  }
  done(`${items.length} objects: ${items.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);

  // ---- the node: the model of hostpath:///models/stories260K, taken from the image ----
  step('node directory with the model baked into the image');
  const nodeRoot = path.join(work, 'node');
  fs.mkdirSync(path.join(nodeRoot, 'models'), { recursive: true });
  const cid = docker(['create', IMAGE]).stdout.trim();
  try {
    docker(['cp', `${cid}:/usr/local/share/orca/models/stories260K`, path.join(nodeRoot, 'models/stories260K')]);
  } finally {
    docker(['rm', cid], { allowFail: true });
  }
  execFileSync('chmod', ['-R', 'a+rX', work]);
  done(`${fs.readdirSync(path.join(nodeRoot, 'models/stories260K')).length} files under ${nodeRoot}/models/stories260K`);

  // ---- run the pods: scheduler first, then the workers, as the kubelet would ----
  step('start the scheduler and worker containers (host network, loopback)');
  await assignPorts(pods);
  for (const pod of [...scheduler, ...workers]) {
    if (pod.spec.containers.length !== 1 || pod.spec.initContainers?.length) {
      fail(`${pod.name}: expected one container and no init containers`);
    }
    const c = pod.spec.containers[0];
    const env = envOf(items, pods, pod, c);
    for (const [k, v] of env) {
      if (/\b(10\.\d+\.\d+\.\d+|172\.(1[6-9]|2\d|3[01])\.\d+\.\d+|192\.168\.\d+\.\d+)\b/.test(v)) fail(`${pod.name}: env ${k}=${v} is a private-range address`);
    }
    const vars = Object.fromEntries(env);
    const argv = (c.command ?? []).concat(c.args ?? []).map((a) => expand(a, vars));
    if (!argv.length) fail(`${pod.name}: no rendered command`);
    pod.container = `${PREFIX}${pod.name}`;
    const flags = ['run', '-d', '--name', pod.container, '--network', 'host',
                   '--label', 'orca-e2e=1', '--entrypoint', argv[0],
                   ...env.flatMap(([k, v]) => ['-e', `${k}=${v}`]),
                   ...mountsOf(items, pod, c, path.join(work, 'pods'), nodeRoot),
                   ...limitsOf(pod, c), IMAGE, ...argv.slice(1)];
    docker(flags);
    const ports = [...pod.ports].map(([from, to]) => `${from}->${to}`).join(' ');
    log(`${pod.name}: ${argv.join(' ')}`);
    log(`${pod.name}: env ${env.map(([k, v]) => `${k}=${v}`).join(' ')}; ports ${ports}`);
  }
  done('3 containers started');

  step('probes until ready');
  for (const pod of [...scheduler, ...workers]) await probe(pod, 'startupProbe', pod.spec.containers[0]);
  for (const pod of [...scheduler, ...workers]) {
    await probe(pod, 'readinessProbe', pod.spec.containers[0]);
    await probe(pod, 'livenessProbe', pod.spec.containers[0]);
  }
  done('every startup, readiness and liveness probe passed');

  // ---- a completion through the scheduler ----
  step('POST /v1/completions through the scheduler (curl)');
  const sched = scheduler[0];
  const url = `http://127.0.0.1:${hostPort(sched, 'http')}/v1/completions`;
  const body = JSON.stringify({ model: 'stories260K', prompt: PROMPT, max_tokens: MAX_TOKENS, temperature: 0 });
  const r = spawnSync('curl', ['-sS', '--fail-with-body', '--max-time', '120', '-H', 'Content-Type: application/json',
                               '-d', body, url], { encoding: 'utf8' });
  if (r.status !== 0) fail(`curl ${url} exited ${r.status}: ${r.stdout}${r.stderr}\n${containerLogs(sched.container)}`);
  const answer = JSON.parse(r.stdout);
  const text = answer.choices?.[0]?.text;
  if (typeof text !== 'string') fail(`no choices[0].text in ${r.stdout}`);
  if (answer.usage?.completion_tokens !== MAX_TOKENS) fail(`completion_tokens ${answer.usage?.completion_tokens}, wanted ${MAX_TOKENS}: ${r.stdout}`);
  // Greedy stories260K from llama2.c's reference implementation (models/stories260K/PROVENANCE.txt).
  const reference = fs.readFileSync(path.join(ROOT, 'models/stories260K/greedy_once_upon_a_time_256.txt'), 'utf8');
  if (!reference.startsWith(PROMPT + text)) {
    fail(`the group's greedy text differs from llama2.c's:\n  got:  ${JSON.stringify(PROMPT + text)}\n  want: ${JSON.stringify(reference.slice(0, PROMPT.length + text.length + 20))}...`);
  }
  // Both stages took part: the scheduler's group has 2 ranks joined, and each worker
  // pod (on its rendered metrics port) is ready and has executed iterations.
  const metric = (body, name) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(body);
    return m ? Number(m[1]) : undefined;
  };
  const schedMetrics = httpBody(`http://127.0.0.1:${hostPort(sched, 'http')}/metrics`);
  for (const [name, want] of [['orca_group_world_size', 2], ['orca_group_ranks_joined', 2], ['orca_group_ready', 1]]) {
    if (metric(schedMetrics, name) !== want) fail(`scheduler ${name} is ${metric(schedMetrics, name)}, wanted ${want}`);
  }
  for (const w of workers) {
    const body = httpBody(`http://127.0.0.1:${hostPort(w, 'metrics')}/metrics`);
    if (metric(body, 'orca_worker_ready') !== 1 || !(metric(body, 'orca_worker_iterations_total') > 0)) {
      fail(`${w.name} is not a ready worker that executed iterations:\n${body.slice(0, 2000)}`);
    }
    log(`${w.name}: orca_worker_ready 1, orca_worker_iterations_total ${metric(body, 'orca_worker_iterations_total')}`);
  }
  done(`${JSON.stringify(text)} (${answer.usage.completion_tokens} tokens, equal to llama2.c's greedy text) through a group of 2 stages`);

  // ---- SIGTERM: the scheduler first, then its workers; every exit code 0 ----
  step('docker stop (SIGTERM): scheduler, then workers');
  for (const pod of [...scheduler, ...workers]) {
    const grace = pod.spec.terminationGracePeriodSeconds ?? 30;
    const s = Date.now();
    docker(['stop', '-t', String(grace), pod.container]);
    const code = inspect(pod.container, '{{.State.ExitCode}}');
    const oom = inspect(pod.container, '{{.State.OOMKilled}}');
    log(`${pod.name}: exited ${code} ${secs(Date.now() - s)} s after SIGTERM (grace ${grace} s, OOMKilled ${oom})`);
    if (code !== '0') fail(`${pod.name} exited ${code} on SIGTERM:\n${containerLogs(pod.container)}`);
  }
  done('scheduler and workers exited 0');

  await controllerHealth(work);
}

// The controller image as the chart runs it (its args and probes from `helm template`
// when helm is available), against a kubeconfig that points at a closed loopback port:
// it must serve /healthz without an API server, and stop on SIGTERM with code 0.
async function controllerHealth(work) {
  step('controller image answers its health probe');
  const helm = [process.env.ORCA_HELM, path.join(ROOT, '.cache/bin/helm'), 'helm'].find((h) => h && (h === 'helm' ? spawnSync('helm', ['version'], { stdio: 'ignore' }).status === 0 : fs.existsSync(h)));
  let args = ['run', '--leader-elect=false'];
  let healthPath = '/healthz';
  let healthPortName = 'health';
  let ports = [{ name: 'health', containerPort: 8081 }, { name: 'metrics', containerPort: 8080 }];
  let podFlags = [];
  if (helm) {
    const out = spawnSync(helm, ['template', 'orca-e2e', path.join(ROOT, 'helm/orca'), '-n', 'orca-system'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    if (out.status !== 0) fail(`helm template failed: ${out.stderr}`);
    const deploy = YAML.parseAllDocuments(out.stdout).map((d) => d.toJSON())
      .find((o) => o?.kind === 'Deployment' && /controller/.test(o.metadata.name));
    if (!deploy) fail('helm template renders no controller Deployment');
    const c = deploy.spec.template.spec.containers[0];
    args = [...(c.command ?? []).slice(1), ...(c.args ?? [])];
    healthPath = c.livenessProbe.httpGet.path;
    healthPortName = c.livenessProbe.httpGet.port;
    ports = c.ports;
    // The chart's security context (read-only root, uid 65532, no capabilities) and its
    // volumes (an emptyDir /tmp), as the kubelet would apply them.
    const pod = { name: 'controller', spec: deploy.spec.template.spec };
    podFlags = [...mountsOf([], pod, c, path.join(work, 'controller'), path.join(work, 'node')), ...limitsOf(pod, c)];
    if (c.securityContext?.capabilities?.drop?.includes('ALL')) podFlags.push('--cap-drop', 'ALL');
    if (c.securityContext?.allowPrivilegeEscalation === false) podFlags.push('--security-opt', 'no-new-privileges');
    log(`chart args: ${args.join(' ')}; liveness GET ${healthPath} on ${healthPortName}`);
  } else {
    log('helm not found: default args');
  }
  // The ports move to free loopback ones, as for the pods.
  const taken = new Set();
  const moved = new Map();
  for (const p of ports) moved.set(p.containerPort, await freePort(taken));
  args = args.map((a) => a.replace(/^(--(?:health-probe|metrics)-bind-address=)\S*:(\d+)$/, (m, flag, port) =>
    (moved.has(Number(port)) ? `${flag}127.0.0.1:${moved.get(Number(port))}` : m)));
  const healthPort = moved.get((ports.find((p) => p.name === healthPortName) ?? {}).containerPort ?? Number(healthPortName));
  if (!healthPort) fail(`no port for ${healthPortName}`);
  // A kubeconfig for an API server that is not there (port 9 on loopback: nothing listens).
  const kube = path.join(work, 'kube');
  fs.mkdirSync(kube, { mode: 0o755 });
  fs.writeFileSync(path.join(kube, 'config'), YAML.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'none',
    clusters: [{ name: 'none', cluster: { server: 'https://127.0.0.1:9', 'insecure-skip-tls-verify': true } }],
    contexts: [{ name: 'none', context: { cluster: 'none', user: 'none' } }],
    users: [{ name: 'none', user: { token: 'not-a-token' } }],
  }), { mode: 0o644 });
  const name = `${PREFIX}controller`;
  docker(['run', '-d', '--name', name, '--network', 'host', '--label', 'orca-e2e=1',
          '--mount', `type=bind,source=${kube},target=/kube,readonly`, '-e', 'KUBECONFIG=/kube/config',
          ...podFlags, CONTROLLER_IMAGE, ...args]);
  log(`orca-controller ${args.join(' ')} (KUBECONFIG -> https://127.0.0.1:9; ${podFlags.join(' ') || 'no pod settings'})`);
  const url = `http://127.0.0.1:${healthPort}${healthPath}`;
  const deadline = Date.now() + 60000;
  let status = 0;
  while (Date.now() < deadline && (status = httpStatus(url, 2)) !== 200) {
    if (inspect(name, '{{.State.Running}}') !== 'true') fail(`the controller exited (code ${inspect(name, '{{.State.ExitCode}}')}):\n${containerLogs(name)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
  if (status !== 200) fail(`GET ${url} -> ${status} within 60 s:\n${containerLogs(name)}`);
  log(`GET ${healthPath} -> 200 (${url})`);
  const s = Date.now();
  docker(['stop', '-t', '30', name]);
  const code = inspect(name, '{{.State.ExitCode}}');
  log(`orca-controller exited ${code} ${secs(Date.now() - s)} s after SIGTERM`);
  if (code !== '0') fail(`the controller exited ${code} on SIGTERM:\n${containerLogs(name)}`);
  done('the controller served /healthz and stopped cleanly');
  log(`PASS in ${secs(Date.now() - t0)} s`);
}

await main();
