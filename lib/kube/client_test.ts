import assert from "node:assert/strict";
import { Http1KubeConfig, loadKubeConfig } from "./client.ts";

function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:6443", ...cluster } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
    "current-context": "x",
  });
}

Deno.test("every client Lace builds refuses HTTP/2, whatever the kubeconfig holds", () => {
  const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
    ["a token and a public server", {}, { token: "t" }],
    ["a token and a CA", { "certificate-authority-data": btoa("ca") }, { token: "t" }],
    ["TLS verification skipped", { "insecure-skip-tls-verify": true }, { token: "t" }],
    ["a client certificate", { "certificate-authority-data": btoa("ca") }, {
      "client-certificate-data": btoa("cert"),
      "client-key-data": btoa("key"),
    }],
  ];
  for (const [what, cluster, user] of cases) {
    const kc = new Http1KubeConfig();
    kc.loadFromString(kubeconfig(cluster, user));
    const options = kc.createDispatcherOptions(kc.getCurrentCluster()!, {});
    assert.equal(options.type, "agent", what);
    assert.equal((options as { connect: { allowH2?: boolean } }).connect.allowH2, false, what);
  }
});

Deno.test("loadKubeConfig() prefers the flag, then KUBECONFIG, and says what it tried", () => {
  const files: Record<string, string> = { "/flag": "flag", "/env": "env" };
  const exists = (p: string) => p in files;
  assert.throws(
    () => loadKubeConfig({ kubeconfig: "/missing", env: () => undefined, exists }),
    /Kubeconfig "\/missing" from --kubeconfig does not exist/,
  );
  assert.throws(
    () => loadKubeConfig({ env: (n) => (n === "KUBECONFIG" ? "/nope:/env" : undefined), exists }),
    /Kubeconfig "\/nope" from KUBECONFIG does not exist/,
  );
  assert.throws(
    () => loadKubeConfig({ env: () => undefined, exists: () => false }),
    /No Kubernetes API configuration: give --kubeconfig, set KUBECONFIG, or run in a pod/,
  );
});

Deno.test("loadKubeConfig() returns an HTTP/1.1-only config for a kubeconfig file", async () => {
  const path = await Deno.makeTempFile({ suffix: ".json" });
  try {
    await Deno.writeTextFile(
      path,
      kubeconfig({ "insecure-skip-tls-verify": true }, { token: "t" }),
    );
    const kc = loadKubeConfig({ kubeconfig: path });
    assert.ok(kc instanceof Http1KubeConfig);
    assert.equal(kc.getCurrentCluster()?.server, "https://127.0.0.1:6443");
  } finally {
    await Deno.remove(path);
  }
});
