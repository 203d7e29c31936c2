/**
 * Manifests the pod-source unit tests write and parse: a small running pod,
 * and otherwise valid pods whose spec holds one deeply nested value.
 */

/** A running pod "p-<uid>" in namespace ns at 10.0.0.1, on `node` when given. */
export function podYaml(uid: string, node?: string): string {
  return [
    "apiVersion: v1",
    "kind: Pod",
    `metadata: {name: p-${uid}, namespace: ns, uid: ${uid}}`,
    `spec: {${node ? `nodeName: ${node}, ` : ""}containers: [{name: app}]}`,
    "status: {phase: Running, podIPs: [{ip: 10.0.0.1}]}",
  ].join("\n");
}

// Each is an otherwise valid pod whose spec holds one deeply nested value.
export const deepHead = "kind: Pod\nmetadata: {name: d, uid: d}\nspec:\n  containers: []\n  extra:";
export const deepYamlFlow = (n: number) => `${deepHead} ${"[".repeat(n)}${"]".repeat(n)}`;
export const deepYamlBlock = (n: number) =>
  `${deepHead}\n` + Array.from({ length: n }, (_, i) => `${" ".repeat(i + 3)}a:`).join("\n") +
  " 1";
export const deepYamlCompact = (n: number) => `${deepHead}\n   ${"- ".repeat(n)}x`;
export const deepJson = (n: number) =>
  `{"kind":"Pod","metadata":{"name":"d","uid":"d"},"spec":{"containers":[],"extra":${
    "[".repeat(n)
  }${"]".repeat(n)}}}`;
