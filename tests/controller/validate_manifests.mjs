// Validates orca's Kubernetes manifests with the official schemas.
//
//   node tests/controller/validate_manifests.mjs DIR
//
// DIR (written by schema_test.cc) holds crd.json, examples/*.json (InferenceDeployments),
// invalid/*.json (InferenceDeployments that must fail the CRD schema) and rendered/*.json
// (arrays of objects from `orca-controller render`). Checks:
//   - the CRD is a valid apiextensions.k8s.io/v1 CustomResourceDefinition (kubernetes-models);
//   - every example validates against the CRD's own openAPIV3Schema (ajv, after converting
//     the structural schema), and its defaulted form is written to defaulted/*.json;
//   - every invalid example is rejected;
//   - every rendered object validates against its kind's schema (kubernetes-models,
//     @kubernetes-models/keda for ScaledObjects).
// Exits 1 with one line per problem.
import fs from "node:fs";
import path from "node:path";
import Ajv from "ajv";
import addFormats from "ajv-formats";

const dir = process.argv[2];
const problems = [];
const read = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const list = (sub) =>
  fs.existsSync(path.join(dir, sub))
    ? fs.readdirSync(path.join(dir, sub)).filter((f) => f.endsWith(".json")).sort()
    : [];

async function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "keda.sh") {
    return (await import(`@kubernetes-models/keda/keda.sh/${version}/${kind}`))[kind];
  }
  const prefix = group ? `${group}/${version}` : version;
  return (await import(`kubernetes-models/${prefix}/${kind}`))[kind];
}

async function validateObject(obj, where) {
  let Model;
  try {
    Model = await modelFor(obj.apiVersion, obj.kind);
  } catch (e) {
    problems.push(`${where}: no schema for ${obj.apiVersion} ${obj.kind}: ${e.message}`);
    return;
  }
  try {
    new Model(obj).validate();
  } catch (e) {
    problems.push(`${where}: ${obj.kind} ${obj.metadata?.name}: ${e.message}`);
  }
}

// Structural schema -> JSON Schema: drop x-kubernetes-* and close objects that list
// their properties (the API server prunes unknown fields; here they are typos).
function toJsonSchema(s) {
  if (Array.isArray(s)) return s.map(toJsonSchema);
  if (s === null || typeof s !== "object") return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith("x-kubernetes-")) continue;
    out[k] = k === "properties" ? Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, toJsonSchema(ps)])) : toJsonSchema(v);
  }
  if (s.type === "object" && s.properties && !s["x-kubernetes-preserve-unknown-fields"] && s.additionalProperties === undefined) {
    out.additionalProperties = false;
  }
  return out;
}

const crd = read(path.join(dir, "crd.json"));
await validateObject(crd, "crd");
const version = crd.spec.versions.find((v) => v.name === "v1alpha1");
const schema = toJsonSchema(version.schema.openAPIV3Schema);
schema.properties.metadata = { type: "object" };
const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });
addFormats(ajv);
ajv.addFormat("int32", true);
ajv.addFormat("int64", true);
const validate = ajv.compile(schema);

// Sanity: the validators are live (a broken object must fail).
try {
  const Pod = await modelFor("v1", "Pod");
  new Pod({ metadata: { name: "x" }, spec: { containers: [{ name: "c", ports: [{ containerPort: "x" }] }] } }).validate();
  problems.push("sanity: kubernetes-models accepted a Pod with a string containerPort");
} catch (e) { /* expected */ }

fs.mkdirSync(path.join(dir, "defaulted"), { recursive: true });
let checked = 0;
for (const f of list("examples")) {
  const cr = read(path.join(dir, "examples", f));
  const copy = structuredClone(cr);
  if (!validate(copy)) {
    problems.push(`examples/${f}: ${ajv.errorsText(validate.errors)}`);
  }
  fs.writeFileSync(path.join(dir, "defaulted", f), JSON.stringify(copy, null, 2));
  checked++;
}
for (const f of list("invalid")) {
  const cr = read(path.join(dir, "invalid", f));
  if (validate(cr)) problems.push(`invalid/${f}: accepted by the CRD schema, expected a rejection`);
  checked++;
}
for (const f of list("rendered")) {
  const objects = read(path.join(dir, "rendered", f));
  for (const obj of objects) {
    await validateObject(obj, `rendered/${f}`);
    checked++;
  }
}
for (const p of problems) console.log(p);
console.log(`${checked} documents checked, ${problems.length} problems`);
process.exit(problems.length === 0 ? 0 : 1);
