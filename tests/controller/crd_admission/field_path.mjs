// Field paths and field errors spelled as k8s.io/apimachinery/pkg/util/validation/field
// prints them, so that messages read exactly like kube-apiserver's:
//   spec.parallelism: Invalid value: "object": <message>
//   spec.model: Required value
//   spec.engine.kvPolicy: Unsupported value: "lru": supported values: "paged", "reserve"
// Paths are immutable arrays of steps; `root` is the empty path (printed `<nil>`).

export const root = Object.freeze([]);

// Returns `path` extended by the named field `name` (printed `.name`).
export const child = (path, name) => [...path, { field: name }];
// Returns `path` extended by the map key `key` (printed `[key]`).
export const key = (path, k) => [...path, { key: k }];
// Returns `path` extended by the list index `i` (printed `[i]`).
export const index = (path, i) => [...path, { index: i }];

// Returns the printed form of `path`, `<nil>` for the root.
export function pathString(path) {
  if (path.length === 0) return "<nil>";
  let out = "";
  for (const step of path) {
    if ("field" in step) out += out === "" ? step.field : `.${step.field}`;
    else if ("key" in step) out += `[${step.key}]`;
    else out += `[${step.index}]`;
  }
  return out;
}

// Returns `value` as field.Error prints a bad value: strings quoted, numbers and booleans
// bare, anything else as JSON.
export function valueString(value) {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return String(value);
  }
  if (value === null || value === undefined) return "null";
  return JSON.stringify(value);
}

// field.Invalid: "<path>: Invalid value: <value>: <detail>".
export const invalid = (path, value, detail) =>
  `${pathString(path)}: Invalid value: ${valueString(value)}: ${detail}`;
// field.Required: "<path>: Required value[: <detail>]".
export const required = (path, detail = "") =>
  `${pathString(path)}: Required value${detail ? `: ${detail}` : ""}`;
// field.NotSupported: "<path>: Unsupported value: <value>: supported values: ...".
export const notSupported = (path, value, allowed) =>
  `${pathString(path)}: Unsupported value: ${valueString(value)}: supported values: ${allowed
    .map((a) => valueString(a))
    .join(", ")}`;
// field.Forbidden: "<path>: Forbidden: <detail>".
export const forbidden = (path, detail) => `${pathString(path)}: Forbidden: ${detail}`;
// field.TooLong: "<path>: Too long: may not be more than <n> bytes".
export const tooLong = (path, max) => `${pathString(path)}: Too long: may not be more than ${max} bytes`;
// field.TooMany: "<path>: Too many: <n>: must have at most <max> items".
export const tooMany = (path, n, max) =>
  `${pathString(path)}: Too many: ${n}: must have at most ${max} items`;
