#!/usr/bin/env python3
"""Parses a Prometheus text exposition with Debian's python3-prometheus-client and
prints its samples as JSON lines: [name, {labels}, value as a string]. The soak's own
parser (observe.mjs) is checked against this one (soak.test.mjs).

    /usr/bin/python3 e2e/soak/parse_metrics.py metrics.txt"""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            print(json.dumps([s.name, s.labels, repr(float(s.value))]))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: parse_metrics.py FILE")
    main(sys.argv[1])
