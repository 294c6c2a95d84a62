#!/usr/bin/env python3
"""Renders chat templates with Jinja2 configured the way Hugging Face transformers does.

This is the reference the C++ chat-template tests compare against, byte for byte.
transformers (utils/chat_template_utils.py, _compile_jinja_template) renders with
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) plus the
loopcontrols extension and its own `generation` tag, overrides `tojson` (no HTML
escaping, ensure_ascii=False, sort_keys=False) and adds the `raise_exception` and
`strftime_now` globals.

Usage: jinja_reference.py CASES_JSON RESULTS_JSON
  CASES_JSON:   [{"template": str, "context": {...}}, ...]
  RESULTS_JSON: [{"ok": true, "output": str} | {"ok": false, "error": str}, ...]
Exit status 77 means jinja2 is not installed.
"""

import json
import sys
from datetime import datetime

try:
    import jinja2
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:  # pragma: no cover - reported to the C++ test as a skip
    sys.stderr.write("jinja2 is not installed (apt-get install python3-jinja2)\n")
    sys.exit(77)


class GenerationTag(Extension):
    """`{% generation %}...{% endgeneration %}` renders its body unchanged, as in transformers."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(
            self.call_method("_render_body"), [], [], body
        ).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def make_environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, template, context):
    try:
        return {"ok": True, "output": env.from_string(template).render(**context)}
    except Exception as e:  # noqa: BLE001 - every failure is a result to compare
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    env = make_environment()
    results = [render(env, case["template"], case["context"]) for case in cases]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
