// What kube-apiserver does with a CustomResourceDefinition and its custom resources,
// without a cluster:
//   createCrd(crd)     -> the errors the apiserver would reject the CRD with: structural
//                         schema rules, rule compilation, and every `default` validated
//                         against its schema (OpenAPI) and then against the CEL rules of
//                         its node and descendants AS WRITTEN (no nested defaulting
//                         first), as pkg/apiserver/schema/defaulting/validation.go does;
//   admit(crd, cr)     -> prune unknown fields, apply defaults top-down, validate with
//                         the OpenAPI schema, then evaluate every CEL rule; returns the
//                         stored object, the pruned paths and the errors, each printed
//                         as the apiserver prints it (`spec.parallelism: Invalid value:
//                         "object": <the rule's message>`).
// Pure functions of their inputs; no I/O.
import { compileErrors, validateCel } from "./cel_rules.mjs";
import { applyDefaults, prune } from "./defaulting.mjs";
import { child, index, key, root } from "./field_path.mjs";
import { validateValue } from "./openapi_validation.mjs";
import { structuralErrors } from "./structural.mjs";

// As the apiserver's hasBlockingErr: a type or enum error skips the CEL rules.
const BLOCKING = /must be of type|Unsupported value/;
// The error the apiserver adds then (field.Invalid(nil, nil, ...)).
export const NOT_CHECKED =
  "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

// Returns [{name, schema, path}] for each version of `crd` that has a schema.
function versions(crd) {
  return (crd?.spec?.versions ?? []).map((v, i) => ({
    name: v.name,
    schema: v.schema?.openAPIV3Schema,
    path: child(child(index(child(child(root, "spec"), "versions"), i), "schema"), "openAPIV3Schema"),
  }));
}

// Returns the errors kube-apiserver would reject CRD `crd` with (empty when accepted).
export function createCrd(crd) {
  const errors = [];
  if (crd?.apiVersion !== "apiextensions.k8s.io/v1") errors.push(`apiVersion: must be apiextensions.k8s.io/v1`);
  if (crd?.kind !== "CustomResourceDefinition") errors.push(`kind: must be CustomResourceDefinition`);
  const vs = versions(crd);
  if (vs.length === 0) errors.push("spec.versions: Required value");
  for (const v of vs) {
    if (!v.schema) {
      errors.push(`${v.name}: schema.openAPIV3Schema: Required value`);
      continue;
    }
    errors.push(...structuralErrors(v.schema, v.path));
    const compile = compileErrors(v.schema, v.path, { isResourceRoot: true });
    errors.push(...compile);
    // rules that do not compile are reported once, not again for every default
    errors.push(...defaultErrors(v.schema, v.path, { insideMeta: false, withCel: compile.length === 0 }));
  }
  return errors;
}

// Validates every `default` under `s` against its node's schema, then (if that passes
// and `withCel`) against the CEL rules of the node and its descendants, on the default
// as written.
function defaultErrors(s, path, { insideMeta, withCel }) {
  const errors = [];
  if (!s || typeof s !== "object") return errors;
  if (s.default !== undefined && !insideMeta) {
    const at = child(path, "default");
    const valueErrs = validateValue(s, s.default, at);
    if (valueErrs.length > 0) errors.push(...valueErrs);
    else if (withCel) errors.push(...validateCel(s, structuredClone(s.default), at));
  }
  // additionalProperties are not followed: defaults are forbidden there (structural.mjs)
  if (s.items) errors.push(...defaultErrors(s.items, child(path, "items"), { insideMeta, withCel }));
  for (const [k, sub] of Object.entries(s.properties ?? {})) {
    const at = key(child(path, "properties"), k);
    errors.push(...defaultErrors(sub, at, { insideMeta: insideMeta || k === "metadata", withCel }));
  }
  return errors;
}

// Admits custom resource `cr` as kube-apiserver would for CRD `crd`: returns
// {object (pruned and defaulted), pruned (printed paths of dropped fields), errors}.
export function admit(crd, cr) {
  const group = crd?.spec?.group;
  const kind = crd?.spec?.names?.kind;
  const [g, ver] = String(cr?.apiVersion ?? "").split("/");
  const v = versions(crd).find((x) => x.name === ver);
  if (g !== group || !v || !crd.spec.versions.find((x) => x.name === ver)?.served) {
    return { object: cr, pruned: [], errors: [`apiVersion: no served version ${cr?.apiVersion} of ${group}`] };
  }
  if (cr.kind !== kind) return { object: cr, pruned: [], errors: [`kind: must be ${kind}`] };
  const object = structuredClone(cr);
  const pruned = prune(v.schema, object, { isResourceRoot: true });
  applyDefaults(v.schema, object);
  const errors = [];
  if (!object.metadata?.name && !object.metadata?.generateName) {
    errors.push("metadata.name: Required value: name or generateName is required");
  }
  errors.push(...validateValue(v.schema, object, root));
  if (errors.some((e) => BLOCKING.test(e))) errors.push(NOT_CHECKED);
  else errors.push(...validateCel(v.schema, object, root, { isResourceRoot: true }));
  return { object, pruned, errors };
}
