#!/usr/bin/env bash
# Regenerates aws-batch-2016-08-10-aws-sdk-2.1693.0.json: JSON schemas of the AWS Batch
# RegisterJobDefinition and SubmitJob inputs, converted from the machine-readable AWS Batch API
# model that the npm package aws-sdk (v2) ships as apis/batch-2016-08-10.min.json. Structures
# become closed objects (the AWS CLI's parameter validation rejects unknown keys), with their
# required members; the ranges and enums that the minified model omits are added from the AWS Batch
# API reference, each with its page (see CONSTRAINTS below).
# Needs npm (registry access) and python3; the test does not. Usage: deploy/schemas/refresh-aws-batch.sh
set -euo pipefail
sdk=aws-sdk@2.1693.0
out="$(cd "$(dirname "$0")" && pwd)/aws-batch-2016-08-10-aws-sdk-2.1693.0.json"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$sdk" >/dev/null && tar xzf aws-sdk-*.tgz package/apis/batch-2016-08-10.min.json)
python3 - "$work/package/apis/batch-2016-08-10.min.json" "$out" "$sdk" <<'PY'
import json, sys
model_path, out, sdk = sys.argv[1:]
model = json.load(open(model_path))
shapes = model["shapes"]

def convert(shape):
    if "shape" in shape:
        return {"$ref": "#/definitions/" + shape["shape"]}
    kind = shape.get("type", "string")
    if kind == "structure":
        s = {"type": "object", "additionalProperties": False,
             "properties": {k: convert(v) for k, v in shape.get("members", {}).items()}}
        if shape.get("required"):
            s["required"] = shape["required"]
        return s
    if kind == "list":
        return {"type": "array", "items": convert(shape.get("member", {}))}
    if kind == "map":
        return {"type": "object", "additionalProperties": convert(shape.get("value", {}))}
    return {"integer": {"type": "integer"}, "long": {"type": "integer"}, "boolean": {"type": "boolean"},
            "float": {"type": "number"}, "double": {"type": "number"},
            "timestamp": {"type": "string"}, "string": {"type": "string"}}[kind]

definitions = {name: convert(s) for name, s in shapes.items()}
ops = model["operations"]
definitions["RegisterJobDefinitionRequest"] = convert(ops["RegisterJobDefinition"]["input"])
definitions["SubmitJobRequest"] = convert(ops["SubmitJob"]["input"])

# CONSTRAINTS from the AWS Batch API reference (https://docs.aws.amazon.com/batch/latest/APIReference/):
#  API_RegisterJobDefinition.html: type is one of container | multinode.
#  API_ArrayProperties.html: size of an array job, 2 to 10,000.
#  API_RetryStrategy.html: attempts, 1 to 10.
#  API_KeyValuePair.html / API_Secret.html: a Secret needs name and valueFrom.
register = definitions["RegisterJobDefinitionRequest"]["properties"]
register["type"] = {"type": "string", "enum": ["container", "multinode"]}
submit = definitions["SubmitJobRequest"]["properties"]
submit["arrayProperties"]["properties"]["size"].update({"minimum": 2, "maximum": 10000})
retry = definitions[register["retryStrategy"]["$ref"].split("/")[-1]]
retry["properties"]["attempts"].update({"minimum": 1, "maximum": 10})
secrets = definitions[definitions[register["containerProperties"]["$ref"].split("/")[-1]]["properties"]["secrets"]["$ref"].split("/")[-1]]
assert secrets["items"].get("required") == ["name", "valueFrom"], secrets

json.dump({
    "$comment": f"AWS Batch API {model['metadata']['apiVersion']} input shapes, converted from apis/batch-2016-08-10.min.json "
                f"of the npm package {sdk} (Apache-2.0) by deploy/schemas/refresh-aws-batch.sh; ranges and enums "
                "from the AWS Batch API reference (API_ArrayProperties, API_RetryStrategy, API_RegisterJobDefinition).",
    "requests": {"register-job-definition": "RegisterJobDefinitionRequest", "submit-job": "SubmitJobRequest"},
    "definitions": definitions,
}, open(out, "w"), indent=1, sort_keys=True)
open(out, "a").write("\n")
print(f"wrote {out}: {len(definitions)} definitions")
PY
