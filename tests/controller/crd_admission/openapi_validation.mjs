// OpenAPI value validation of a custom resource against a structural schema, as
// kube-apiserver does it (k8s.io/kube-openapi/pkg/validation/validate, converted to
// field errors by apiextensions-apiserver/pkg/apiserver/validation): type, nullable,
// enum, minimum/maximum (and exclusive), minLength/maxLength, pattern, required,
// minItems/maxItems, maxProperties, format int32/int64, anyOf of int-or-string.
// It does not evaluate x-kubernetes-validations (cel_rules.mjs does).
import { child, index, invalid, key, notSupported, pathString, required, tooLong, tooMany } from "./field_path.mjs";

const INT32 = [-(2 ** 31), 2 ** 31 - 1];

// Returns the JSON type name of `v` in OpenAPI terms.
function jsonType(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v; // string, boolean, object
}

// Whether `v` satisfies OpenAPI `type` (integers are numbers too).
function typeMatches(type, v) {
  const t = jsonType(v);
  return t === type || (type === "number" && t === "integer");
}

// "spec.replicas" as kube-openapi names a value in its messages ("<name> in body ...").
const bodyName = (path) => (path.length === 0 ? "body" : pathString(path));

// Returns the field errors of `value` (at `path`) against structural schema `s`.
export function validateValue(s, value, path) {
  const errors = [];
  walk(s, value, path, errors);
  return errors;
}

function walk(s, v, path, errors) {
  if (!s) return;
  const name = bodyName(path);
  if (v === null) {
    if (!s.nullable) errors.push(invalid(path, null, `${name} in body must be of type ${s.type ?? "object"}: "null"`));
    return;
  }
  if (s["x-kubernetes-int-or-string"]) {
    if (!(jsonType(v) === "integer" || jsonType(v) === "string")) {
      errors.push(invalid(path, v, `${name} in body must be of type integer,string: "${jsonType(v)}"`));
      return;
    }
  } else if (s.type && !typeMatches(s.type, v)) {
    errors.push(invalid(path, v, `${name} in body must be of type ${s.type}: "${jsonType(v)}"`));
    return;
  }
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) {
    errors.push(notSupported(path, v, s.enum));
  }
  if (typeof v === "number") numeric(s, v, path, name, errors);
  if (typeof v === "string") text(s, v, path, name, errors);
  if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) errors.push(tooMany(path, v.length, s.maxItems));
    if (s.minItems !== undefined && v.length < s.minItems) {
      errors.push(invalid(path, v.length, `${name} in body should have at least ${s.minItems} items`));
    }
    v.forEach((item, i) => walk(s.items, item, index(path, i), errors));
    return;
  }
  if (typeof v === "object") {
    for (const r of s.required ?? []) {
      if (!(r in v)) errors.push(required(child(path, r)));
    }
    if (s.maxProperties !== undefined && Object.keys(v).length > s.maxProperties) {
      errors.push(tooMany(path, Object.keys(v).length, s.maxProperties));
    }
    for (const [k, sub] of Object.entries(v)) {
      if (s.properties && k in s.properties) walk(s.properties[k], sub, child(path, k), errors);
      else if (s.additionalProperties && typeof s.additionalProperties === "object") {
        walk(s.additionalProperties, sub, key(path, k), errors);
      }
    }
  }
}

function numeric(s, v, path, name, errors) {
  if (s.minimum !== undefined && (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum)) {
    const rel = s.exclusiveMinimum ? "greater than" : "greater than or equal to";
    errors.push(invalid(path, v, `${name} in body should be ${rel} ${s.minimum}`));
  }
  if (s.maximum !== undefined && (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum)) {
    const rel = s.exclusiveMaximum ? "less than" : "less than or equal to";
    errors.push(invalid(path, v, `${name} in body should be ${rel} ${s.maximum}`));
  }
  if (s.format === "int32" && (v < INT32[0] || v > INT32[1])) {
    errors.push(invalid(path, v, `${name} in body must be of type int32: "${v}"`));
  }
  if (s.format === "int64" && !Number.isSafeInteger(v)) {
    errors.push(invalid(path, v, `${name} in body must be of type int64: "${v}"`));
  }
}

function text(s, v, path, name, errors) {
  const chars = [...v].length; // kube-openapi counts runes
  if (s.maxLength !== undefined && chars > s.maxLength) errors.push(tooLong(path, s.maxLength));
  if (s.minLength !== undefined && chars < s.minLength) {
    errors.push(invalid(path, v, `${name} in body should be at least ${s.minLength} chars long`));
  }
  if (s.pattern !== undefined && !new RegExp(s.pattern, "u").test(v)) {
    errors.push(invalid(path, v, `${name} in body should match '${s.pattern}'`));
  }
  if (s.format === "date-time" && Number.isNaN(Date.parse(v))) {
    errors.push(invalid(path, v, `${name} in body must be of type date-time: "${v}"`));
  }
}
