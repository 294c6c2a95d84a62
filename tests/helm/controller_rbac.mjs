// Derives the RBAC rules orca-controller needs from its source, so that
// tests/helm/rbac.test.mjs can check the chart grants exactly those.
//
//   node tests/helm/controller_rbac.mjs   prints the derived (group, resource, verb) table
//
// The controller reaches the API server only through the KubeClient interface
// (controller/client/kube_client.h). The extraction, documented in docs/install.md#rbac:
//  1. Every KubeClient method maps to RBAC verbs (METHOD_VERBS below); a method of the
//     interface missing from the table is an error, so new methods cannot slip by.
//  2. controller/client/resources.cc defines the resource types (`const ResourceType kX{api
//     version, kind, plural, namespaced}`).
//  3. Every call `<...client...>->Method(TYPE, ...)` in controller/**/*.{cc,h} (the REST
//     client's own implementation aside) is resolved to resource types:
//       resources::kX                      that type;
//       type_ (the Informer member)        every type an Informer is constructed with
//                                          (`make_unique<Informer>(client_, TYPE, ...)`,
//                                          with `for (... type : {&resources::kX, ...})`);
//       *type from resources::ForObject()  every kind the pure builders emit
//                                          (`{"kind", "X"}` in controller/builders/build_*.cc);
//       a lambda parameter `type`          every `NAME(resources::kX` call of the lambda
//                                          `auto NAME = [..](const ResourceType& type ..`.
//     Anything else is an error naming the call site.
//  4. Owner references with blockOwnerDeletion need update on the owner's finalizers
//     subresource (admission plugin OwnerReferencesPermissionEnforcement).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// KubeClient method -> RBAC verbs and subresource. Server-side apply is a PATCH that
// creates the object when it does not exist, which the API server authorizes as create.
export const METHOD_VERBS = {
  Get: [["get", ""]],
  List: [["list", ""]],
  Watch: [["watch", ""]],
  Apply: [["patch", ""], ["create", ""]],
  Create: [["create", ""]],
  Update: [["update", ""]],
  UpdateStatus: [["update", "/status"]],
  Delete: [["delete", ""]],
};

// Files are named by their path under controller/ ("client/resources.cc").
const read = (root, f) => fs.readFileSync(path.join(root, "controller", f), "utf8");

// Returns the paths of every file under controller/, relative to it, with "/" separators.
function sources(root, sub = "") {
  const out = [];
  for (const e of fs.readdirSync(path.join(root, "controller", sub), { withFileTypes: true })) {
    const rel = sub ? `${sub}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...sources(root, rel));
    else if (e.isFile()) out.push(rel);
  }
  return out.sort();
}
const base = (f) => path.posix.basename(f);

// Returns {name -> {group, version, kind, plural, namespaced}} from resources.cc.
export function resourceTypes(root) {
  const text = read(root, "client/resources.cc");
  const types = {};
  const re = /const\s+ResourceType\s+(k\w+)\s*\{\s*"([^"]+)"\s*,\s*"(\w+)"\s*,\s*"(\w+)"\s*,\s*(true|false)\s*\}/g;
  for (const m of text.matchAll(re)) {
    const [group, version] = m[2].includes("/") ? m[2].split("/") : ["", m[2]];
    types[m[1]] = { group, version, kind: m[3], plural: m[4], namespaced: m[5] === "true" };
  }
  if (Object.keys(types).length === 0) throw new Error("no ResourceType definitions found in controller/client/resources.cc");
  return types;
}

// Returns the names of KubeClient's virtual methods.
export function clientMethods(root) {
  const text = read(root, "client/kube_client.h");
  const body = text.slice(text.indexOf("class KubeClient"));
  return [...body.matchAll(/virtual\s+[\w:<>,\s]+?\b(\w+)\s*\(/g)].map((m) => m[1]).filter((n) => n !== "~KubeClient");
}

function lineOf(text, index) {
  return text.slice(0, index).split("\n").length;
}

// Returns the call sites [{file, line, method, arg}] of KubeClient methods.
export function callSites(root) {
  const files = sources(root)
    .filter((f) => /\.(cc|h)$/.test(f) && !base(f).startsWith("rest_client.") && base(f) !== "kube_client.h");
  const methods = Object.keys(METHOD_VERBS).join("|");
  const re = new RegExp(`\\b(\\w*client\\w*)->(${methods})\\(\\s*([^,)]+)`, "g");
  const sites = [];
  for (const file of files) {
    const text = read(root, file);
    for (const m of text.matchAll(re)) {
      sites.push({ file, line: lineOf(text, m.index), index: m.index, method: m[2], arg: m[3].trim(), text });
    }
  }
  return sites;
}

function builderKinds(root) {
  const kinds = new Set();
  for (const f of sources(root).filter((f) => /^build_\w+\.cc$/.test(base(f)))) {
    for (const m of read(root, f).matchAll(/\{\s*"kind"\s*,\s*"(\w+)"\s*\}/g)) kinds.add(m[1]);
  }
  return kinds;
}

function informerTypes(root) {
  const out = new Set();
  for (const f of sources(root).filter((f) => f.endsWith(".cc"))) {
    const text = read(root, f);
    for (const m of text.matchAll(/make_unique<Informer>\(\s*\w+\s*,\s*([^,]+),/g)) {
      const arg = m[1].trim();
      const direct = arg.match(/^resources::(k\w+)$/);
      if (direct) {
        out.add(direct[1]);
        continue;
      }
      const deref = arg.match(/^\*(\w+)$/);
      const loop = deref && text.slice(0, m.index).match(
        new RegExp(`for\\s*\\(\\s*const\\s+ResourceType\\s*\\*\\s*${deref[1]}\\s*:\\s*\\{([^}]*)\\}`, "g"));
      if (!loop) throw new Error(`controller/${f}:${lineOf(text, m.index)}: cannot resolve Informer type ${arg}`);
      const last = loop[loop.length - 1];
      for (const t of last.matchAll(/resources::(k\w+)/g)) out.add(t[1]);
    }
  }
  return out;
}

// Resolves the resource-type argument of one call site to ResourceType names.
function resolve(site, types, root) {
  const direct = site.arg.match(/^resources::(k\w+)$/);
  if (direct) return [direct[1]];
  if (site.arg === "type_" && base(site.file) === "informer.cc") return [...informerTypes(root)];
  const before = site.text.slice(0, site.index);
  const deref = site.arg.match(/^\*(\w+)$/);
  if (deref && new RegExp(`ResourceType\\s*\\*\\s*${deref[1]}\\s*=\\s*resources::ForObject\\(`).test(before)) {
    return [...builderKinds(root)].map((kind) => {
      const name = Object.keys(types).find((k) => types[k].kind === kind);
      if (!name) throw new Error(`controller builds kind ${kind}, which resources.cc does not define`);
      return name;
    });
  }
  const lambdas = [...before.matchAll(new RegExp(`auto\\s+(\\w+)\\s*=\\s*\\[[^\\]]*\\]\\s*\\(\\s*const\\s+ResourceType\\s*&\\s*${site.arg}\\b`, "g"))];
  if (lambdas.length > 0) {
    const name = lambdas[lambdas.length - 1][1];
    const uses = [...site.text.matchAll(new RegExp(`\\b${name}\\(\\s*resources::(k\\w+)`, "g"))].map((m) => m[1]);
    if (uses.length > 0) return uses;
  }
  throw new Error(`controller/${site.file}:${site.line}: cannot resolve the resource type "${site.arg}" of ${site.method}; extend tests/helm/controller_rbac.mjs`);
}

// Returns the sorted, unique "group|resource|verb" strings the controller needs, and
// a map from each to the call sites that need it.
export function deriveControllerRules(root) {
  const types = resourceTypes(root);
  const methods = clientMethods(root);
  for (const m of methods) {
    if (!METHOD_VERBS[m]) throw new Error(`KubeClient::${m} has no RBAC verb mapping in tests/helm/controller_rbac.mjs`);
  }
  for (const m of Object.keys(METHOD_VERBS)) {
    if (!methods.includes(m)) throw new Error(`KubeClient has no method ${m} any more; update METHOD_VERBS`);
  }
  const needs = new Map();
  const add = (key, where) => needs.set(key, [...(needs.get(key) ?? []), where]);
  const sites = callSites(root);
  if (sites.length === 0) throw new Error("no KubeClient call sites found in controller/");
  for (const site of sites) {
    for (const name of resolve(site, types, root)) {
      const t = types[name];
      if (!t) throw new Error(`controller/${site.file}:${site.line}: unknown resource type ${name}`);
      for (const [verb, sub] of METHOD_VERBS[site.method]) {
        add(`${t.group}|${t.plural}${sub}|${verb}`, `${site.file}:${site.line} ${site.method}`);
      }
    }
  }
  for (const f of sources(root).filter((f) => /^build_\w+\.cc$/.test(base(f)))) {
    const text = read(root, f);
    const m = text.match(/"blockOwnerDeletion"\s*,\s*true/);
    if (m) {
      const owner = types.kInferenceDeployment;
      add(`${owner.group}|${owner.plural}/finalizers|update`, `${f}:${lineOf(text, m.index)} blockOwnerDeletion`);
    }
  }
  return { rules: [...needs.keys()].sort(), needs, types };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
  const { rules, needs } = deriveControllerRules(root);
  for (const r of rules) {
    const [g, res, verb] = r.split("|");
    console.log(`${(g || "core").padEnd(20)} ${res.padEnd(34)} ${verb.padEnd(7)} ${needs.get(r).join(", ")}`);
  }
}
