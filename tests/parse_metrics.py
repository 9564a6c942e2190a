#!/usr/bin/env python3
"""Parses a --metrics file with prometheus_client's text-format parser (the reference
implementation's; Debian's python3-prometheus-client, installed by ci/bootstrap --for test: run it with
/usr/bin/python3) and prints its samples as JSON lines {"name", "labels", "value", "type"}.
Exits 1 with the parser's error when the file is not valid exposition text."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                print(json.dumps({"name": s.name, "labels": s.labels, "value": s.value, "type": family.type},
                                 sort_keys=True))
    except Exception as e:  # the parser raises ValueError and others on malformed input
        print(f"parse_metrics: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
