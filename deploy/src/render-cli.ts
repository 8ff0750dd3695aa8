import { stringify } from "yaml";
import { renderKustomization } from "./kustomize.ts";

// Prints an overlay's objects as one YAML stream, for `kubectl apply -f -` where
// `kubectl apply -k` is not available: `pnpm --filter @gw/deploy render k8s/overlays/local`.
const dir = process.argv[2];
if (!dir) {
  console.error("usage: node src/render-cli.ts <kustomization directory>");
  process.exit(2);
}
process.stdout.write(
  renderKustomization(dir)
    .map((obj) => stringify(obj))
    .join("---\n"),
);
