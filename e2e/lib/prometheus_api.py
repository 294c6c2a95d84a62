#!/usr/bin/env python3
"""Small client for a Prometheus server's HTTP API, used by prometheus.sh.

usage:
  prometheus_api.py URL ready                  exit 0 when /-/ready answers 200
  prometheus_api.py URL targets [INSTANCE]     print "UP TOTAL" active targets
  prometheus_api.py URL targets-json           print /api/v1/targets (for reports)
  prometheus_api.py URL query PROMQL           print the instant query's value
  prometheus_api.py URL metadata METRIC        print "TYPE<tab>HELP" (help escaped
                                               as a Python string literal)
  prometheus_api.py - compare GOT OP WANT      exit 0 when GOT OP WANT holds

A query's value is the scalar, or the only sample of a one-element vector, as
Prometheus spells it ("42", "+Inf", "NaN"). Errors go to stderr with exit 1.
Only the standard library is used; every request times out after 5 s.
"""
import json
import math
import sys
import urllib.error
import urllib.parse
import urllib.request


def get(base, path, **params):
    url = base + path
    if params:
        url += "?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.read().decode("utf-8")
    except urllib.error.HTTPError as e:  # the body carries Prometheus' error message
        raise SystemExit(f"GET {url}: {e} {e.read().decode('utf-8', 'replace')}")
    except (urllib.error.URLError, OSError) as e:
        raise SystemExit(f"GET {url}: {e}")


def api(base, path, **params):
    reply = json.loads(get(base, path, **params))
    if reply.get("status") != "success":
        raise SystemExit(f"{path} {params}: {reply.get('errorType')}: {reply.get('error')}")
    return reply["data"]


def targets(base, instance=None):
    active = api(base, "/api/v1/targets", state="active")["activeTargets"]
    if instance:
        active = [t for t in active if t["labels"].get("instance") == instance]
    if not active:
        raise SystemExit(f"no active target{' ' + instance if instance else ''}")
    print(sum(t["health"] == "up" for t in active), len(active))


def query(base, promql):
    data = api(base, "/api/v1/query", query=promql)
    result = data["result"]
    if data["resultType"] in ("scalar", "string"):
        print(result[1])
    elif data["resultType"] == "vector" and len(result) == 1:
        print(result[0]["value"][1])
    else:
        raise SystemExit(f"query {promql!r} returned {len(result)} {data['resultType']} "
                         f"results, expected one: {result}")


def metadata(base, metric):
    entries = api(base, "/api/v1/metadata", metric=metric).get(metric, [])
    if not entries:
        raise SystemExit(f"no metadata for {metric}")
    print(entries[0]["type"] + "\t" + repr(entries[0]["help"]))


def compare(got, op, want):
    """Numbers compare with a relative tolerance of 1e-9; NaN only equals NaN."""
    got, want = float(got), float(want)
    if math.isnan(got) or math.isnan(want):
        return op == "==" and math.isnan(got) and math.isnan(want)
    close = got == want or abs(got - want) <= 1e-9 * max(1.0, abs(want))
    checks = {
        "==": close,
        "!=": not close,
        "<": got < want and not close,
        "<=": got < want or close,
        ">": got > want and not close,
        ">=": got > want or close,
    }
    if op not in checks:
        raise SystemExit(f"unknown comparison {op!r}; use one of {' '.join(checks)}")
    return checks[op]


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    base, command, args = argv[1], argv[2], argv[3:]
    if command == "ready":
        get(base, "/-/ready")
    elif command == "targets":
        targets(base, *args[:1])
    elif command == "targets-json":
        print(json.dumps(api(base, "/api/v1/targets"), indent=1))
    elif command == "query" and len(args) == 1:
        query(base, args[0])
    elif command == "metadata" and len(args) == 1:
        metadata(base, args[0])
    elif command == "compare" and len(args) == 3:
        return 0 if compare(*args) else 1
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
