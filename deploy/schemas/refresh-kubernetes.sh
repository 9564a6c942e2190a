#!/usr/bin/env bash
# Regenerates kubernetes-v1.27-kubernetes-models-4.3.1.json from the npm packages named below.
# Those packages ship each Kubernetes OpenAPI definition as a plain JSON-schema object handed to
# `register(name, schema)` of @kubernetes-models/validate; a stub of that function records them.
# The result holds the named kinds and every definition they reach, with refs rewritten to
# "#/definitions/NAME", otherwise verbatim. Needs node and npm (registry access); the test does not.
# Usage: deploy/schemas/refresh-kubernetes.sh
set -euo pipefail
models=kubernetes-models@4.3.1
apimachinery=@kubernetes-models/apimachinery@1.2.2
out="$(cd "$(dirname "$0")" && pwd)/kubernetes-v1.27-kubernetes-models-4.3.1.json"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "$models" "$apimachinery" >/dev/null
mkdir -p node_modules/@kubernetes-models/validate node_modules/@kubernetes-models/apimachinery models
tar xzf kubernetes-models-4.3.1.tgz -C models --strip-components=1
tar xzf kubernetes-models-apimachinery-1.2.2.tgz -C node_modules/@kubernetes-models/apimachinery --strip-components=1
cat > node_modules/@kubernetes-models/validate/index.js <<'JS'
exports.registered = {};
exports.register = (name, schema) => { exports.registered[name] = schema; };
JS
node - "$out" "$models" "$apimachinery" <<'JS'
const [out, models, apimachinery] = process.argv.slice(2);
const fs = require("fs");
const kinds = {
  "apps/v1 Deployment": "IoK8sApiAppsV1Deployment",
  "batch/v1 Job": "IoK8sApiBatchV1Job",
  "v1 ConfigMap": "IoK8sApiCoreV1ConfigMap",
  "v1 Secret": "IoK8sApiCoreV1Secret",
  "v1 PersistentVolumeClaim": "IoK8sApiCoreV1PersistentVolumeClaim",
  "v1 ServiceAccount": "IoK8sApiCoreV1ServiceAccount",
};
const toName = (file) => require(`${process.cwd()}/models/_schemas/${file}.js`);
for (const file of Object.values(kinds)) toName(file).addSchema();
const { registered } = require("@kubernetes-models/validate");
const rewrite = (v) => {
  if (Array.isArray(v)) return v.map(rewrite);
  if (v && typeof v === "object") {
    const o = {};
    for (const [k, x] of Object.entries(v))
      o[k] = k === "$ref" && typeof x === "string" ? "#/definitions/" + x.replace(/#$/, "") : rewrite(x);
    return o;
  }
  return v;
};
const definitions = {};
for (const name of Object.keys(registered).sort()) definitions[name] = rewrite(registered[name]);
const kindToDefinition = {};
for (const [kind, file] of Object.entries(kinds)) {
  const name = Object.keys(registered).find((n) => n.replace(/[^A-Za-z0-9]/g, "").toLowerCase() === file.toLowerCase());
  if (!name) throw new Error(`no definition registered for ${file}`);
  kindToDefinition[kind] = name;
}
fs.writeFileSync(out, JSON.stringify({
  "$comment": `Kubernetes API (v1.27) schemas from the npm packages ${models} and ${apimachinery} ` +
              "(MIT; generated from the Kubernetes OpenAPI spec, Apache-2.0). Regenerate with deploy/schemas/refresh-kubernetes.sh.",
  kinds: kindToDefinition,
  definitions,
}, null, 1) + "\n");
console.log(`wrote ${out}: ${Object.keys(definitions).length} definitions`);
JS
