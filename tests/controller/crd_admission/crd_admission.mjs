// Checks a CustomResourceDefinition and custom resources the way kube-apiserver would
// (admission.mjs), without a cluster.
//
//   node tests/controller/crd_admission/crd_admission.mjs CRD.yaml [CR.yaml ...]
//
// Prints "CRD accepted" or each error that would reject the CRD; then, for each CR
// file (every document in it), "admitted" with the fields the apiserver would prune,
// or the errors it would reject the CR with. Exits 1 when anything is rejected.
import fs from "node:fs";
import { parseAllDocuments } from "yaml";
import { admit, createCrd } from "./admission.mjs";

// Returns the documents of YAML file `file` as plain JSON values (nulls skipped).
export function readYamlDocuments(file) {
  const docs = parseAllDocuments(fs.readFileSync(file, "utf8"));
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0].message}`);
  }
  return docs.map((d) => d.toJS()).filter((d) => d !== null && d !== undefined);
}

function main(argv) {
  if (argv.length < 1) {
    console.error("usage: crd_admission.mjs CRD.yaml [CR.yaml ...]");
    return 2;
  }
  const [crdFile, ...crFiles] = argv;
  const [crd] = readYamlDocuments(crdFile);
  let failed = false;
  const crdErrors = createCrd(crd);
  if (crdErrors.length > 0) {
    failed = true;
    console.log(`${crdFile}: CRD rejected:`);
    for (const e of crdErrors) console.log(`  ${e}`);
  } else {
    console.log(`${crdFile}: CRD accepted`);
  }
  for (const file of crFiles) {
    for (const cr of readYamlDocuments(file)) {
      const name = `${file}: ${cr.kind} ${cr.metadata?.name ?? "?"}`;
      const { errors, pruned } = admit(crd, cr);
      if (errors.length > 0) {
        failed = true;
        console.log(`${name}: rejected:`);
        for (const e of errors) console.log(`  ${e}`);
      } else {
        console.log(`${name}: admitted${pruned.length ? ` (pruned unknown fields: ${pruned.join(", ")})` : ""}`);
      }
    }
  }
  return failed ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(main(process.argv.slice(2)));
