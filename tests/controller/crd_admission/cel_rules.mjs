// The x-kubernetes-validations rules of a structural schema, compiled and evaluated
// with a real CEL implementation (npm @marcbachmann/cel-js) the way
// apiextensions-apiserver does (pkg/apiserver/schema/cel):
//   - compile: `self` is declared with the type the schema gives the node (objects with
//     properties are typed objects, so a misspelled field is a compile error; integers
//     are int, numbers double, additionalProperties maps, int-or-string and
//     preserve-unknown-fields dyn; the resource root also has apiVersion, kind and
//     metadata.{name,generateName}); a rule must type-check to bool;
//   - evaluate: on every present node, top-down, with `self` bound to the node's value
//     converted by its schema (integers -> CEL int, numbers -> double). A missing field
//     is an error ("no such key: tensor"), as in the apiserver; has() tests presence.
//     A rule that is false yields the rule's own message; one that fails to evaluate
//     yields "<error> evaluating rule: <message>".
// The Kubernetes CEL library functions our rules use (has, size, matches, startsWith,
// endsWith, contains, `in`, lowerAscii, ...) are CEL standard or string extensions that
// cel-js implements; no cost estimation (oldSelf and transition rules are not needed).
import { Environment } from "@marcbachmann/cel-js";
import { child, index, invalid, key } from "./field_path.mjs";

const RESERVED = new Set(
  "true false null in as break const continue else for function if import let loop package namespace return var void while".split(
    " ",
  ),
);
const isIdentifier = (name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !RESERVED.has(name);

// Returns the first line of a cel-js error, spelled as cel-go spells runtime errors.
function celError(e) {
  const line = String(e?.message ?? e).split("\n")[0].trim();
  return line.replace(/^No such key/, "no such key");
}

// Registers in `env` the CEL types of schema `s` and returns the type of `s`.
function declType(env, s, counter, { isResourceRoot = false } = {}) {
  if (!s) return "dyn";
  if (s["x-kubernetes-int-or-string"]) return "dyn";
  switch (s.type) {
    case "integer":
      return "int";
    case "number":
      return "double";
    case "string":
      return "string";
    case "boolean":
      return "bool";
    case "array":
      return `list<${declType(env, s.items, counter)}>`;
    case "object": {
      if (!s.properties && !isResourceRoot) {
        if (s.additionalProperties && typeof s.additionalProperties === "object") {
          return `map<string, ${declType(env, s.additionalProperties, counter)}>`;
        }
        return s["x-kubernetes-preserve-unknown-fields"] ? "dyn" : "map<string, dyn>";
      }
      const fields = {};
      for (const [name, sub] of Object.entries(s.properties ?? {})) {
        if (isIdentifier(name)) fields[name] = declType(env, sub, counter);
      }
      if (isResourceRoot) {
        fields.apiVersion = "string";
        fields.kind = "string";
        const meta = `K8sObjectMeta${counter.n++}`;
        env.registerType(meta, { fields: { name: "string", generateName: "string" } });
        fields.metadata = meta;
      }
      const name = `K8sObject${counter.n++}`;
      env.registerType(name, { fields });
      return name;
    }
    default:
      return "dyn";
  }
}

// Converts JSON `v` to the CEL value the apiserver binds for schema `s`.
export function toCel(v, s, { isResourceRoot = false } = {}) {
  if (v === null || v === undefined) return null;
  if (!s || s["x-kubernetes-preserve-unknown-fields"] && !s.properties && !s.type) return generic(v);
  if (s["x-kubernetes-int-or-string"]) return Number.isInteger(v) ? BigInt(v) : v;
  if (s.type === "integer" && typeof v === "number") return BigInt(v);
  if (s.type === "number" && typeof v === "number") return v;
  if (Array.isArray(v)) return v.map((item) => toCel(item, s.items));
  if (typeof v === "object") {
    const out = {};
    for (const [k, sub] of Object.entries(v)) {
      if (isResourceRoot && k === "metadata") {
        out.metadata = {};
        for (const f of ["name", "generateName"]) if (sub && f in sub) out.metadata[f] = sub[f];
      } else if (s.properties && k in s.properties) out[k] = toCel(sub, s.properties[k]);
      else if (s.additionalProperties && typeof s.additionalProperties === "object") {
        out[k] = toCel(sub, s.additionalProperties);
      } else out[k] = generic(sub);
    }
    return out;
  }
  return v;
}

function generic(v) {
  if (typeof v === "number") return Number.isInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(generic);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, generic(x)]));
  return v;
}

const evaluator = new Environment().registerVariable("self", "dyn");
const compiled = new WeakMap(); // schema node -> [{rule, message, program?, error?}]

// Returns the compiled rules of schema node `s` (cached per node).
export function compileNode(s, { isResourceRoot = false } = {}) {
  if (compiled.has(s)) return compiled.get(s);
  const rules = s["x-kubernetes-validations"] ?? [];
  let checker = null;
  if (rules.length > 0) {
    checker = new Environment();
    const selfType = declType(checker, s, { n: 0 }, { isResourceRoot });
    checker = checker.clone().registerVariable("self", selfType);
  }
  const out = rules.map((r) => {
    const entry = { rule: r.rule, message: r.message };
    if (typeof r.rule !== "string" || r.rule.trim() === "") {
      entry.error = "rule is not specified";
      return entry;
    }
    const result = checker.check(r.rule);
    if (!result.valid) entry.error = `compilation failed: ERROR: <input>: ${celError(result.error)}`;
    else if (result.type !== "bool" && result.type !== "dyn") entry.error = "cel expression must evaluate to a bool";
    else entry.program = evaluator.parse(r.rule);
    return entry;
  });
  compiled.set(s, out);
  return out;
}

// Returns the errors of compiling every rule of schema `s` (at schema path `path`, for
// CRD creation): compile errors, non-bool rules, messages with line breaks.
export function compileErrors(s, path, { isResourceRoot = false } = {}) {
  const errors = [];
  (function visit(node, p, isRoot) {
    if (!node || typeof node !== "object") return;
    compileNode(node, { isResourceRoot: isRoot }).forEach((c, i) => {
      const at = index(child(p, "x-kubernetes-validations"), i);
      if (c.error) errors.push(invalid(child(at, "rule"), c.rule, c.error));
      if (c.message !== undefined && /\n/.test(c.message.trim())) {
        errors.push(invalid(child(at, "message"), c.message, "message must not contain line breaks"));
      }
    });
    for (const [k, sub] of Object.entries(node.properties ?? {})) visit(sub, key(child(p, "properties"), k), false);
    if (node.items) visit(node.items, child(p, "items"), false);
    if (node.additionalProperties && typeof node.additionalProperties === "object") {
      visit(node.additionalProperties, child(p, "additionalProperties"), false);
    }
  })(s, path, isResourceRoot);
  return errors;
}

const ruleString = (c) => (c.message ? c.message.trim() : c.rule.trim());

// Returns the field errors of evaluating every rule of `s` and of its descendants on
// `value` (at field path `path`), top-down over the present nodes.
export function validateCel(s, value, path, { isResourceRoot = false } = {}) {
  const errors = [];
  (function visit(node, v, p, isRoot) {
    if (!node || v === null || v === undefined) return;
    const type = node.type ?? (node["x-kubernetes-int-or-string"] ? "integer-or-string" : "object");
    const rules = compileNode(node, { isResourceRoot: isRoot });
    if (rules.length > 0) {
      const self = toCel(v, node, { isResourceRoot: isRoot });
      for (const c of rules) {
        if (c.error) {
          errors.push(invalid(p, type, `rule compile error: ${c.error}`));
          continue;
        }
        let result;
        try {
          result = c.program({ self });
        } catch (e) {
          errors.push(invalid(p, type, `${celError(e)} evaluating rule: ${ruleString(c)}`));
          continue;
        }
        if (result !== true) {
          errors.push(invalid(p, type, c.message ? c.message.trim() : `failed rule: ${c.rule.trim()}`));
        }
      }
    }
    if (Array.isArray(v)) {
      v.forEach((item, i) => visit(node.items, item, index(p, i), false));
    } else if (typeof v === "object") {
      for (const [k, sub] of Object.entries(v)) {
        if (node.properties && k in node.properties) visit(node.properties[k], sub, child(p, k), false);
        else if (node.additionalProperties && typeof node.additionalProperties === "object") {
          visit(node.additionalProperties, sub, key(p, k), false);
        }
      }
    }
  })(s, value, path, isResourceRoot);
  return errors;
}
