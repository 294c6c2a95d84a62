// e2e/k8s/cluster_test.sh without a cluster: it skips (exit 77) with a clear message
// when none is reachable, its InferenceDeployment is valid, and against fake
// kubectl/helm/curl it walks the whole path (install, apply, wait, completion through
// the Ingress, scale subresource, delete, uninstall) in order.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { ROOT, inferenceDeploymentValidator, parseYamlStream } from "./lib.mjs";

const SCRIPT = path.join(ROOT, "e2e/k8s/cluster_test.sh");
const which = (t) => spawnSync("bash", ["-c", `command -v ${t}`], { encoding: "utf8" }).stdout.trim();
const BASH = which("bash");

function run(env, args = []) {
  const r = spawnSync(BASH, [SCRIPT, ...args], { encoding: "utf8", env: { HOME: os.tmpdir(), ...env }, timeout: 120_000 });
  return { code: r.status, out: r.stdout + r.stderr };
}

function fakeBin(tools) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "orca-e2e-fake-"));
  for (const [name, body] of Object.entries(tools)) {
    fs.writeFileSync(path.join(dir, name), `#!/usr/bin/env bash\n${body}\n`, { mode: 0o755 });
  }
  return dir;
}

test("the script is valid bash", () => {
  assert.equal(spawnSync("bash", ["-n", SCRIPT]).status, 0);
});

test("no kubectl: skip with exit 77 and say why", () => {
  const bin = fakeBin({});
  for (const t of ["dirname", "sed"]) fs.symlinkSync(which(t), path.join(bin, t));
  const r = run({ PATH: bin });
  assert.equal(r.code, 77, r.out);
  assert.match(r.out, /SKIP: kubectl is not installed/);
});

test("no reachable cluster: skip with exit 77 and say why", () => {
  const bin = fakeBin({ kubectl: 'echo "The connection to the server localhost:8080 was refused" >&2; exit 1' });
  const r = run({ PATH: `${bin}:${process.env.PATH}`, ORCA_HELM: "/bin/true" });
  assert.equal(r.code, 77, r.out);
  assert.match(r.out, /SKIP: no Kubernetes cluster is reachable/);
  assert.match(r.out, /docs\/install\.md/);
});

test("its InferenceDeployment is valid for cpu and gpu", () => {
  const validate = inferenceDeploymentValidator();
  for (const device of ["cpu", "gpu"]) {
    const r = run({ PATH: process.env.PATH, ORCA_E2E_DEVICE: device }, ["--print-manifest"]);
    assert.equal(r.code, 0, r.out);
    const [cr] = parseYamlStream(r.out);
    assert.equal(validate(cr), null);
    assert.equal(cr.spec.parallelism.device, device);
    assert.equal(cr.spec.ingress.enabled, true);
    assert.ok(!r.out.includes("@"), "a placeholder was left unreplaced");
  }
});

// Fake cluster: kubectl remembers the replicas set by `kubectl scale`.
function fakeCluster(curlBody) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "orca-e2e-cluster-"));
  const log = path.join(dir, "calls.log");
  const state = path.join(dir, "replicas");
  fs.writeFileSync(state, "1");
  const bin = fakeBin({
    kubectl: `echo "kubectl $*" >> ${log}
case "$*" in
  "config current-context") echo fake ;;
  "scale "*) echo "\${@: -1}" | sed 's/--replicas=//' > ${state} ;;
  "get --raw "*) echo "{\\"spec\\":{\\"replicas\\":$(cat ${state})},\\"status\\":{\\"replicas\\":1,\\"selector\\":\\"serving.orca.dev/deployment=e2e,serving.orca.dev/role=scheduler\\"}}" ;;
  "get ingress "*) echo 10.0.0.7 ;;
  "get deployments -n "*role=scheduler*|"get pods "*) for i in $(seq $(cat ${state})); do echo pod/x$i; done ;;
  "get deployments,statefulsets,services "*) ;;
  "create namespace "*) echo "apiVersion: v1" ;;
  "apply -f -") cat >> ${dir}/applied.yaml ;;
esac
exit 0`,
    helm: `echo "helm $*" >> ${log}`,
    curl: `echo "curl $*" >> ${log}; echo '${curlBody}'`,
  });
  return { bin, log, applied: path.join(dir, "applied.yaml") };
}

test("against a fake cluster it runs every step in order", () => {
  const { bin, log, applied } = fakeCluster('{"choices":[{"index":0,"text":" there was a"}]}');
  const r = run({ PATH: `${bin}:${process.env.PATH}`, ORCA_HELM: path.join(bin, "helm"), ORCA_CONTROLLER_IMAGE: "reg.example/ctl:1.2.3" });
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /\[e2e\/k8s\] PASS/);
  assert.ok(parseYamlStream(fs.readFileSync(applied, "utf8")).some((o) => o.kind === "InferenceDeployment"));
  const calls = fs.readFileSync(log, "utf8").split("\n");
  const order = [
    /^helm upgrade --install orca-e2e helm\/orca -n orca-system .*controller.image.repository=reg.example\/ctl .*controller.image.tag=1.2.3 .*--wait/,
    /^kubectl wait --for=condition=Established crd\/inferencedeployments.serving.orca.dev/,
    /^kubectl apply -f -$/,
    /^kubectl wait -n orca-e2e inferencedeployment\/e2e --for=condition=Available/,
    /^curl .*-H Host: orca-e2e.local .*http:\/\/10.0.0.7\/v1\/completions/,
    /^kubectl get --raw \/apis\/serving.orca.dev\/v1alpha1\/namespaces\/orca-e2e\/inferencedeployments\/e2e\/scale$/,
    /^kubectl scale -n orca-e2e inferencedeployment\/e2e --replicas=2$/,
    /^kubectl wait .*--for=jsonpath=\{.status.readyReplicas\}=2/,
    /^kubectl scale -n orca-e2e inferencedeployment\/e2e --replicas=1$/,
    /^kubectl delete inferencedeployment e2e -n orca-e2e --wait=true/,
    /^helm uninstall orca-e2e -n orca-system --wait$/,
    /^kubectl get crd\/inferencedeployments.serving.orca.dev$/,
  ];
  let at = 0;
  for (const re of order) {
    const i = calls.findIndex((c, j) => j >= at && re.test(c));
    assert.ok(i >= 0, `no call matching ${re} after line ${at}:\n${calls.join("\n")}`);
    at = i + 1;
  }
});

test("under ctest a reachable cluster is left alone unless ORCA_E2E_K8S=1", () => {
  const { bin, log } = fakeCluster("{}");
  const r = run({ PATH: `${bin}:${process.env.PATH}`, ORCA_HELM: path.join(bin, "helm"), ORCA_E2E_REQUIRE_OPT_IN: "1" });
  assert.equal(r.code, 77, r.out);
  assert.match(r.out, /SKIP: a cluster is reachable \(context fake\), but ORCA_E2E_K8S=1 is not set/);
  assert.ok(!fs.readFileSync(log, "utf8").includes("helm"), "nothing may be installed");
});

test("a bad completion fails the run", () => {
  const { bin } = fakeCluster('{"error":{"message":"model not found"}}');
  const r = run({ PATH: `${bin}:${process.env.PATH}`, ORCA_HELM: path.join(bin, "helm") });
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /FAIL: unexpected completion response/);
  assert.match(r.out, /diagnostics:/);
});
