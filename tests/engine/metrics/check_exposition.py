#!/usr/bin/python3
"""Checks orca's metrics exposition with the Prometheus Python client's parser.

usage: check_exposition.py EXPOSITION.txt EXPECTED.json

EXPECTED.json (written by exposition_parser_test.cc):
  {"families": [{"name", "type", "help",
                 "samples": [{"name", "labels": {...}, "value"}]}]}
where a value is a number or one of "+Inf", "-Inf", "NaN". Families and samples must
appear in the given order. Exits 0 when everything matches, 1 with a list of
differences otherwise, 77 when prometheus_client is not installed.
"""
import json
import math
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("prometheus_client is not installed (Debian: python3-prometheus-client)")
    sys.exit(77)


def same_value(got, want):
    if math.isnan(want):
        return math.isnan(got)
    return got == want


def same_labels(got, want):
    if got.keys() != want.keys():
        return False
    for key, value in want.items():
        if key == "le":
            # Bucket bounds compare as numbers; +Inf must be spelled exactly so.
            if value == "+Inf" and got[key] != "+Inf":
                return False
            if float(got[key]) != float(value):
                return False
        elif got[key] != value:
            return False
    return True


def check_lines(text, errors):
    if text and not text.endswith("\n"):
        errors.append("exposition does not end with a newline")
    for number, line in enumerate(text.split("\n")[:-1], 1):
        if not line:
            errors.append(f"line {number} is empty")
        elif line.startswith("#") and not line.startswith(("# HELP ", "# TYPE ")):
            errors.append(f"line {number} is an unexpected comment: {line!r}")


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    with open(sys.argv[2], encoding="utf-8") as f:
        expected = json.load(f)["families"]

    errors = []
    check_lines(text, errors)
    got = list(text_string_to_metric_families(text))
    if len(got) != len(expected):
        errors.append(f"parsed {len(got)} families, expected {len(expected)}: "
                      f"{[f.name for f in got]}")
    checked_samples = 0
    for fam, want in zip(got, expected):
        name = want["name"]
        if want["type"] == "counter" and name.endswith("_total"):
            name = name[:-len("_total")]  # the parser's OpenMetrics munging
        where = f"family {want['name']}"
        if fam.name != name:
            errors.append(f"{where}: parsed name {fam.name!r}")
        if fam.type != want["type"]:
            errors.append(f"{where}: parsed type {fam.type!r}, expected {want['type']!r}")
        if fam.documentation != want["help"]:
            errors.append(f"{where}: parsed help {fam.documentation!r}, "
                          f"expected {want['help']!r}")
        if len(fam.samples) != len(want["samples"]):
            errors.append(f"{where}: {len(fam.samples)} samples, "
                          f"expected {len(want['samples'])}")
        for i, (sample, ws) in enumerate(zip(fam.samples, want["samples"])):
            value = float(ws["value"])  # also parses "+Inf", "-Inf", "NaN"
            if (sample.name != ws["name"] or not same_labels(sample.labels, ws["labels"])
                    or not same_value(sample.value, value)):
                errors.append(f"{where} sample {i}: parsed {sample.name} {sample.labels} "
                              f"{sample.value!r}, expected {ws['name']} {ws['labels']} "
                              f"{value!r}")
            checked_samples += 1

    if errors:
        print("\n".join(errors))
        return 1
    print(f"ok: {len(got)} families, {checked_samples} samples match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
