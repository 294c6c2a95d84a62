// values.schema.json rejects wrong values: every file in tests/helm/bad-values/ names
// on its first line (`# expect: ...`) the one schema error it must cause, and both
// `helm lint --strict` and `helm template` must fail with exactly that error.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { CHART, KUBE_VERSION, ROOT, helm } from "./lib.mjs";

const DIR = path.join(ROOT, "tests/helm/bad-values");
const files = fs.readdirSync(DIR).filter((f) => f.endsWith(".yaml")).sort();

// Returns the "- path: message" lines of helm's schema error.
function schemaErrors(output) {
  const at = output.indexOf("values don't meet the specifications of the schema");
  assert.ok(at >= 0, `not a schema error:\n${output}`);
  const block = output.slice(at).split("\n\n")[0];
  return block.split("\n").filter((l) => l.startsWith("- ")).map((l) => l.slice(2));
}

test("at least 10 wrong values files are checked", () => {
  assert.ok(files.length >= 10, `only ${files.length} files in tests/helm/bad-values`);
});

for (const f of files) {
  test(`rejects ${f}`, () => {
    const file = path.join(DIR, f);
    const expected = fs.readFileSync(file, "utf8").split("\n")[0].match(/^# expect: (.+)$/)?.[1];
    assert.ok(expected, `${f}: first line must be "# expect: <schema error>"`);
    const t = helm(["template", "x", CHART, "--kube-version", KUBE_VERSION, "-f", file]);
    assert.notEqual(t.code, 0, `helm template accepted ${f}`);
    const errors = schemaErrors(t.stderr);
    assert.deepEqual(errors.filter((e) => e.startsWith(expected)), [errors[0]], `${f}: got ${JSON.stringify(errors)}`);
    assert.equal(errors.length, 1, `${f} should fail for one reason only: ${JSON.stringify(errors)}`);
    const l = helm(["lint", "--strict", CHART, "--kube-version", KUBE_VERSION, "-f", file]);
    assert.notEqual(l.code, 0, `helm lint accepted ${f}`);
    assert.ok(l.stdout.includes(expected), `helm lint did not report "${expected}":\n${l.stdout}`);
  });
}
