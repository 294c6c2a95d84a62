// Independent references for end-to-end checks: Debian's python3 with the module a
// check needs (python3-torch, python3-jsonschema, python3-jinja2).
import { execFileSync } from 'node:child_process';

// The Debian python3 when it can import `modules` (the independent references); else
// null with the test skipped, or an error in CI, where `pkg` must be installed.
export function referencePython(t, modules, pkg) {
  const python = '/usr/bin/python3';
  try {
    execFileSync(python, ['-c', `import ${modules}`], { stdio: 'ignore' });
    return python;
  } catch {
    if (process.env.CI === 'true') throw new Error(`${pkg} is missing in CI`);
    t.skip(`${pkg} not installed`);
    return null;
  }
}

// Validates each [schema, JSON text] pair with python3-jsonschema (Draft 2020-12 with
// the format checker): null per valid pair, else the error; null overall when skipped.
export function validateWithJsonschema(t, pairs) {
  const python = referencePython(t, 'jsonschema', 'python3-jsonschema');
  if (!python) return null;
  const script = 'import json, sys, jsonschema\n' +
    'out = []\n' +
    'for schema, text in json.load(sys.stdin):\n' +
    '    try:\n' +
    '        v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)\n' +
    '        v.validate(json.loads(text)); out.append(None)\n' +
    '    except Exception as e:\n' +
    '        out.append(str(e)[:300])\n' +
    'print(json.dumps(out))\n';
  return JSON.parse(execFileSync(python, ['-c', script], { input: JSON.stringify(pairs) }));
}
