// e2e/containers/pods.mjs without Docker: what the kubelet and kube-proxy would do to a
// hand-written scheduler Deployment, worker StatefulSet, Services and ConfigMap.
//   node --test e2e/containers/pods.test.mjs
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { assignPorts, envOf, expand, hostPort, limitsOf, mountsOf, podsOf, resolveService } from './pods.mjs';

const labels = (role) => ({ 'serving.orca.dev/deployment': 'demo', 'serving.orca.dev/role': role });
function objects() {
  const volumes = [{ name: 'cfg', configMap: { name: 'demo-engine' } },
                   { name: 'model', hostPath: { path: '/models/m', type: 'Directory' } },
                   { name: 'shm', emptyDir: { medium: 'Memory' } }];
  const mounts = [{ name: 'cfg', mountPath: '/etc/orca', readOnly: true }, { name: 'model', mountPath: '/models', readOnly: true }];
  return [
    { kind: 'ConfigMap', metadata: { name: 'demo-engine', namespace: 'ns1' },
      data: { 'engine.yaml': 'server:\n  port: 8000\n  grpc_port: 8001\nparallelism:\n  control_port: 8002\nworker:\n  metrics_port: 9090\n' } },
    { kind: 'Service', metadata: { name: 'demo-sched', namespace: 'ns1' },
      spec: { selector: labels('scheduler'), ports: [{ name: 'control', port: 8002, targetPort: 'control' }, { name: 'http', port: 80, targetPort: 8000 }] } },
    { kind: 'Deployment', metadata: { name: 'demo-sched', namespace: 'ns1' },
      spec: { replicas: 1, template: { metadata: { labels: labels('scheduler') }, spec: { volumes, containers: [{
        name: 'scheduler', command: ['orca', 'scheduler', '--config', '/etc/orca/engine.yaml'], volumeMounts: mounts,
        ports: [{ name: 'http', containerPort: 8000 }, { name: 'grpc', containerPort: 8001 }, { name: 'control', containerPort: 8002 }] }] } } } },
    { kind: 'StatefulSet', metadata: { name: 'demo-s0', namespace: 'ns1' },
      spec: { replicas: 2, template: { metadata: { labels: labels('worker') }, spec: { volumes, containers: [{
        name: 'worker', command: ['orca', 'worker', '--scheduler', '$(ADDR)', '--pod-index', '$(ORDINAL)', '$$(ADDR)', '$(NOPE)'],
        env: [{ name: 'ADDR', value: 'demo-sched.ns1.svc.cluster.local:8002' },
              { name: 'ORDINAL', valueFrom: { fieldRef: { fieldPath: "metadata.labels['apps.kubernetes.io/pod-index']" } } },
              { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              { name: 'COPY', value: 'at $(ADDR)' }],
        volumeMounts: [...mounts, { name: 'shm', mountPath: '/dev/shm' }],
        resources: { limits: { memory: '2Gi' } },
        ports: [{ name: 'metrics', containerPort: 9090 }] }] } } } },
  ];
}

test('pods: one per Deployment replica and StatefulSet ordinal, with the pod-index label', () => {
  const pods = podsOf(objects());
  assert.deepEqual(pods.map((p) => p.name), ['demo-sched-pod0', 'demo-s0-0', 'demo-s0-1']);
  assert.equal(pods[2].labels['apps.kubernetes.io/pod-index'], '1');
});

test('ports: every container port moves to a distinct free port', async () => {
  const pods = podsOf(objects());
  await assignPorts(pods);
  const all = pods.flatMap((p) => [...p.ports.values()]);
  assert.equal(new Set(all).size, 5);
  assert.equal(hostPort(pods[0], 'control'), pods[0].ports.get(8002));
  assert.equal(hostPort(pods[0], 8000), pods[0].ports.get(8000));
  assert.throws(() => hostPort(pods[1], 'http'), /pod demo-s0-0 has no container port http/);
});

test('env: Service names resolve to the selected pod on loopback; fieldRefs by hand; $(VAR) expands', async () => {
  const items = objects();
  const pods = podsOf(items);
  await assignPorts(pods);
  const worker = pods[2];
  const env = Object.fromEntries(envOf(items, pods, worker, worker.spec.containers[0]));
  const control = pods[0].ports.get(8002);
  assert.deepEqual(env, { ADDR: `127.0.0.1:${control}`, ORDINAL: '1', IP: '127.0.0.1', NAME: 'demo-s0-1',
                          COPY: `at 127.0.0.1:${control}` });
  assert.deepEqual(worker.spec.containers[0].command.map((a) => expand(a, env)),
                   ['orca', 'worker', '--scheduler', `127.0.0.1:${control}`, '--pod-index', '1', '$(ADDR)', '$(NOPE)']);
  assert.equal(resolveService(items, pods, 'demo-sched', '80', 'ns1'), `127.0.0.1:${pods[0].ports.get(8000)}`);
  assert.throws(() => resolveService(items, pods, 'demo-sched.ns1.svc', '9999', 'ns1'), /Service demo-sched has no port 9999/);
  const bad = { ...worker.spec.containers[0], env: [{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'status.phase' } } }] };
  assert.throws(() => envOf(items, pods, worker, bad), /unsupported fieldRef status\.phase/);
  const secret = { ...worker.spec.containers[0], env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] };
  assert.throws(() => envOf(items, pods, worker, secret), /env T has an unsupported source/);
});

test('mounts: the pod\'s own ports are moved in its copy of the ConfigMap; hostPath and emptyDir', async () => {
  const items = objects();
  const pods = podsOf(items);
  await assignPorts(pods);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orca-pods-test-'));
  try {
    const node = path.join(dir, 'node');
    fs.mkdirSync(path.join(node, 'models/m'), { recursive: true });
    const [sched, worker] = pods;
    const schedFlags = mountsOf(items, sched, sched.spec.containers[0], path.join(dir, 'pods'), node);
    assert.deepEqual(schedFlags, [
      '--mount', `type=bind,source=${dir}/pods/demo-sched-pod0/cfg,target=/etc/orca,readonly`,
      '--mount', `type=bind,source=${node}/models/m,target=/models,readonly`]);
    const schedYaml = fs.readFileSync(path.join(dir, 'pods/demo-sched-pod0/cfg/engine.yaml'), 'utf8');
    assert.match(schedYaml, new RegExp(`^  port: ${sched.ports.get(8000)}$`, 'm'));
    assert.match(schedYaml, new RegExp(`^  grpc_port: ${sched.ports.get(8001)}$`, 'm'));
    assert.match(schedYaml, new RegExp(`^  control_port: ${sched.ports.get(8002)}$`, 'm'));
    assert.match(schedYaml, /^  metrics_port: 9090$/m, 'not a scheduler port: left alone');
    const workerFlags = mountsOf(items, worker, worker.spec.containers[0], path.join(dir, 'pods'), node);
    assert.deepEqual(workerFlags.slice(-2), ['--tmpfs', '/dev/shm:rw,mode=1777']);
    const workerYaml = fs.readFileSync(path.join(dir, 'pods/demo-s0-0/cfg/engine.yaml'), 'utf8');
    assert.match(workerYaml, new RegExp(`^  metrics_port: ${worker.ports.get(9090)}$`, 'm'));
    assert.match(workerYaml, /^  port: 8000$/m);
    assert.deepEqual(limitsOf(worker, worker.spec.containers[0]), ['--memory', '2g']);
    fs.rmSync(path.join(node, 'models/m'), { recursive: true });
    assert.throws(() => mountsOf(items, sched, sched.spec.containers[0], path.join(dir, 'pods'), node),
                  /hostPath \/models\/m is not a directory on the node/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
