// The chart's RBAC for orca-controller equals what the controller code calls: the
// (group, resource, verb) triples derived from controller/ by controller_rbac.mjs.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { deriveControllerRules } from "./controller_rbac.mjs";
import { ROOT, find, render } from "./lib.mjs";

const RELEASE_NS = "orca-system";

// Returns the rules granted to the controller's ServiceAccount: [{role, rule}] of every
// Role/ClusterRole bound to it.
function grantedTo(objects) {
  const sa = find(objects, "Deployment").spec.template.spec.serviceAccountName;
  const out = [];
  for (const b of objects.filter((o) => o.kind === "RoleBinding" || o.kind === "ClusterRoleBinding")) {
    const bound = (b.subjects ?? []).some((s) => s.kind === "ServiceAccount" && s.name === sa && s.namespace === RELEASE_NS);
    if (!bound) continue;
    const role = objects.find((o) => o.kind === b.roleRef.kind && o.metadata.name === b.roleRef.name &&
      (o.kind === "ClusterRole" || o.metadata.namespace === b.metadata.namespace));
    assert.ok(role, `${b.kind} ${b.metadata.name} refers to ${b.roleRef.kind} ${b.roleRef.name}, which the chart does not render`);
    for (const rule of role.rules) out.push({ role, rule });
  }
  return out;
}

function triples(granted) {
  const set = new Set();
  for (const { rule } of granted) {
    for (const g of rule.apiGroups) for (const r of rule.resources) for (const v of rule.verbs) set.add(`${g}|${r}|${v}`);
  }
  return set;
}

function assertNoWildcards(granted) {
  for (const { role, rule } of granted) {
    for (const field of ["apiGroups", "resources", "verbs", "resourceNames"]) {
      assert.ok(!(rule[field] ?? []).some((x) => x.includes("*")), `${role.kind} ${role.metadata.name} has a wildcard in ${field}`);
    }
    assert.equal(rule.nonResourceURLs, undefined, `${role.metadata.name} grants nonResourceURLs`);
  }
}

const diff = (a, b) => [...a].filter((x) => !b.has(x)).sort();

function assertExactly(granted, expected) {
  const got = triples(granted);
  const want = new Set(expected);
  assert.deepEqual({ missing: diff(want, got), extra: diff(got, want) }, { missing: [], extra: [] },
    "chart RBAC differs from what controller/ calls (node tests/helm/controller_rbac.mjs lists it)");
}

const derived = deriveControllerRules(ROOT);
const isLease = (t) => t.startsWith("coordination.k8s.io|leases|");

test("the derivation finds the controller's calls", () => {
  // Sanity: the extraction sees the reconciler, the informers and leader election.
  for (const t of ["serving.orca.dev|inferencedeployments|watch", "serving.orca.dev|inferencedeployments/status|update",
    "apps|statefulsets|patch", "|pods|delete", "|events|create", "coordination.k8s.io|leases|update"]) {
    assert.ok(derived.rules.includes(t), `derived rules lack ${t}`);
  }
});

test("all namespaces: a ClusterRole with exactly the controller's calls, the Lease in a Role", () => {
  const objects = render();
  const granted = grantedTo(objects);
  assertNoWildcards(granted);
  assertExactly(granted, derived.rules);
  for (const { role, rule } of granted) {
    const lease = rule.resources.includes("leases");
    if (lease) {
      assert.equal(role.kind, "Role", "Lease rights must be namespaced");
      assert.equal(role.metadata.namespace, RELEASE_NS);
    } else {
      assert.equal(role.kind, "ClusterRole", `${rule.resources} should be granted cluster-wide when watching all namespaces`);
    }
  }
  // get and update of the Lease are limited to the one Lease the controller uses.
  const args = find(objects, "Deployment").spec.template.spec.containers[0].args;
  const id = args.find((a) => a.startsWith("--leader-election-id=")).split("=")[1];
  for (const { rule } of granted.filter(({ rule }) => rule.resources.includes("leases"))) {
    if (rule.verbs.some((v) => v !== "create")) assert.deepEqual(rule.resourceNames, [id]);
  }
});

test("one watched namespace: only namespaced Roles", () => {
  const objects = render({ set: ["controller.watchNamespace=serving"] });
  const granted = grantedTo(objects);
  assertNoWildcards(granted);
  assertExactly(granted, derived.rules);
  for (const { role, rule } of granted) {
    assert.equal(role.kind, "Role");
    assert.equal(role.metadata.namespace, rule.resources.includes("leases") ? RELEASE_NS : "serving");
  }
});

test("without leader election no Lease rights", () => {
  const objects = render({ set: ["controller.replicas=1", "controller.leaderElection.enabled=false"] });
  const granted = grantedTo(objects);
  assertExactly(granted, derived.rules.filter((t) => !isLease(t)));
});

test("aggregated user roles are bound to nobody by the chart", () => {
  const objects = render();
  const names = new Set(grantedTo(objects).map(({ role }) => role.metadata.name));
  const aggregated = objects.filter((o) => o.kind === "ClusterRole" && Object.keys(o.metadata.labels ?? {}).some((l) => l.startsWith("rbac.authorization.k8s.io/aggregate-to-")));
  assert.equal(aggregated.length, 2);
  for (const r of aggregated) assert.ok(!names.has(r.metadata.name));
  assert.equal(render({ set: ["rbac.aggregateToDefaultRoles=false"] }).filter((o) => o.kind === "ClusterRole").length, 1);
});

// The extraction itself: it must see new calls and refuse what it cannot resolve.
function fakeController(files) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "orca-rbac-"));
  for (const f of ["client/kube_client.h", "client/resources.cc", "builders/build_services.cc", "builders/build_workloads.cc"]) {
    fs.mkdirSync(path.dirname(path.join(root, "controller", f)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, "controller", f), path.join(root, "controller", f));
  }
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(root, "controller", name), text);
  return root;
}

test("a new call shows up as a rule the chart lacks", () => {
  const root = fakeController({ "x.cc": "void F(KubeClient* client) { client->Delete(resources::kLease, ns, n, p); }\n" });
  assert.deepEqual(deriveControllerRules(root).rules.filter((r) => r.includes("leases")), ["coordination.k8s.io|leases|delete"]);
});

test("an unresolvable resource type is an error, not a silent pass", () => {
  const root = fakeController({ "x.cc": "void F(KubeClient* client, const ResourceType& t) { client->Get(t, ns, n); }\n" });
  assert.throws(() => deriveControllerRules(root), /cannot resolve the resource type "t"/);
});

test("a KubeClient method without a verb mapping is an error", () => {
  const root = fakeController({});
  const h = path.join(root, "controller/client/kube_client.h");
  fs.writeFileSync(h, fs.readFileSync(h, "utf8").replace("class KubeClient {\n public:",
    "class KubeClient {\n public:\n  virtual absl::Status Evict(const ResourceType& type) = 0;"));
  assert.throws(() => deriveControllerRules(root), /KubeClient::Evict has no RBAC verb mapping/);
});
