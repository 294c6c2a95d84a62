// Pruning and structural defaulting of a custom resource, as kube-apiserver applies them
// when it decodes a request (apiextensions-apiserver pkg/apiserver/schema/pruning and
// pkg/apiserver/schema/defaulting/algorithm.go):
//   - prune: fields not declared by the schema are dropped (kept under
//     x-kubernetes-preserve-unknown-fields; apiVersion, kind and metadata are always
//     kept at the resource root);
//   - default, top-down: for every object, each declared property that is missing (or a
//     null that is not nullable) gets a deep copy of its `default`; then every present
//     property, including the ones just defaulted, is defaulted in turn — so an object
//     that came from a default gets its own nested defaults. A null that is not nullable
//     and has no default is dropped.
// Both mutate the value in place. Pure functions of (schema, value); no I/O.
import { child, index, key, pathString } from "./field_path.mjs";

// Drops unknown fields from `value` in place and returns their printed paths.
export function prune(s, value, { isResourceRoot = false } = {}) {
  const pruned = [];
  pruneNode(s, value, [], isResourceRoot, pruned);
  return pruned;
}

function pruneNode(s, v, path, isRoot, pruned) {
  if (!s || v === null || typeof v !== "object") return;
  if (Array.isArray(v)) {
    v.forEach((item, i) => pruneNode(s.items, item, index(path, i), false, pruned));
    return;
  }
  for (const k of Object.keys(v)) {
    if (isRoot && (k === "apiVersion" || k === "kind" || k === "metadata")) continue;
    if (s.properties && k in s.properties) {
      pruneNode(s.properties[k], v[k], child(path, k), false, pruned);
    } else if (s.additionalProperties && typeof s.additionalProperties === "object") {
      pruneNode(s.additionalProperties, v[k], key(path, k), false, pruned);
    } else if (!s["x-kubernetes-preserve-unknown-fields"] && s.additionalProperties !== true) {
      pruned.push(pathString(child(path, k)));
      delete v[k];
    }
  }
}

const isNonNullableNull = (v, s) => v === null && !s.nullable;

// Applies the schema's defaults to `value` in place, top-down, as the apiserver does.
export function applyDefaults(s, value) {
  if (!s || value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    for (const item of value) applyDefaults(s.items, item);
    return;
  }
  for (const [k, prop] of Object.entries(s.properties ?? {})) {
    if (prop.default === undefined) {
      if (k in value && isNonNullableNull(value[k], prop)) delete value[k]; // PruneNonNullableNulls
      continue;
    }
    if (!(k in value) || isNonNullableNull(value[k], prop)) value[k] = structuredClone(prop.default);
  }
  for (const [k, v] of Object.entries(value)) {
    if (s.properties && k in s.properties) applyDefaults(s.properties[k], v);
    else if (s.additionalProperties && typeof s.additionalProperties === "object") {
      applyDefaults(s.additionalProperties, v);
    }
  }
}
