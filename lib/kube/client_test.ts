import assert from "node:assert/strict";
import { HttpMethod, RequestContext } from "@kubernetes/client-node";
import { Http1KubeConfig, loadKubeConfig, reportingFailures } from "./client.ts";

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

/** The dispatcher client-node would send one request to `path` through. */
async function dispatcherFor(kc: Http1KubeConfig, path: string): Promise<unknown> {
  const context = new RequestContext(`https://127.0.0.1:6443${path}`, HttpMethod.GET);
  await kc.applySecurityAuthentication(context);
  return context.getDispatcher();
}

Deno.test("requests share one connection pool while the TLS settings stay the same", async () => {
  const kc = new Http1KubeConfig();
  kc.loadFromString(kubeconfig({ "certificate-authority-data": btoa("ca") }, { token: "t" }));
  const list = await dispatcherFor(kc, "/api/v1/pods");
  assert.ok(list);
  assert.equal(await dispatcherFor(kc, "/api/v1/pods?watch=true"), list);
  assert.equal(await dispatcherFor(kc, "/version"), list);
});

Deno.test("a changed CA gets a new connection pool", async () => {
  const kc = new Http1KubeConfig();
  kc.loadFromString(kubeconfig({ "certificate-authority-data": btoa("ca") }, { token: "t" }));
  const before = await dispatcherFor(kc, "/version");
  kc.loadFromString(kubeconfig({ "certificate-authority-data": btoa("rotated") }, { token: "t" }));
  assert.notEqual(await dispatcherFor(kc, "/version"), before);
});

Deno.test("loadKubeConfig() says which source it tried when a file is missing or none is set", () => {
  assert.throws(
    () => loadKubeConfig({ kubeconfig: "/missing", env: () => undefined, exists: () => false }),
    /Kubeconfig "\/missing" from --kubeconfig does not exist/,
  );
  assert.throws(
    () =>
      loadKubeConfig({
        env: (n) => (n === "KUBECONFIG" ? "/nope:/env" : undefined),
        exists: (p) => p === "/env",
      }),
    /Kubeconfig "\/nope" from KUBECONFIG does not exist/,
  );
  assert.throws(
    () => loadKubeConfig({ env: () => undefined, exists: () => false }),
    /No Kubernetes API configuration: give --kubeconfig, set KUBECONFIG, or run in a pod/,
  );
});

/** Two kubeconfig files that differ only in their server, and an env with both set. */
async function twoKubeconfigs(
  body: (flag: string, variable: string) => void,
): Promise<void> {
  const flag = await Deno.makeTempFile({ suffix: ".json" });
  const variable = await Deno.makeTempFile({ suffix: ".json" });
  try {
    await Deno.writeTextFile(flag, kubeconfig({ server: "https://127.0.0.1:1111" }, {}));
    await Deno.writeTextFile(variable, kubeconfig({ server: "https://127.0.0.1:2222" }, {}));
    body(flag, variable);
  } finally {
    await Deno.remove(flag);
    await Deno.remove(variable);
  }
}

const inCluster = { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" };

Deno.test("loadKubeConfig() uses --kubeconfig when KUBECONFIG and a service account are also there", async () => {
  await twoKubeconfigs((flag, variable) => {
    const env = { ...inCluster, KUBECONFIG: variable } as Record<string, string>;
    const kc = loadKubeConfig({ kubeconfig: flag, env: (n) => env[n], exists: () => true });
    assert.equal(kc.getCurrentCluster()?.server, "https://127.0.0.1:1111");
  });
});

Deno.test("loadKubeConfig() uses the first KUBECONFIG file over a service account", async () => {
  await twoKubeconfigs((flag, variable) => {
    const env = { ...inCluster, KUBECONFIG: `:${variable}:${flag}` } as Record<string, string>;
    const kc = loadKubeConfig({ kubeconfig: "", env: (n) => env[n], exists: () => true });
    assert.equal(kc.getCurrentCluster()?.server, "https://127.0.0.1:2222");
  });
});

Deno.test("loadKubeConfig() uses the service account only when both its host and token are there", () => {
  const env = (n: string) => (inCluster as Record<string, string>)[n];
  const kc = loadKubeConfig({ env, exists: () => true });
  // client-node reads the service's address from the process environment itself.
  assert.equal(kc.getCurrentCluster()?.name, "inCluster");
  assert.throws(
    () => loadKubeConfig({ env, exists: () => false }),
    /KUBERNETES_SERVICE_HOST set, .*token missing/,
  );
  assert.throws(
    () => loadKubeConfig({ env: () => undefined, exists: () => true }),
    /KUBERNETES_SERVICE_HOST unset, .*token present/,
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

/** A handler in undici's style: state in a private field, errors by either callback name. */
class PrivateStateHandler {
  #seen: string[] = [];
  onResponseStart(_controller: unknown, status: number) {
    this.#seen.push(`start ${status}`);
  }
  onResponseError(_controller: unknown, error: Error) {
    this.#seen.push(`error ${error.message}`);
  }
  onError(error: Error) {
    this.#seen.push(`old error ${error.message}`);
  }
  get seen() {
    return this.#seen;
  }
}

Deno.test("a watch handler's connection failures are reported, and the handler still gets every call", () => {
  const reported: unknown[] = [];
  const handler = reportingFailures(new PrivateStateHandler(), (e) => reported.push(e));
  const socket = Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" });
  handler.onResponseStart(null, 200);
  handler.onResponseError(null, socket);
  handler.onError(new Error("reset"));
  assert.deepEqual(handler.seen, ["start 200", "error other side closed", "old error reset"]);
  assert.deepEqual(reported.map((e) => (e as Error).message), ["other side closed", "reset"]);
});

Deno.test("a watch the client aborted or timed out is not reported as a failed connection", () => {
  const reported: unknown[] = [];
  const handler = reportingFailures(new PrivateStateHandler(), (e) => reported.push(e));
  handler.onResponseError(null, new DOMException("aborted", "AbortError"));
  handler.onResponseError(null, new DOMException("timed out", "TimeoutError"));
  handler.onError(Object.assign(new Error("aborted"), { code: "UND_ERR_ABORTED" }));
  assert.deepEqual(reported, []);
  assert.equal(handler.seen.length, 3, "the handler itself still hears of them");
});
