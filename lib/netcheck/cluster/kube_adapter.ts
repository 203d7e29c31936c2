/**
 * NetcheckCluster over @kubernetes/client-node. The client (lib/kube/k8s.ts)
 * is loaded lazily (its load is slow and large, DESIGN.md), so only a run
 * that talks to a cluster pays for it. Every call maps to one RBAC verb listed
 * in docs/netcheck.md.
 */
import type * as k8s from "@kubernetes/client-node";
import type { ClientNode } from "../../kube/k8s.ts";
import { Writable } from "node:stream";
import {
  ConflictError,
  type ExecOptions,
  type ExecResult,
  type LeaseRecord,
  type NetcheckCluster,
  type OwnerReference,
  type ProbePod,
} from "./netcheck_cluster.ts";
import { ExecOutput, tooLongError } from "./exec_output.ts";

function statusOf(e: unknown): number | undefined {
  const code = (e as { code?: unknown })?.code;
  return typeof code === "number" ? code : undefined;
}

/** A `ws` ErrorEvent (exec rejects with one, not an Error) or any error, as text. */
export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  const ev = e as { message?: unknown; error?: { message?: unknown } };
  if (typeof ev?.message === "string" && ev.message) return ev.message;
  if (typeof ev?.error?.message === "string") return ev.error.message;
  return String(e);
}

/** Exit code from an exec V1Status: Success → 0, NonZeroExitCode → its cause, else -1. */
function exitCodeOf(status: k8s.V1Status | undefined): number {
  if (!status) return -1;
  if (status.status === "Success") return 0;
  const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
  const code = Number(cause?.message);
  return Number.isInteger(code) ? code : -1;
}

/** The node a DaemonSet pod is meant for: its required affinity on metadata.name. */
function intendedNode(pod: k8s.V1Pod): string {
  const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms ?? [];
  for (const term of terms) {
    const field = term.matchFields?.find((f) => f.key === "metadata.name" && f.operator === "In");
    if (field?.values?.length === 1) return field.values[0];
  }
  return "";
}

/** The netcheck view of a Pod. */
function probePodOf(pod: k8s.V1Pod): ProbePod {
  const status = pod.status ?? {};
  const conditions = status.conditions ?? [];
  const reasons: Record<string, string> = {};
  for (const cs of status.containerStatuses ?? []) {
    const reason = cs.state?.waiting?.reason ?? cs.state?.terminated?.reason;
    if (reason) reasons[cs.name] = reason;
  }
  const podIPs = (status.podIPs ?? []).map((p) => p.ip).filter((ip): ip is string => !!ip);
  return {
    name: pod.metadata?.name ?? "",
    nodeName: pod.spec?.nodeName || intendedNode(pod),
    phase: status.phase ?? "Pending",
    ready: conditions.some((c) => c.type === "Ready" && c.status === "True"),
    podIPs,
    unschedulable: conditions.some((c) =>
      c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable"
    ),
    containerReasons: reasons,
  };
}

function leaseOf(lease: k8s.V1Lease): LeaseRecord {
  const renew = lease.spec?.renewTime ?? lease.spec?.acquireTime;
  return {
    name: lease.metadata?.name ?? "",
    holder: lease.spec?.holderIdentity ?? "",
    durationS: lease.spec?.leaseDurationSeconds ?? 0,
    renewTime: renew ? new Date(renew as unknown as string).getTime() : 0,
    resourceVersion: lease.metadata?.resourceVersion ?? "",
  };
}

/** NetcheckCluster backed by client-node. */
export class ClientNodeCluster implements NetcheckCluster {
  readonly #core: k8s.CoreV1Api;
  readonly #apps: k8s.AppsV1Api;
  readonly #coordination: k8s.CoordinationV1Api;
  readonly #exec: k8s.Exec;

  constructor(readonly lib: ClientNode, readonly kubeConfig: k8s.KubeConfig) {
    this.#core = kubeConfig.makeApiClient(lib.CoreV1Api);
    this.#apps = kubeConfig.makeApiClient(lib.AppsV1Api);
    this.#coordination = kubeConfig.makeApiClient(lib.CoordinationV1Api);
    this.#exec = new lib.Exec(kubeConfig);
  }

  async ensureNamespace(namespace: string): Promise<void> {
    try {
      await this.#core.readNamespace({ name: namespace });
      return;
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
    }
    try {
      await this.#core.createNamespace({ body: { metadata: { name: namespace } } });
    } catch (e) {
      if (statusOf(e) !== 409) throw e;
    }
  }

  async applyDaemonSet(namespace: string, manifest: Record<string, unknown>): Promise<void> {
    const body = manifest as k8s.V1DaemonSet;
    try {
      await this.#apps.createNamespacedDaemonSet({ namespace, body });
    } catch (e) {
      // A retried create whose first attempt went through: bring it to this manifest.
      if (statusOf(e) !== 409) throw e;
      await this.#apps.patchNamespacedDaemonSet(
        { name: body.metadata!.name!, namespace, body },
        this.lib.setHeaderOptions("Content-Type", this.lib.PatchStrategy.MergePatch),
      );
    }
  }

  async daemonSetDesired(namespace: string, name: string): Promise<number | null> {
    try {
      const ds = await this.#apps.readNamespacedDaemonSet({ name, namespace });
      return ds.status?.desiredNumberScheduled ?? 0;
    } catch (e) {
      if (statusOf(e) === 404) return null;
      throw e;
    }
  }

  async deleteDaemonSet(namespace: string, name: string): Promise<void> {
    try {
      await this.#apps.deleteNamespacedDaemonSet({
        name,
        namespace,
        propagationPolicy: "Background",
        gracePeriodSeconds: 0,
      });
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
    }
  }

  async listPods(namespace: string, labelSelector: string): Promise<ProbePod[]> {
    const list = await this.#core.listNamespacedPod({ namespace, labelSelector });
    return list.items.map(probePodOf);
  }

  exec(
    namespace: string,
    pod: string,
    container: string,
    command: string[],
    options: ExecOptions,
  ): Promise<ExecResult> {
    // At most EXEC_OUTPUT_LIMIT bytes are kept: a pod that answers without end has its session
    // closed at the first byte beyond (the path fails as TOO_LONG).
    const output = new ExecOutput();
    let overflow = () => {};
    const sink = (stream: "stdout" | "stderr") =>
      new Writable({
        write(chunk: Uint8Array, _enc, cb) {
          if (!output.add(stream, chunk)) overflow();
          cb();
        },
      });
    return new Promise<ExecResult>((resolve) => {
      let status: k8s.V1Status | undefined;
      let socket: { close(): void } | undefined;
      let settled = false;
      const finish = (error?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        try {
          socket?.close();
        } catch { /* already closed */ }
        const result: ExecResult = {
          exitCode: error === undefined ? exitCodeOf(status) : -1,
          ...output.text(),
        };
        if (output.tooLong) result.tooLong = true;
        if (error !== undefined) result.error = error;
        else if (!status) result.error = "exec session closed without a status";
        else if (result.exitCode === -1) result.error = status.message ?? "exec failed";
        resolve(result);
      };
      const onAbort = () => finish("interrupted");
      overflow = () => finish(tooLongError(output.limit));
      const timer = setTimeout(
        () => finish(`no result within ${options.timeoutMs / 1000}s`),
        options.timeoutMs,
      );
      options.signal?.addEventListener("abort", onAbort, { once: true });
      if (options.signal?.aborted) return finish("interrupted");
      this.#exec.exec(
        namespace,
        pod,
        container,
        command,
        sink("stdout"),
        sink("stderr"),
        null,
        false,
        (s) => {
          status = s;
        },
      ).then((ws) => {
        socket = ws;
        if (settled) ws.close();
        ws.addEventListener("close", () => finish());
      }, (e) => finish(errorText(e)));
    });
  }

  async getLease(namespace: string, name: string): Promise<LeaseRecord | null> {
    try {
      return leaseOf(await this.#coordination.readNamespacedLease({ name, namespace }));
    } catch (e) {
      if (statusOf(e) === 404) return null;
      throw e;
    }
  }

  #leaseBody(lease: LeaseRecord): k8s.V1Lease {
    const renew = new this.lib.V1MicroTime(lease.renewTime);
    return {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        name: lease.name,
        ...(lease.resourceVersion ? { resourceVersion: lease.resourceVersion } : {}),
        ...(lease.owner ? { ownerReferences: [lease.owner] } : {}),
      },
      spec: {
        holderIdentity: lease.holder,
        leaseDurationSeconds: lease.durationS,
        acquireTime: renew,
        renewTime: renew,
      },
    };
  }

  async createLease(namespace: string, lease: LeaseRecord): Promise<LeaseRecord> {
    try {
      const body = this.#leaseBody(lease);
      return leaseOf(await this.#coordination.createNamespacedLease({ namespace, body }));
    } catch (e) {
      if (statusOf(e) === 409) throw new ConflictError(`Lease "${lease.name}" exists`);
      throw e;
    }
  }

  async updateLease(namespace: string, lease: LeaseRecord): Promise<LeaseRecord> {
    try {
      const body = this.#leaseBody(lease);
      return leaseOf(
        await this.#coordination.replaceNamespacedLease({ name: lease.name, namespace, body }),
      );
    } catch (e) {
      if (statusOf(e) === 409) throw new ConflictError(`Lease "${lease.name}" changed`);
      throw e;
    }
  }

  async configMapOwner(namespace: string, name: string): Promise<OwnerReference> {
    const map = await this.#core.readNamespacedConfigMap({ name, namespace });
    return { apiVersion: "v1", kind: "ConfigMap", name, uid: map.metadata!.uid! };
  }

  async deleteLease(namespace: string, name: string): Promise<void> {
    try {
      await this.#coordination.deleteNamespacedLease({ name, namespace });
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
    }
  }
}

/**
 * Connects to the cluster of `kubeconfig` through the shared loader
 * (--kubeconfig, then KUBECONFIG, then in-cluster). An operator's machine
 * often has none of those but ~/.kube/config, so that is tried last.
 * Imports client-node only when called.
 */
export async function connectCluster(kubeconfig: string): Promise<ClientNodeCluster> {
  const { loadKubeConfig } = await import("../../kube/client.ts");
  const lib = await import("../../kube/k8s.ts");
  let path = kubeconfig;
  const home = Deno.env.get("HOME");
  if (
    !path && !Deno.env.get("KUBECONFIG") && !Deno.env.get("KUBERNETES_SERVICE_HOST") && home
  ) {
    const fallback = `${home}/.kube/config`;
    if (await Deno.stat(fallback).then(() => true, () => false)) path = fallback;
  }
  return new ClientNodeCluster(lib, loadKubeConfig({ kubeconfig: path }));
}
