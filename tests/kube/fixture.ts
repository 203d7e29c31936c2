/**
 * A real Kubernetes control plane for end-to-end tests: etcd and kube-apiserver, built from
 * their Go modules by scripts/build_k8s_tools.sh and cached outside the repository, started on
 * loopback with per-run certificates, RBAC + Node authorization and the default admission
 * plugins (ValidatingAdmissionPolicy among them). There is no controller manager, scheduler or
 * kubelet, so tests play those parts themselves:
 * - a new namespace has no "default" ServiceAccount, and the ServiceAccount admission plugin
 *   rejects pods without one: use ControlPlane.createNamespace(), which creates both;
 * - a pod with spec.nodeName is deleted gracefully (it stays, with deletionTimestamp, until a
 *   kubelet confirms): delete with gracePeriodSeconds 0 to remove it at once;
 * - a deleted namespace stays Terminating (no namespace controller).
 *
 * Usage (controlPlaneUnavailableReason() and controlPlaneTestOptions() are in ./tools.ts):
 *   const reason = await controlPlaneUnavailableReason();
 *   Deno.test({ name: "...", ...controlPlaneTestOptions(reason) }, async () => {
 *     await using cp = await startControlPlane();
 *     const core = cp.adminConfig().makeApiClient(CoreV1Api);
 *   });
 */
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { Http1KubeConfig } from "../../lib/kube/client.ts";
import { makePki } from "./_pki.ts";
import { apiServerArgs, etcdArgs, kubeconfigYaml } from "./_control_plane_config.ts";
import { ManagedProcess, tail } from "./_process.ts";
import { freeLoopbackPort } from "../../lib/os/process.ts";
import { controlPlaneUnavailableReason, toolPaths } from "./tools.ts";

/** A running etcd + kube-apiserver pair on loopback; see startControlPlane(). */
export interface ControlPlane {
  /** The API server's base URL, https://127.0.0.1:<port>; the same across restarts. */
  readonly url: string;
  /** etcd's client URL, http://127.0.0.1:<port>. */
  readonly etcdUrl: string;
  /** The run's temporary directory (certificates, data, logs, kubeconfigs). */
  readonly dir: string;
  /** Path of a kubeconfig for the admin identity (client certificate in system:masters). */
  readonly kubeconfigPath: string;
  /** The admin kubeconfig as YAML. */
  readonly kubeconfig: string;
  /** The CA certificate (PEM) that signed the API server's serving certificate. */
  readonly caPem: string;
  /**
   * A fresh client-node KubeConfig for the admin identity; HTTP/1.1 only (see Http1KubeConfig)
   * unless http2 is true.
   */
  adminConfig(options?: { http2?: boolean }): KubeConfig;
  /** Kubeconfig YAML that authenticates with a bearer token (e.g. from the TokenRequest API). */
  kubeconfigForToken(token: string, user?: string): string;
  /** Writes kubeconfigForToken() to a file in the run's directory and returns its path. */
  writeKubeconfigForToken(token: string, user?: string): Promise<string>;
  /** Creates a namespace and its "default" ServiceAccount, as the controller manager would. */
  createNamespace(name: string): Promise<void>;
  /** A token for a ServiceAccount from the TokenRequest API (the account must exist). */
  serviceAccountToken(namespace: string, name: string, expirationSeconds?: number): Promise<string>;
  /** Whether kube-apiserver is running (false between stopApiServer() and startApiServer()). */
  readonly apiServerRunning: boolean;
  /** Stops kube-apiserver (SIGTERM); etcd and its data stay. */
  stopApiServer(): Promise<void>;
  /** Starts kube-apiserver again on the same port with the same flags; waits for /readyz. */
  startApiServer(): Promise<void>;
  /** stopApiServer() then startApiServer(). */
  restartApiServer(): Promise<void>;
  /** The tail of etcd's and kube-apiserver's logs, for a failure message. */
  logs(maxLines?: number): Promise<string>;
  /** Stops both processes and removes the run's directory; safe to call twice. */
  close(): Promise<void>;
}

export interface ControlPlaneOptions {
  /** How long to wait for /readyz on each API server start (default 90 s). */
  readyTimeoutMs?: number;
  /** Extra kube-apiserver flags, e.g. ["--feature-gates=..."]. */
  apiServerFlags?: string[];
  /** Keep the run's directory (logs, data) after close(); also LACE_KEEP_CONTROL_PLANE=1. */
  keepDir?: boolean;
  /**
   * A command prefix etcd and kube-apiserver run under, e.g. nsenter into a node's network
   * namespace (tests/node/); their loopback ports are then the namespace's.
   */
  spawnPrefix?: string[];
  /**
   * Called with each loopback port etcd and kube-apiserver will listen on, before they start,
   * so that a caller whose processes run in another namespace can relay it to the test's
   * loopback (the fixture's own readiness checks connect from the test process).
   */
  exposePort?: (port: number) => Promise<void>;
  /**
   * The API server reaches kubelets (exec, logs) at their InternalIP with the admin client
   * certificate, which a kubelet trusting the CA accepts (tests/node/ with several nodes).
   */
  kubeletClient?: boolean;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls check() until it returns true, failing early when process exits and after timeoutMs.
 * The failure message carries the log tail, so a test failure says why the server did not start.
 */
async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  process: ManagedProcess,
  timeoutMs: number,
  logs: () => Promise<string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    if (process.exited) {
      throw new Error(
        `${what} exited with code ${process.exited.code} before it was ready\n${await logs()}`,
      );
    }
    try {
      if (await check()) return;
    } catch (error) {
      last = String(error);
    }
    await delay(200);
  }
  throw new Error(
    `${what} not ready within ${timeoutMs} ms (last error: ${last})\n${await logs()}`,
  );
}

const dirPrefix = "lace-control-plane-";

/**
 * Removes the directories of earlier runs whose test process is gone (killed, or crashed before
 * its cleanup ran): etcd preallocates its WAL, so each holds over 100 MB.
 */
export async function removeAbandonedControlPlaneDirs(): Promise<void> {
  const tmp = Deno.env.get("TMPDIR") ?? "/tmp";
  for await (const entry of Deno.readDir(tmp)) {
    if (!entry.isDirectory || !entry.name.startsWith(dirPrefix)) continue;
    const dir = `${tmp}/${entry.name}`;
    try {
      const owner = (await Deno.readTextFile(`${dir}/owner.pid`)).trim();
      await Deno.stat(`/proc/${owner}`);
    } catch {
      // The owner is gone, or there is no owner file: a run just starting, or one from before
      // owner files existed, so only an old one goes.
      const hasOwnerFile = await Deno.stat(`${dir}/owner.pid`).then(() => true, () => false);
      const modified = (await Deno.stat(dir).catch(() => null))?.mtime?.getTime() ?? 0;
      if (hasOwnerFile || Date.now() - modified > 10 * 60_000) {
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    }
  }
}

/**
 * Starts etcd and kube-apiserver on loopback with fresh certificates in a temporary directory
 * and waits until /readyz answers ok. The result is AsyncDisposable: `await using cp = ...`
 * stops both and removes the directory, as does close(); a failed start cleans up itself.
 */
export async function startControlPlane(
  options: ControlPlaneOptions = {},
): Promise<ControlPlane & AsyncDisposable> {
  const reason = await controlPlaneUnavailableReason();
  if (reason) throw new Error(`Cannot start the control plane: ${reason}`);
  const tools = await toolPaths();
  const readyTimeoutMs = options.readyTimeoutMs ?? 90_000;
  const keepDir = options.keepDir ?? Deno.env.get("LACE_KEEP_CONTROL_PLANE") === "1";
  await removeAbandonedControlPlaneDirs();
  const dir = await Deno.makeTempDir({ prefix: dirPrefix });
  await Deno.writeTextFile(`${dir}/owner.pid`, `${Deno.pid}\n`);
  const etcdLog = `${dir}/etcd.log`;
  const apiLog = `${dir}/kube-apiserver.log`;
  let etcd: ManagedProcess | undefined;
  let api: ManagedProcess | undefined;
  let closed = false;
  let httpClient: Deno.HttpClient | undefined;

  const logs = async (maxLines = 60) =>
    `--- etcd log (${etcdLog}) ---\n${await tail(etcdLog, maxLines)}\n` +
    `--- kube-apiserver log (${apiLog}) ---\n${await tail(apiLog, maxLines)}`;

  const close = async () => {
    if (closed) return;
    closed = true;
    await api?.stop();
    await etcd?.stop();
    httpClient?.close();
    if (keepDir) console.warn(`Control plane files kept in ${dir}`);
    else await Deno.remove(dir, { recursive: true }).catch(() => {});
  };

  try {
    const pki = await makePki(dir);
    httpClient = Deno.createHttpClient({
      caCerts: [pki.caPem],
      cert: pki.adminCertPem,
      key: pki.adminKeyPem,
    });
    const client = httpClient;
    const prefix = options.spawnPrefix ?? [];
    const spawn = (command: string, args: string[], log: string) =>
      prefix.length
        ? ManagedProcess.spawn(prefix[0], [...prefix.slice(1), command, ...args], log)
        : ManagedProcess.spawn(command, args, log);
    const etcdUrl = `http://127.0.0.1:${freeLoopbackPort()}`;
    const etcdPort = Number(new URL(etcdUrl).port);
    await options.exposePort?.(etcdPort);
    etcd = await spawn(tools.etcd, etcdArgs(dir, etcdPort, freeLoopbackPort()), etcdLog);
    const etcdProcess = etcd;
    await waitUntil(
      "etcd",
      async () => {
        const response = await fetch(`${etcdUrl}/health`);
        const body = await response.json();
        return response.ok && body.health === "true";
      },
      etcdProcess,
      readyTimeoutMs,
      logs,
    );

    const port = freeLoopbackPort();
    await options.exposePort?.(port);
    const url = `https://127.0.0.1:${port}`;
    const kubeletClient = options.kubeletClient
      ? [
        `--kubelet-client-certificate=${pki.adminCert}`,
        `--kubelet-client-key=${pki.adminKey}`,
        "--kubelet-preferred-address-types=InternalIP",
      ]
      : [];
    const args = [
      ...apiServerArgs(pki, dir, port, etcdUrl),
      ...kubeletClient,
      ...(options.apiServerFlags ?? []),
    ];
    const startApiServer = async () => {
      if (api && !api.exited) throw new Error("kube-apiserver is already running");
      await Deno.writeTextFile(apiLog, `--- start at ${new Date().toISOString()} ---\n`, {
        append: true,
      });
      const process = await spawn(tools.kubeApiServer, args, apiLog);
      api = process;
      await waitUntil(
        "kube-apiserver",
        async () => {
          const response = await fetch(`${url}/readyz`, { client });
          const body = await response.text();
          return response.ok && body.trim() === "ok";
        },
        process,
        readyTimeoutMs,
        logs,
      );
    };
    await startApiServer();

    const kubeconfig = kubeconfigYaml(url, pki.caPem, "lace-test-admin", {
      "client-certificate-data": btoa(pki.adminCertPem),
      "client-key-data": btoa(pki.adminKeyPem),
    });
    const kubeconfigPath = `${dir}/admin.kubeconfig`;
    await Deno.writeTextFile(kubeconfigPath, kubeconfig);
    const adminConfig = (options: { http2?: boolean } = {}) => {
      const config = options.http2 ? new KubeConfig() : new Http1KubeConfig();
      config.loadFromString(kubeconfig);
      return config;
    };
    const kubeconfigForToken = (token: string, user = "token-user") =>
      kubeconfigYaml(url, pki.caPem, user, { token });
    let tokenFiles = 0;

    const plane: ControlPlane & AsyncDisposable = {
      url,
      etcdUrl,
      dir,
      kubeconfigPath,
      kubeconfig,
      caPem: pki.caPem,
      adminConfig,
      kubeconfigForToken,
      async writeKubeconfigForToken(token, user) {
        const path = `${dir}/token-${++tokenFiles}.kubeconfig`;
        await Deno.writeTextFile(path, kubeconfigForToken(token, user), { mode: 0o600 });
        return path;
      },
      async createNamespace(name) {
        const core = adminConfig().makeApiClient(CoreV1Api);
        await core.createNamespace({ body: { metadata: { name } } });
        // Without a controller manager nobody else makes it; with one (the real node) it may
        // have already.
        await core.createNamespacedServiceAccount({
          namespace: name,
          body: { metadata: { name: "default" } },
        }).catch((error) => {
          if ((error as { code?: number }).code !== 409) throw error;
        });
      },
      async serviceAccountToken(namespace, name, expirationSeconds = 3600) {
        const core = adminConfig().makeApiClient(CoreV1Api);
        const request = await core.createNamespacedServiceAccountToken({
          namespace,
          name,
          body: { spec: { audiences: [], expirationSeconds } },
        });
        const token = request.status?.token;
        if (!token) throw new Error(`TokenRequest for "${namespace}/${name}" returned no token`);
        return token;
      },
      get apiServerRunning() {
        return api !== undefined && api.exited === undefined;
      },
      async stopApiServer() {
        await api?.stop();
      },
      startApiServer,
      async restartApiServer() {
        await api?.stop();
        await startApiServer();
      },
      logs,
      close,
      [Symbol.asyncDispose]: close,
    };
    return plane;
  } catch (error) {
    await close();
    throw error;
  }
}
