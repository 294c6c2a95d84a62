// helm/orca: lint, schema validation of the rendered objects, and the properties the
// chart promises (issue 6, DESIGN §8): controller HA and hardening, the CRD equal to
// crds/, monitoring, prometheus-adapter rules, NetworkPolicies and the example.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import {
  ALL_OPTIONS, CHART, KUBE_VERSION, ROOT, find, findAll, helm, inferenceDeploymentValidator,
  parseYamlStream, readYaml, render, validateObject,
} from "./lib.mjs";

const src = (f) => fs.readFileSync(path.join(ROOT, f), "utf8");
const validateCr = inferenceDeploymentValidator();

async function assertValid(objects) {
  const problems = [];
  for (const o of objects) {
    const err = o.kind === "InferenceDeployment" ? validateCr(o) : await validateObject(o);
    if (err) problems.push(`${o.kind} ${o.metadata?.name}: ${err}`);
  }
  assert.deepEqual(problems, []);
}

test("helm lint --strict passes with the defaults and with every option", () => {
  for (const extra of [[], ["-f", ALL_OPTIONS]]) {
    const r = helm(["lint", "--strict", CHART, "--kube-version", KUBE_VERSION, ...extra]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  }
});

test("the validators are live: a broken object is rejected", async () => {
  const bad = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" }, spec: { replicas: "2", selector: {}, template: {} } };
  assert.match(await validateObject(bad), /replicas must be integer/);
  assert.match(await validateObject({ apiVersion: "example.com/v1", kind: "Nope", metadata: {} }), /no schema/);
  assert.ok(validateCr({ apiVersion: "serving.orca.dev/v1alpha1", kind: "InferenceDeployment", metadata: {}, spec: { model: { name: "m", uri: "pvc://a/b" }, engine: { kvPolicy: "lru" } } }));
});

test("default values render valid objects, and only the controller's", async () => {
  const objects = render();
  await assertValid(objects);
  assert.deepEqual([...new Set(objects.map((o) => o.kind))].sort(), [
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "PodDisruptionBudget",
    "Role", "RoleBinding", "Service", "ServiceAccount"]);
});

test("every option renders valid objects of every optional kind", async () => {
  const objects = render({ values: [ALL_OPTIONS] });
  await assertValid(objects);
  for (const kind of ["ServiceMonitor", "PodMonitor", "NetworkPolicy", "ConfigMap", "InferenceDeployment"]) {
    assert.ok(find(objects, kind), `no ${kind} with every option on`);
  }
  const podMonitors = render({ values: [ALL_OPTIONS], set: ["monitoring.schedulers.kind=PodMonitor"] });
  await assertValid(podMonitors);
  assert.equal(findAll(podMonitors, "PodMonitor").length, 2);
});

test("no chart object carries the serving.orca.dev labels the controller selects on", () => {
  for (const o of render({ values: [ALL_OPTIONS] })) {
    const labels = Object.keys(o.metadata.labels ?? {});
    assert.ok(!labels.some((l) => l.startsWith("serving.orca.dev/")), `${o.kind} ${o.metadata.name}`);
    assert.equal(o.metadata.labels["app.kubernetes.io/managed-by"], "Helm");
  }
});

// Flags `orca-controller run` accepts (controller/main.cc, kKnown).
function controllerFlags() {
  const text = src("controller/main.cc");
  const known = text.slice(text.indexOf("kKnown"), text.indexOf("};", text.indexOf("kKnown")));
  const flags = new Map([...known.matchAll(/\{"([\w-]+)",\s*(true|false)\}/g)].map((m) => [m[1], m[2] === "true"]));
  assert.ok(flags.size > 10, "cannot read the flags of orca-controller run from controller/main.cc");
  return flags;
}

test("controller Deployment: 2 replicas, leader election, known flags, probes, hardening", () => {
  const objects = render();
  const dep = find(objects, "Deployment");
  assert.equal(dep.spec.replicas, 2);
  const pod = dep.spec.template.spec;
  const [c] = pod.containers;
  assert.equal(c.args[0], "run");
  const flags = controllerFlags();
  const args = new Map(c.args.slice(1).map((a) => {
    const m = a.match(/^--([\w-]+)=(.*)$/);
    assert.ok(m, `argument ${a} is not --flag=value`);
    assert.ok(flags.has(m[1]), `--${m[1]} is not a flag of orca-controller run`);
    return [m[1], m[2]];
  }));
  assert.equal(args.get("leader-elect"), "true");
  assert.equal(args.get("leader-election-namespace"), "orca-system");
  assert.ok(!args.has("namespace"), "default watches all namespaces");
  // The Lease holder identity is the pod name.
  assert.deepEqual(c.env.find((e) => e.name === "POD_NAME").valueFrom.fieldRef, { fieldPath: "metadata.name" });
  assert.match(src("controller/main.cc"), /getenv\("POD_NAME"\)/);
  // Probes and ports agree with the bind addresses; paths are the controller's.
  const port = (name) => c.ports.find((p) => p.name === name).containerPort;
  assert.equal(args.get("health-probe-bind-address"), `:${port("health")}`);
  assert.equal(args.get("metrics-bind-address"), `:${port("metrics")}`);
  assert.deepEqual(c.livenessProbe.httpGet, { path: "/healthz", port: "health" });
  assert.deepEqual(c.readinessProbe.httpGet, { path: "/readyz", port: "health" });
  for (const p of ["/healthz", "/readyz", "/metrics"]) assert.match(src("controller/reconcile/manager.cc"), new RegExp(`"${p}"`));
  // Resources and security.
  assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory);
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.ok(pod.securityContext.runAsUser > 0);
  assert.equal(pod.securityContext.seccompProfile.type, "RuntimeDefault");
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.deepEqual(c.securityContext.capabilities.drop, ["ALL"]);
  assert.equal(c.image, "ghcr.io/orca-serving/orca-controller:0.1.0");
  assert.ok(find(objects, "ServiceAccount", pod.serviceAccountName));
  assert.equal(find(objects, "PodDisruptionBudget").spec.minAvailable, 1);
});

test("controller options reach its flags", () => {
  const dep = find(render({ set: ["controller.watchNamespace=serving", "controller.image.digest=sha256:" + "a".repeat(64),
    "controller.leaderElection.leaseDuration=30s"] }), "Deployment");
  const [c] = dep.spec.template.spec.containers;
  assert.ok(c.args.includes("--namespace=serving"));
  assert.ok(c.args.includes("--lease-duration=30s"));
  assert.equal(c.image, `ghcr.io/orca-serving/orca-controller@sha256:${"a".repeat(64)}`);
});

test("two controllers without leader election are refused", () => {
  assert.throws(() => render({ set: ["controller.leaderElection.enabled=false"] }), /requires controller.leaderElection.enabled/);
  const single = render({ set: ["controller.leaderElection.enabled=false", "controller.replicas=1"] });
  assert.ok(find(single, "Deployment").spec.template.spec.containers[0].args.includes("--leader-elect=false"));
  assert.equal(find(single, "PodDisruptionBudget"), undefined);
});

test("the chart's CRD is crds/ (synced copy, upgraded by the chart, kept on uninstall)", () => {
  const r = spawnSync("python3", [path.join(ROOT, "helm/sync-crds.py"), "--check"], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const [source] = readYaml(path.join(ROOT, "crds/inferencedeployments.serving.orca.dev.yaml"));
  const crd = find(render(), "CustomResourceDefinition");
  assert.deepEqual(crd.spec, source.spec);
  assert.equal(crd.metadata.name, source.metadata.name);
  for (const [k, v] of Object.entries(source.metadata.labels ?? {})) assert.equal(crd.metadata.labels[k], v);
  assert.equal(crd.metadata.annotations["helm.sh/resource-policy"], "keep");
  // Not in the chart's crds/ folder, which Helm would never upgrade.
  assert.ok(!fs.existsSync(path.join(CHART, "crds")), "helm/orca/crds/ must not exist: Helm never upgrades it");
  assert.equal(find(render({ set: ["crds.keep=false"] }), "CustomResourceDefinition").metadata.annotations, undefined);
  assert.equal(find(render({ set: ["crds.install=false"] }), "CustomResourceDefinition"), undefined);
});

// Port names of the pods and Services the controller builds (controller/builders/build_*.cc).
function controllerPortNames() {
  const text = src("controller/builders/build_workloads.cc") + src("controller/builders/build_services.cc");
  return new Set([...text.matchAll(/\{"name",\s*"(\w+)"\},\s*\{"containerPort"/g), ...text.matchAll(/Port\("(\w+)"/g)].map((m) => m[1]));
}

test("scheduler and worker monitors select the controller's pods and ports", () => {
  const names = controllerPortNames();
  for (const p of ["http", "grpc", "control", "metrics"]) assert.ok(names.has(p), `controller has no port named ${p}`);
  const objects = render({ values: [ALL_OPTIONS] });
  const sm = find(objects, "ServiceMonitor", "orca-schedulers");
  assert.deepEqual(sm.spec.selector.matchLabels, { "serving.orca.dev/role": "scheduler" });
  assert.deepEqual(sm.spec.endpoints.map((e) => [e.port, e.path]), [["http", "/metrics"]]);
  assert.deepEqual(sm.spec.namespaceSelector, { matchNames: ["serving"] });
  // The scheduler serves /metrics on its HTTP port (engine.yaml server.port = kHttpPort).
  assert.match(src("controller/builders/build_workloads.cc"), /c\.server\.port = kHttpPort;/);
  const workers = find(objects, "PodMonitor", "orca-workers");
  assert.deepEqual(workers.spec.selector.matchLabels, { "serving.orca.dev/role": "worker" });
  assert.equal(workers.spec.podMetricsEndpoints[0].port, "metrics");
  const pm = find(render({ set: ["monitoring.schedulers.enabled=true", "monitoring.schedulers.kind=PodMonitor"] }), "PodMonitor");
  assert.equal(pm.spec.podMetricsEndpoints[0].port, "http");
  assert.deepEqual(pm.spec.namespaceSelector, { any: true });
  assert.equal(find(render(), "ServiceMonitor"), undefined);
});

test("prometheus-adapter rules expose orca_num_requests_waiting per scheduler pod", () => {
  const cm = find(render({ values: [ALL_OPTIONS] }), "ConfigMap");
  assert.equal(cm.metadata.namespace, "monitoring");
  const [config] = parseYamlStream(cm.data["config.yaml"]);
  const byName = Object.fromEntries(config.rules.map((r) => [r.name.as, r]));
  assert.deepEqual(Object.keys(byName).sort(), ["orca_kv_cache_usage_perc", "orca_num_requests_running", "orca_num_requests_waiting"]);
  const waiting = byName.orca_num_requests_waiting;
  assert.match(waiting.seriesQuery, /^orca_num_requests_waiting\{/);
  assert.deepEqual(waiting.resources.overrides, { namespace: { resource: "namespace" }, pod: { resource: "pod" } });
  assert.match(waiting.metricsQuery, /<<\.Series>>\{<<\.LabelMatchers>>\}\) by \(<<\.GroupBy>>\)/);
  // The metric names are the engine's (engine/server/serving_metrics.cc).
  for (const name of Object.keys(byName)) assert.match(src("engine/server/serving_metrics.cc"), new RegExp(`"${name}"`));
  // The default metric of the controller's autoscaling is among them.
  const [crd] = readYaml(path.join(ROOT, "crds/inferencedeployments.serving.orca.dev.yaml"));
  const metric = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.autoscaling.properties.metric.default;
  assert.ok(byName[metric], `no rule for the CRD's default autoscaling metric ${metric}`);
});

test("NetworkPolicies: only schedulers and workers reach workers; only the ingress reaches schedulers", () => {
  const objects = render({ values: [ALL_OPTIONS] });
  const policies = findAll(objects, "NetworkPolicy");
  assert.deepEqual(policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`).sort(),
    ["serving-b/orca-schedulers", "serving-b/orca-workers", "serving/orca-schedulers", "serving/orca-workers"]);
  const names = controllerPortNames();
  const workers = policies.find((p) => p.metadata.name === "orca-workers");
  assert.deepEqual(workers.spec.policyTypes, ["Ingress"]);
  assert.equal(workers.spec.podSelector.matchLabels["serving.orca.dev/role"], "worker");
  const [peers, metrics] = workers.spec.ingress;
  assert.deepEqual(peers.from.map((f) => f.podSelector.matchExpressions[0]),
    [{ key: "serving.orca.dev/role", operator: "In", values: ["scheduler", "worker"] }]);
  assert.ok(peers.from.every((f) => !f.namespaceSelector), "peers of workers must be in the same namespace");
  assert.deepEqual(metrics.ports, [{ port: "metrics", protocol: "TCP" }]);

  const sched = policies.find((p) => p.metadata.name === "orca-schedulers");
  assert.equal(sched.spec.podSelector.matchLabels["serving.orca.dev/role"], "scheduler");
  const byPorts = Object.fromEntries(sched.spec.ingress.map((r) => [r.ports.map((p) => p.port).join(","), r.from]));
  for (const rule of sched.spec.ingress) for (const p of rule.ports) assert.ok(names.has(p.port), `no container port ${p.port}`);
  assert.deepEqual(Object.keys(byPorts).sort(), ["control", "http", "http,grpc"]);
  assert.deepEqual(byPorts["http,grpc"][0].namespaceSelector, { matchLabels: { "kubernetes.io/metadata.name": "ingress-nginx" } });
  assert.deepEqual(byPorts["http,grpc"][1], { podSelector: { matchLabels: { app: "chat-frontend" } } });
  assert.deepEqual(byPorts.control, [{ podSelector: { matchLabels: { "serving.orca.dev/role": "worker" },
    matchExpressions: [{ key: "serving.orca.dev/deployment", operator: "Exists" }] } }]);
  assert.deepEqual(byPorts.http[0].namespaceSelector, { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } });
  // Without monitoring, Prometheus gets nothing; without a namespace list, the release namespace.
  const plain = findAll(render({ set: ["networkPolicy.enabled=true"] }), "NetworkPolicy");
  assert.deepEqual(plain.map((p) => p.metadata.namespace), ["orca-system", "orca-system"]);
  assert.equal(plain.find((p) => p.metadata.name === "orca-schedulers").spec.ingress.length, 2);
  assert.equal(plain.find((p) => p.metadata.name === "orca-workers").spec.ingress.length, 1);
});

test("the example InferenceDeployment is a valid post-install hook", () => {
  const ex = find(render({ set: ["example.enabled=true"] }), "InferenceDeployment");
  assert.equal(ex.metadata.annotations["helm.sh/hook"], "post-install");
  assert.equal(ex.metadata.namespace, "orca-system");
  assert.equal(validateCr(ex), null);
  assert.equal(find(render(), "InferenceDeployment"), undefined);
});

test("values.yaml documents every value the schema defines", () => {
  // Path of every key line of values.yaml, and whether a comment precedes it.
  const documented = new Map();
  const stack = [];
  let prevComment = false;
  for (const line of fs.readFileSync(path.join(CHART, "values.yaml"), "utf8").split("\n")) {
    if (!line.trim()) continue;
    if (line.trim().startsWith("#")) {
      prevComment = true;
      continue;
    }
    const m = line.match(/^(\s*)([\w.-]+):/);
    if (m) {
      while (stack.length && stack.at(-1).indent >= m[1].length) stack.pop();
      stack.push({ indent: m[1].length, key: m[2] });
      documented.set(stack.map((e) => e.key).join("."), prevComment);
    }
    prevComment = false;
  }
  const schema = JSON.parse(fs.readFileSync(path.join(CHART, "values.schema.json"), "utf8"));
  const leaves = [];
  const walk = (node, prefix) => {
    for (const [k, v] of Object.entries(node.properties ?? {})) {
      const p = prefix ? `${prefix}.${k}` : k;
      if (v.properties && v.additionalProperties === false && !p.startsWith("example.spec")) walk(v, p);
      else leaves.push(p);
    }
  };
  walk(schema, "");
  const undocumented = leaves.filter((p) => p !== "global" && documented.get(p) !== true);
  assert.deepEqual(undocumented, [], "values without a comment (or missing from values.yaml)");
  assert.ok(leaves.length > 40);
});
