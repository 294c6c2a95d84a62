// The InferenceDeployment CRD as kube-apiserver would take it (admission.mjs, CEL by
// npm @marcbachmann/cel-js): the CRD and the chart's copy are accepted (structural
// schema, every default valid against its schema and against the CEL rules as written);
// every example in crds/examples and a matrix of variations is admitted, with the
// defaults and pruning spelled out here by hand; every file in
// tests/controller/testdata/bad-crs/ is rejected with exactly the error its first line
// names (`# expect: <error>`), and every CEL rule of the CRD has such a file. The checker
// itself must reject the mistakes it exists to catch (mutated copies of the CRD).
//
//   tests/controller/crd_admission/run.sh   (ctest: controller_crd_admission)
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { admit, createCrd, NOT_CHECKED } from "./admission.mjs";
import { readYamlDocuments } from "./crd_admission.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const CRD_FILE = path.join(ROOT, "crds/inferencedeployments.serving.orca.dev.yaml");
const CHART_CRD_FILE = path.join(ROOT, "helm/orca/files/crds/inferencedeployments.serving.orca.dev.yaml");
const EXAMPLES = path.join(ROOT, "crds/examples");
const BAD = path.join(ROOT, "tests/controller/testdata/bad-crs");
const CRD = readYamlDocuments(CRD_FILE)[0];
const SPEC = CRD.spec.versions[0].schema.openAPIV3Schema.properties.spec;

const yamlFiles = (dir) => fs.readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort();

// A valid minimal InferenceDeployment with `set` (JSON pointer -> value) applied.
function cr(set = {}) {
  const obj = {
    apiVersion: "serving.orca.dev/v1alpha1",
    kind: "InferenceDeployment",
    metadata: { name: "demo", namespace: "default" },
    spec: { model: { name: "tiny", uri: "pvc://models/tiny" } },
  };
  for (const [pointer, value] of Object.entries(set)) {
    const parts = pointer.split("/").slice(1);
    let at = obj;
    for (const p of parts.slice(0, -1)) at = at[p] ??= {};
    at[parts.at(-1)] = value;
  }
  return obj;
}

function admitted(obj, what) {
  const r = admit(CRD, obj);
  assert.deepEqual(r.errors, [], `${what} was rejected`);
  return r;
}

test("the CRD is accepted: structural, defaults valid against their schema and CEL rules as written", () => {
  assert.deepEqual(createCrd(CRD), []);
});

test("the chart's CRD copy is the same file, and accepted", () => {
  assert.equal(fs.readFileSync(CHART_CRD_FILE, "utf8"), fs.readFileSync(CRD_FILE, "utf8"), "run helm/sync-crds.py");
  assert.deepEqual(createCrd(readYamlDocuments(CHART_CRD_FILE)[0]), []);
});

test("every example is admitted, with nothing pruned", () => {
  const files = yamlFiles(EXAMPLES);
  assert.ok(files.length >= 5, `only ${files.length} examples`);
  for (const f of files) {
    for (const doc of readYamlDocuments(path.join(EXAMPLES, f))) {
      const r = admitted(doc, f);
      assert.deepEqual(r.pruned, [], `${f}: unknown fields`);
    }
  }
});

test("the controller's test-only inputs (tests/controller/testdata/examples) are admitted too", () => {
  const dir = path.join(ROOT, "tests/controller/testdata/examples");
  for (const f of fs.existsSync(dir) ? yamlFiles(dir) : []) {
    for (const doc of readYamlDocuments(path.join(dir, f))) {
      if (doc.kind === "InferenceDeployment") assert.deepEqual(admitted(doc, f).pruned, [], `${f}: unknown fields`);
    }
  }
});

test("defaults are applied top-down: a default object gets its own nested defaults", () => {
  const { object } = admitted(cr(), "the minimal CR");
  const s = object.spec;
  assert.equal(s.replicas, 1);
  assert.deepEqual(s.model, { name: "tiny", uri: "pvc://models/tiny", dtype: "auto" });
  assert.deepEqual(s.parallelism, { tensor: 1, pipeline: 1, gpusPerPod: 1, device: "gpu" });
  assert.deepEqual(s.engine, {
    maxBatchSize: 64,
    maxBatchedTokens: 2048,
    kvPolicy: "paged",
    blockSize: 16,
    chunkedPrefill: true,
    prefixCaching: false,
    memoryFraction: 0.9,
    schedulingPolicy: "iteration",
    targetItlMs: 0,
  });
  assert.deepEqual(s.lifecycle, {
    terminationGracePeriodSeconds: 60,
    preStopSleepSeconds: 5,
    drainSeconds: 45,
    joinTimeoutSeconds: 300,
  });
  assert.deepEqual(s.routing, { inferencePool: { enabled: false } });
  assert.deepEqual(s.autoscaling.prometheus, { serverAddress: "http://prometheus-operated.monitoring.svc:9090" });
  assert.deepEqual(s.rolloutStrategy, { type: "RollingUpdate" }, "rollingUpdate has no default of its own");
  assert.deepEqual(s.ingress, { enabled: false, path: "/", pathType: "Prefix" });
  assert.equal(s.groupPolicy.maxGroupRestarts, 5);
});

test("a partly written object keeps its fields and gets the missing ones", () => {
  const { object } = admitted(
    cr({
      "/spec/engine": { maxBatchSize: 8 },
      "/spec/parallelism": { tensor: 4, gpusPerPod: 2 },
      "/spec/routing": { inferencePool: { enabled: true, endpointPicker: { name: "epp" } } },
      "/spec/model/tokenSecret": { name: "hf-token" },
      "/spec/model/uri": "hf://TinyLlama/TinyLlama-1.1B-Chat-v1.0",
      "/spec/autoscaling": { prometheus: {} },
      "/spec/controlPlane": { tokenSecretRef: { name: "orca-control" } },
    }),
    "partial objects",
  );
  const s = object.spec;
  assert.equal(s.engine.maxBatchSize, 8);
  assert.equal(s.engine.maxBatchedTokens, 2048);
  assert.deepEqual(s.parallelism, { tensor: 4, gpusPerPod: 2, pipeline: 1, device: "gpu" });
  assert.deepEqual(s.routing.inferencePool.endpointPicker, { name: "epp", port: 9002, failureMode: "FailClose" });
  assert.deepEqual(s.model.tokenSecret, { name: "hf-token", key: "token" });
  assert.deepEqual(s.controlPlane.tokenSecretRef, { name: "orca-control", key: "token" });
  assert.equal(s.autoscaling.prometheus.serverAddress, "http://prometheus-operated.monitoring.svc:9090");
  assert.equal(s.autoscaling.enabled, false, "an object the user wrote gets the defaults of its fields");
});

test("unknown fields are pruned and reported", () => {
  const r = admitted(
    cr({ "/spec/paralelism": { tensor: 2 }, "/spec/engine/maxBatchSise": 8, "/spec/worker/affinity": { x: 1 } }),
    "a CR with typos",
  );
  assert.deepEqual(r.pruned.sort(), ["spec.engine.maxBatchSise", "spec.paralelism"]);
  assert.equal(r.object.spec.parallelism.tensor, 1, "the typo did not set anything");
  assert.deepEqual(r.object.spec.worker.affinity, { x: 1 }, "x-kubernetes-preserve-unknown-fields keeps fields");
});

// Good CRs: each is admitted.
const VARIATIONS = {
  "hf model with token and size limit": {
    "/spec/model/uri": "hf://meta-llama/Llama-3.1-8B-Instruct",
    "/spec/model/tokenSecret": { name: "hf-token", key: "HF_TOKEN" },
    "/spec/model/downloadSizeLimit": "40Gi",
  },
  "hf model at a revision": { "/spec/model/uri": "hf://TinyLlama/TinyLlama-1.1B-Chat-v1.0@refs/pr/12" },
  "hf model with an integer size limit": {
    "/spec/model/uri": "hf://org/m.v2",
    "/spec/model/downloadSizeLimit": 21474836480,
  },
  "https archive with sha256 and token": {
    "/spec/model/uri": "https://models.example.com/llama/llama-3.tar.gz",
    "/spec/model/sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "/spec/model/tokenSecret": { name: "models-token" },
  },
  "https .tgz and .tar": { "/spec/model/uri": "https://host:8443/a/b.tgz" },
  "https .tar": { "/spec/model/uri": "https://host/m.tar" },
  "hostpath model": { "/spec/model/uri": "hostpath:///mnt/models/x" },
  "cpu with float32": { "/spec/parallelism/device": "cpu", "/spec/model/dtype": "float32" },
  "cpu with bfloat16": { "/spec/parallelism/device": "cpu", "/spec/model/dtype": "bfloat16" },
  "cpu with auto and 2 ranks per pod": {
    "/spec/parallelism": { device: "cpu", tensor: 2, gpusPerPod: 2, pipeline: 2 },
  },
  "gpu with bfloat16": { "/spec/model/dtype": "bfloat16" },
  "gpu with float16, tp8 pp2": { "/spec/model/dtype": "float16", "/spec/parallelism": { tensor: 8, pipeline: 2, gpusPerPod: 4 } },
  "pp2 with its layers split": { "/spec/parallelism": { pipeline: 2, pipelineLayers: [17, 15] } },
  "pp1 with its one stage's layers": { "/spec/parallelism/pipelineLayers": [32] },
  "prefix caching, paged, iteration": { "/spec/engine": { prefixCaching: true } },
  "reserve without prefix caching": { "/spec/engine": { kvPolicy: "reserve" } },
  "request-level batching": { "/spec/engine": { schedulingPolicy: "request", kvPolicy: "reserve" } },
  "chunked prefill off": { "/spec/engine": { chunkedPrefill: false, maxBatchedTokens: 8192 } },
  "memory fraction 1": { "/spec/engine/memoryFraction": 1 },
  "autoscaling within range": {
    "/spec/replicas": 3,
    "/spec/autoscaling": { enabled: true, minReplicas: 2, maxReplicas: 4, backend: "KEDA" },
  },
  "replicas 0 without autoscaling": { "/spec/replicas": 0 },
  "recreate rollout": { "/spec/rolloutStrategy": { type: "Recreate" } },
  "ingress with tls": { "/spec/ingress": { enabled: true, host: "a.example.com", tls: { secretName: "t" } } },
  "control-plane token and tls": {
    "/spec/controlPlane": { tokenSecretRef: { name: "orca-control", key: "control.token" } },
    "/spec/tls": { secretName: "orca-tls" },
  },
  "lifecycle, long drain": {
    "/spec/lifecycle": { terminationGracePeriodSeconds: 3600, preStopSleepSeconds: 60, drainSeconds: 3539, joinTimeoutSeconds: 0 },
  },
  "lifecycle, shortest": { "/spec/lifecycle": { terminationGracePeriodSeconds: 5, preStopSleepSeconds: 0, drainSeconds: 4 } },
  "inference pool, fail open": {
    "/spec/routing/inferencePool": { enabled: true, endpointPicker: { name: "vllm-epp", port: 9003, failureMode: "FailOpen" } },
  },
  "picker configured but pool disabled": { "/spec/routing/inferencePool": { endpointPicker: { name: "epp" } } },
  "name of 40 characters": { "/metadata/name": "a".repeat(40) },
  "pod settings": {
    "/spec/worker": { resources: { limits: { "nvidia.com/gpu": 8, memory: "400Gi" } }, env: [{ name: "A", value: "1" }] },
  },
};

for (const [name, set] of Object.entries(VARIATIONS)) {
  test(`admits: ${name}`, () => {
    const r = admitted(cr(set), name);
    assert.deepEqual(r.pruned, [], `${name}: unknown fields`);
  });
}

const badFiles = yamlFiles(BAD);

test("at least 25 bad CRs are checked", () => {
  assert.ok(badFiles.length >= 25, `only ${badFiles.length} files in ${BAD}`);
});

for (const f of badFiles) {
  test(`rejects bad-crs/${f}`, () => {
    const text = fs.readFileSync(path.join(BAD, f), "utf8");
    const expected = text.split("\n")[0].match(/^# expect: (.+)$/)?.[1];
    assert.ok(expected, `${f}: first line must be "# expect: <error>"`);
    const docs = readYamlDocuments(path.join(BAD, f));
    assert.equal(docs.length, 1, `${f}: one CR per file`);
    const errors = admit(CRD, docs[0]).errors.filter((e) => e !== NOT_CHECKED);
    assert.equal(errors.length, 1, `${f} should fail for one reason only: ${JSON.stringify(errors, null, 1)}`);
    assert.ok(errors[0].startsWith(expected), `${f}:\n  got  ${errors[0]}\n  want ${expected}`);
  });
}

test("every CEL rule of the CRD is violated by a bad CR, with the rule's own message", () => {
  const expects = badFiles.map((f) => fs.readFileSync(path.join(BAD, f), "utf8").split("\n")[0]);
  const missing = [];
  (function visit(s) {
    if (!s || typeof s !== "object") return;
    for (const r of s["x-kubernetes-validations"] ?? []) {
      if (!expects.some((e) => e.endsWith(`: ${r.message}`))) missing.push(r.message);
    }
    Object.values(s.properties ?? {}).forEach(visit);
    if (s.items) visit(s.items);
  })(CRD.spec.versions[0].schema.openAPIV3Schema);
  assert.deepEqual(missing, [], "rules without a bad CR in tests/controller/testdata/bad-crs");
});

// The checker catches what kube-apiserver rejects: mutated copies of the CRD.
function mutated(edit) {
  const copy = structuredClone(CRD);
  edit(copy.spec.versions[0].schema.openAPIV3Schema.properties.spec, copy);
  return createCrd(copy);
}
const AT = "spec.versions[0].schema.openAPIV3Schema.properties[spec]";

test("rejects the CRD as it was: rules evaluated on `default: {}` as written", () => {
  const errors = mutated((spec) => {
    spec.properties.parallelism.default = {};
    spec.properties.engine.default = {};
    spec.properties.autoscaling.default = {};
  });
  assert.deepEqual(errors, [
    `${AT}.properties[parallelism].default: Invalid value: "object": no such key: tensor evaluating rule: ${SPEC.properties.parallelism["x-kubernetes-validations"][0].message}`,
    `${AT}.properties[engine].default: Invalid value: "object": no such key: maxBatchedTokens evaluating rule: ${SPEC.properties.engine["x-kubernetes-validations"][0].message}`,
    `${AT}.properties[engine].default: Invalid value: "object": no such key: kvPolicy evaluating rule: ${SPEC.properties.engine["x-kubernetes-validations"][1].message}`,
    `${AT}.properties[engine].default: Invalid value: "object": no such key: schedulingPolicy evaluating rule: ${SPEC.properties.engine["x-kubernetes-validations"][2].message}`,
    `${AT}.properties[autoscaling].default: Invalid value: "object": no such key: enabled evaluating rule: ${SPEC.properties.autoscaling["x-kubernetes-validations"][0].message}`,
  ]);
});

test("rejects a default that breaks its node's rule or schema", () => {
  assert.deepEqual(
    mutated((spec) => (spec.properties.lifecycle.default.drainSeconds = 60)),
    [`${AT}.properties[lifecycle].default: Invalid value: "object": ${SPEC.properties.lifecycle["x-kubernetes-validations"][0].message}`],
  );
  assert.deepEqual(mutated((spec) => (spec.properties.parallelism.default.device = "tpu")), [
    `${AT}.properties[parallelism].default.device: Unsupported value: "tpu": supported values: "gpu", "cpu"`,
  ]);
  assert.deepEqual(mutated((spec) => (spec.properties.lifecycle.default.preStopSleepSeconds = 61)), [
    `${AT}.properties[lifecycle].default.preStopSleepSeconds: Invalid value: 61: ${AT}.properties[lifecycle].default.preStopSleepSeconds in body should be less than or equal to 60`,
  ]);
  assert.deepEqual(mutated((spec) => (spec.properties.engine.default.maxBatchSize = 4096)), [
    `${AT}.properties[engine].default: Invalid value: "object": ${SPEC.properties.engine["x-kubernetes-validations"][0].message}`,
  ]);
  // rules of descendants run on the default too
  assert.deepEqual(mutated((spec) => (spec.properties.routing.default = { inferencePool: { enabled: true } })), [
    `${AT}.properties[routing].default.inferencePool: Invalid value: "object": ${SPEC.properties.routing.properties.inferencePool["x-kubernetes-validations"][0].message}`,
  ]);
});

test("rejects non-structural schemas and unknown fields in defaults", () => {
  assert.deepEqual(mutated((spec) => delete spec.properties.replicas.type), [
    `${AT}.properties[replicas].type: Required value: must not be empty for specified object fields`,
  ]);
  assert.deepEqual(mutated((spec) => (spec.properties.engine.additionalProperties = { type: "string" })), [
    `${AT}.properties[engine].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive`,
  ]);
  assert.deepEqual(mutated((spec) => (spec.properties.parallelism.default.tensr = 1)), [
    `${AT}.properties[parallelism].default: Invalid value: {"tensor":1,"pipeline":1,"gpusPerPod":1,"device":"gpu","tensr":1}: must not have unknown fields`,
  ]);
  assert.deepEqual(mutated((spec) => (spec.properties.model.properties.downloadSizeLimit.type = "string")), [
    `${AT}.properties[model].properties[downloadSizeLimit].type: Forbidden: must be empty to be structural with x-kubernetes-int-or-string`,
  ]);
  assert.deepEqual(mutated((spec) => delete spec.properties.imagePullSecrets.items), [
    `${AT}.properties[imagePullSecrets].items: Required value: must be specified`,
  ]);
  assert.deepEqual(
    mutated((_, crd) => (crd.spec.versions[0].schema.openAPIV3Schema.properties.metadata.properties = { labels: { type: "object" } })),
    ['spec.versions[0].schema.openAPIV3Schema.properties[metadata].properties[labels]: Forbidden: must not be specified: only "name" and "generateName" may be constrained'],
  );
});

test("rejects rules that do not compile against the node's type", () => {
  const errors = mutated((spec) => {
    spec.properties.parallelism["x-kubernetes-validations"].push(
      { rule: "self.tensr > 0", message: "typo" },
      { rule: "self.device + 1 > 0", message: "type error" },
      { rule: "self.tensor", message: "not a bool" },
      { rule: "self.tensor >", message: "syntax" },
    );
  });
  const rules = `${AT}.properties[parallelism].x-kubernetes-validations`;
  const first = SPEC.properties.parallelism["x-kubernetes-validations"].length;  // the pushed rules' index
  assert.equal(errors.length, 4, JSON.stringify(errors, null, 1));
  assert.match(errors[0], new RegExp(`^${rules.replace(/[[\].]/g, "\\$&")}\\[${first}\\]\\.rule: Invalid value: "self.tensr > 0": compilation failed: .*tensr`));
  assert.match(errors[1], new RegExp(`x-kubernetes-validations\\[${first + 1}\\]\\.rule: .*compilation failed: .*no such overload`));
  assert.match(errors[2], new RegExp(`x-kubernetes-validations\\[${first + 2}\\]\\.rule: .*must evaluate to a bool`));
  assert.match(errors[3], new RegExp(`x-kubernetes-validations\\[${first + 3}\\]\\.rule: .*compilation failed`));
});
