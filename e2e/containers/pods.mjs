// Turns the objects `orca-controller render` prints into `docker run` argument lists,
// doing by hand what the kubelet and kube-proxy would do for one node whose pods all
// share the host network:
// - env: `value` as written, with Service DNS names (NAME.NS.svc[.cluster.local]:PORT)
//   resolved to 127.0.0.1 and the port of the selected pod; `fieldRef` from the pod's
//   downward-API values (status.podIP is 127.0.0.1); `$(VAR)` expanded in the command;
// - ports: every containerPort of every pod moves to a free loopback port (the pods
//   share one network namespace, so the rendered 8000s and 9090s would collide); the
//   pod's copy of each ConfigMap file has `*port: N` lines for its own container ports
//   rewritten, and the probes use the moved ports;
// - volumes: configMap (files written per pod), hostPath (a directory under the
//   "node" root), emptyDir (tmpfs); anything else is refused with its name.
// Nothing here talks to Docker; e2e/containers/group_test.mjs runs the result.

import fs from 'node:fs';
import path from 'node:path';

import { freePort } from '../serving/orca_server.mjs';

export { freePort };  // a TCP port free on every address, never one in `taken` (group_test.mjs)

const matches = (selector, labels) => Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);

// Returns the pods of the rendered Deployments and StatefulSets:
// [{name, kind, owner, labels, spec, ordinal}].
export function podsOf(items) {
  const pods = [];
  for (const o of items) {
    if (o.kind !== 'Deployment' && o.kind !== 'StatefulSet') continue;
    const replicas = o.spec.replicas ?? 1;
    for (let i = 0; i < replicas; i++) {
      const name = o.kind === 'StatefulSet' ? `${o.metadata.name}-${i}` : `${o.metadata.name}-pod${i}`;
      const labels = { ...(o.spec.template.metadata?.labels ?? {}) };
      if (o.kind === 'StatefulSet') {
        labels['apps.kubernetes.io/pod-index'] = String(i);
        labels['statefulset.kubernetes.io/pod-name'] = name;
      }
      pods.push({ name, kind: o.kind, owner: o.metadata.name, namespace: o.metadata.namespace ?? 'default',
                  labels, annotations: { ...(o.spec.template.metadata?.annotations ?? {}) },
                  spec: o.spec.template.spec, ordinal: i });
    }
  }
  return pods;
}

// Gives every container port of every pod a free loopback port: pod.ports maps the
// rendered port number to the new one, pod.portNames a port name to the new number.
export async function assignPorts(pods) {
  const taken = new Set();
  for (const pod of pods) {
    pod.ports = new Map();
    pod.portNames = new Map();
    for (const c of pod.spec.containers) {
      for (const p of c.ports ?? []) {
        const moved = await freePort(taken);
        pod.ports.set(p.containerPort, moved);
        if (p.name) pod.portNames.set(p.name, moved);
      }
    }
  }
}

// Returns the loopback port of a probe's or Service's target port (name or number).
export function hostPort(pod, port) {
  const moved = typeof port === 'string' && !/^\d+$/.test(port) ? pod.portNames.get(port) : pod.ports.get(Number(port));
  if (moved === undefined) throw new Error(`pod ${pod.name} has no container port ${port}`);
  return moved;
}

// Returns "127.0.0.1:PORT" for a Service address NAME[.NS[.svc[.cluster.local]]]:PORT,
// the way kube-proxy would route it to the (first) selected pod on this node.
export function resolveService(items, pods, host, port, namespace) {
  const [svcName, ns = namespace] = host.split('.');
  const svc = items.find((o) => o.kind === 'Service' && o.metadata.name === svcName &&
                                (o.metadata.namespace ?? namespace) === ns);
  if (!svc) throw new Error(`no rendered Service ${svcName} in ${ns} for ${host}:${port}`);
  const entry = (svc.spec.ports ?? []).find((p) => p.port === Number(port));
  if (!entry) throw new Error(`Service ${svcName} has no port ${port}`);
  const target = pods.find((p) => matches(svc.spec.selector, p.labels));
  if (!target) throw new Error(`Service ${svcName} selects no rendered pod`);
  return `127.0.0.1:${hostPort(target, entry.targetPort ?? entry.port)}`;
}

const SERVICE_ADDR = /\b([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?){0,1}\.svc(\.cluster\.local)?):(\d+)\b/g;

// Returns the value of a downward-API fieldPath for a pod on this node.
function fieldValue(pod, fieldPath) {
  const label = /^metadata\.labels\['(.+)'\]$/.exec(fieldPath);
  if (label) return pod.labels[label[1]] ?? '';
  const annotation = /^metadata\.annotations\['(.+)'\]$/.exec(fieldPath);
  if (annotation) return pod.annotations[annotation[1]] ?? '';
  switch (fieldPath) {
    case 'metadata.name': return pod.name;
    case 'metadata.namespace': return pod.namespace;
    case 'metadata.uid': return `uid-${pod.name}`;
    case 'status.podIP': case 'status.hostIP': return '127.0.0.1';
    case 'status.podIPs': case 'status.hostIPs': return '127.0.0.1';
    case 'spec.nodeName': return 'orca-e2e-node';
    case 'spec.serviceAccountName': return pod.spec.serviceAccountName ?? 'default';
    default: throw new Error(`pod ${pod.name}: unsupported fieldRef ${fieldPath}`);
  }
}

// Returns the container's environment as [name, value] pairs, in order.
export function envOf(items, pods, pod, container) {
  const out = [];
  const vars = {};
  for (const e of container.env ?? []) {
    let v;
    if ('value' in e) {
      v = expand(String(e.value), vars)
        .replace(SERVICE_ADDR, (_, host, _a, _b, _c, _d, port) => resolveService(items, pods, host, port, pod.namespace));
    } else if (e.valueFrom?.fieldRef) {
      v = fieldValue(pod, e.valueFrom.fieldRef.fieldPath);
    } else if (e.valueFrom?.configMapKeyRef) {
      const ref = e.valueFrom.configMapKeyRef;
      const cm = items.find((o) => o.kind === 'ConfigMap' && o.metadata.name === ref.name);
      if (!cm && !ref.optional) throw new Error(`env ${e.name}: no rendered ConfigMap ${ref.name}`);
      v = cm?.data?.[ref.key] ?? '';
    } else {
      throw new Error(`pod ${pod.name}: env ${e.name} has an unsupported source ${JSON.stringify(e.valueFrom)}`);
    }
    vars[e.name] = v;
    out.push([e.name, v]);
  }
  return out;
}

// Expands $(VAR) as the kubelet does: known variables are replaced, $$ escapes, unknown
// references stay as written.
export function expand(s, vars) {
  return s.replace(/\$\$|\$\((\w+)\)/g, (m, name) => (m === '$$' ? '$' : name in vars ? vars[name] : m));
}

// Rewrites `...port: N` lines whose N is one of the pod's container ports.
function movePorts(text, pod) {
  return text.replace(/^(\s*[\w-]*port:\s*)(\d+)\s*$/gm, (m, key, n) =>
    (pod.ports.has(Number(n)) ? `${key}${pod.ports.get(Number(n))}` : m));
}

// Returns the docker run flags of the container's volume mounts (writing configMap files
// under dir/POD/VOLUME). Node paths of hostPath volumes live under nodeRoot.
export function mountsOf(items, pod, container, dir, nodeRoot) {
  const flags = [];
  for (const m of container.volumeMounts ?? []) {
    const vol = (pod.spec.volumes ?? []).find((v) => v.name === m.name);
    if (!vol) throw new Error(`pod ${pod.name}: volumeMount ${m.name} has no volume`);
    const ro = m.readOnly ? ',readonly' : '';
    if (vol.configMap) {
      const cm = items.find((o) => o.kind === 'ConfigMap' && o.metadata.name === vol.configMap.name);
      if (!cm) throw new Error(`pod ${pod.name}: no rendered ConfigMap ${vol.configMap.name}`);
      const src = path.join(dir, pod.name, m.name);
      fs.mkdirSync(src, { recursive: true, mode: 0o755 });
      fs.chmodSync(src, 0o755);
      for (const [key, text] of Object.entries(cm.data ?? {})) {
        fs.writeFileSync(path.join(src, key), movePorts(text, pod), { mode: 0o644 });
      }
      flags.push('--mount', `type=bind,source=${src},target=${m.mountPath}${ro}`);
    } else if (vol.hostPath) {
      const src = path.join(nodeRoot, vol.hostPath.path);
      const isDir = fs.existsSync(src) && fs.statSync(src).isDirectory();
      if (vol.hostPath.type === 'Directory' && !isDir) {
        throw new Error(`pod ${pod.name}: hostPath ${vol.hostPath.path} is not a directory on the node (${src})`);
      }
      flags.push('--mount', `type=bind,source=${src},target=${m.mountPath}${ro}`);
    } else if (vol.emptyDir) {
      flags.push('--tmpfs', `${m.mountPath}:rw,mode=1777`);
    } else {
      throw new Error(`pod ${pod.name}: volume ${m.name} has an unsupported type: ${Object.keys(vol).join(', ')}`);
    }
  }
  return flags;
}

// Returns the docker run flags of the container's resource limits and security context.
export function limitsOf(pod, container) {
  const flags = [];
  const limits = container.resources?.limits ?? {};
  if (limits.memory) {
    const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(String(limits.memory));
    if (!m) throw new Error(`pod ${pod.name}: memory limit ${limits.memory} is not in Ki/Mi/Gi`);
    flags.push('--memory', `${m[1]}${{ Ki: 'k', Mi: 'm', Gi: 'g' }[m[2]] ?? 'b'}`);
  }
  const sc = { ...(pod.spec.securityContext ?? {}), ...(container.securityContext ?? {}) };
  if (sc.runAsUser !== undefined) flags.push('--user', `${sc.runAsUser}${sc.runAsGroup !== undefined ? `:${sc.runAsGroup}` : ''}`);
  if (sc.readOnlyRootFilesystem) flags.push('--read-only');
  return flags;
}
