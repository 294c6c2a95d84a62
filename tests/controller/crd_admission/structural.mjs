// The structural-schema rules kube-apiserver enforces when a CRD is created
// (apiextensions-apiserver pkg/apiserver/schema/validation.go and
// pkg/apis/apiextensions/validation), the ones that matter for orca's CRD:
//   - every node has a non-empty `type`, unless x-kubernetes-int-or-string or
//     x-kubernetes-preserve-unknown-fields says otherwise; arrays have `items`;
//   - int-or-string nodes have no `type`, and anyOf/allOf only of {type: integer} and
//     {type: string};
//   - `properties` and `additionalProperties` are mutually exclusive;
//   - inside anyOf/allOf/oneOf/not: no type, default, description, nullable,
//     additionalProperties or x-kubernetes-* extensions;
//   - at the resource root, `metadata` may only constrain `name` and `generateName`,
//     and the root has no `default`;
//   - `default` is not allowed under additionalProperties or under `metadata`, and must
//     not carry fields its schema would prune;
//   - x-kubernetes-list-type: map needs x-kubernetes-list-map-keys naming required (or
//     defaulted) scalar fields of its items.
// Returns field errors with the CRD's schema paths.
import { child, forbidden, index, invalid, key, required } from "./field_path.mjs";
import { prune } from "./defaulting.mjs";

const JUNCTORS = ["anyOf", "allOf", "oneOf", "not"];
const FORBIDDEN_IN_JUNCTORS = ["type", "default", "description", "nullable", "additionalProperties", "title"];

// Returns the structural-schema errors of CRD root schema `s` at schema path `path`.
export function structuralErrors(s, path) {
  const errors = [];
  if (s?.default !== undefined) errors.push(forbidden(child(path, "default"), "must not be set at the root"));
  node(s, path, { isRoot: true, underAdditional: false, underMeta: false }, errors);
  return errors;
}

function node(s, path, ctx, errors) {
  if (!s || typeof s !== "object") return;
  const intOrString = s["x-kubernetes-int-or-string"] === true;
  const preserve = s["x-kubernetes-preserve-unknown-fields"] === true;
  if (intOrString) {
    if (s.type) errors.push(forbidden(child(path, "type"), "must be empty to be structural with x-kubernetes-int-or-string"));
    for (const j of ["anyOf", "allOf"]) {
      if (s[j] && !isIntOrStringJunctor(s[j])) {
        errors.push(forbidden(child(path, j), "must be [{type: integer}, {type: string}] with x-kubernetes-int-or-string"));
      }
    }
  } else if (!s.type && !preserve) {
    errors.push(required(child(path, "type"), "must not be empty for specified object fields"));
  }
  if (s.type === "array" && !s.items) errors.push(required(child(path, "items"), "must be specified"));
  if (s.properties && s.additionalProperties !== undefined && s.additionalProperties !== false) {
    errors.push(forbidden(child(path, "additionalProperties"), "additionalProperties and properties are mutual exclusive"));
  }
  for (const j of JUNCTORS) {
    const list = j === "not" ? (s.not ? [s.not] : []) : (s[j] ?? []);
    list.forEach((sub, i) => junctor(sub, j === "not" ? child(path, j) : index(child(path, j), i), errors));
  }
  if (s.default !== undefined) {
    if (ctx.underAdditional) errors.push(forbidden(child(path, "default"), "must not be set inside additionalProperties"));
    if (ctx.underMeta) errors.push(forbidden(child(path, "default"), "must not be set inside metadata"));
    const copy = structuredClone(s.default);
    if (copy !== null && typeof copy === "object" && prune(s, copy).length > 0) {
      errors.push(invalid(child(path, "default"), s.default, "must not have unknown fields"));
    }
  }
  if (s["x-kubernetes-list-type"] === "map") listMap(s, path, errors);
  if (ctx.isRoot && s.properties?.metadata) metadata(s.properties.metadata, key(child(path, "properties"), "metadata"), errors);
  for (const [k, sub] of Object.entries(s.properties ?? {})) {
    const underMeta = ctx.underMeta || (ctx.isRoot && k === "metadata");
    node(sub, key(child(path, "properties"), k), { isRoot: false, underAdditional: ctx.underAdditional, underMeta }, errors);
  }
  if (s.items) node(s.items, child(path, "items"), { ...ctx, isRoot: false }, errors);
  if (s.additionalProperties && typeof s.additionalProperties === "object") {
    node(s.additionalProperties, child(path, "additionalProperties"), { ...ctx, isRoot: false, underAdditional: true }, errors);
  }
}

function isIntOrStringJunctor(list) {
  const types = list.map((x) => JSON.stringify(x)).sort();
  return JSON.stringify(types) === JSON.stringify(['{"type":"integer"}', '{"type":"string"}']);
}

function junctor(s, path, errors) {
  if (!s || typeof s !== "object") return;
  // {type: integer}/{type: string} are allowed as the int-or-string pattern only
  for (const f of FORBIDDEN_IN_JUNCTORS) {
    if (f === "type" && Object.keys(s).length === 1) continue;
    if (s[f] !== undefined) errors.push(forbidden(child(path, f), "must not be specified in a nested value validation"));
  }
  for (const k of Object.keys(s)) {
    if (k.startsWith("x-kubernetes-")) errors.push(forbidden(child(path, k), "must be false to be structural"));
  }
}

function metadata(s, path, errors) {
  for (const k of Object.keys(s.properties ?? {})) {
    if (k !== "name" && k !== "generateName") {
      errors.push(forbidden(key(child(path, "properties"), k), 'must not be specified: only "name" and "generateName" may be constrained'));
    }
  }
  if (s.type !== undefined && s.type !== "object") errors.push(invalid(child(path, "type"), s.type, "must be object"));
}

function listMap(s, path, errors) {
  const keys = s["x-kubernetes-list-map-keys"];
  if (!Array.isArray(keys) || keys.length === 0) {
    errors.push(required(child(path, "x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"));
    return;
  }
  const items = s.items ?? {};
  for (const k of keys) {
    const prop = items.properties?.[k];
    if (!prop) {
      errors.push(invalid(child(path, "x-kubernetes-list-map-keys"), keys, `entries must all be names of item properties: ${k}`));
    } else if (!(items.required ?? []).includes(k) && prop.default === undefined) {
      errors.push(invalid(child(path, "x-kubernetes-list-map-keys"), keys, `entries must all be required or have a default: ${k}`));
    } else if (!["string", "integer", "boolean", "number"].includes(prop.type)) {
      errors.push(invalid(child(path, "x-kubernetes-list-map-keys"), keys, `must be scalar typed: ${k}`));
    }
  }
}
