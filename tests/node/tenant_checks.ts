/**
 * What the real node's isolation tests read from the tenant pods (tenant_pods.ts): the requests
 * a tenant server logged, a pod's Events, and its readiness sampled over a window.
 */
import type { CoreV1Api, CoreV1Event, V1Pod } from "@kubernetes/client-node";
import { waitFor } from "../helpers/wait.ts";
import type { Node } from "./node.ts";
import { containerLog, isReady } from "./pod_checks.ts";

/** One request a tenant server logged. */
export interface LoggedRequest {
  port: number;
  tls: boolean;
  uri: string;
  remote: string;
}

/** The requests in a tenant server's log, in order. */
export function loggedRequests(log: string): LoggedRequest[] {
  const requests: LoggedRequest[] = [];
  const pattern = /request port=(\d+) tls=(true|false) method=\S+ uri=(\S+) host=\S+ remote=(\S+)/g;
  for (const m of log.matchAll(pattern)) {
    requests.push({ port: Number(m[1]), tls: m[2] === "true", uri: m[3], remote: m[4] });
  }
  return requests;
}

/** The redirects a tenant server answered with: its port, code and location's scheme, in order. */
export function loggedRedirects(log: string): { port: number; code: number; scheme: string }[] {
  return [...log.matchAll(/redirect port=(\d+) code=(\d+) location=(\w+):/g)]
    .map((m) => ({ port: Number(m[1]), code: Number(m[2]), scheme: m[3] }));
}

/** The redirects a container of a pod has answered with so far ([] while it has no log yet). */
export async function redirectsOf(node: Node, pod: V1Pod, container: string) {
  const log = await containerLog(node, pod, container).catch(() => "");
  return loggedRedirects(log);
}

/** The requests a container of a pod has logged so far ([] while it has no log yet). */
export async function requestsOf(node: Node, pod: V1Pod, container: string) {
  const log = await containerLog(node, pod, container).catch(() => "");
  return loggedRequests(log);
}

/** The Events of one pod (by name) in a namespace, oldest first. */
export async function podEvents(
  core: CoreV1Api,
  namespace: string,
  name: string,
): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace });
  return list.items.filter((e) => e.involvedObject.name === name);
}

/** Creates a pod and waits until the predicate holds for it; returns it then. */
export async function createAndWait(
  core: CoreV1Api,
  body: V1Pod,
  until: (pod: V1Pod) => boolean,
  what: string,
  timeout = 90_000,
): Promise<V1Pod> {
  const namespace = body.metadata!.namespace!, name = body.metadata!.name!;
  await core.createNamespacedPod({ namespace, body });
  return await waitFor(async () => {
    const pod = await core.readNamespacedPod({ name, namespace });
    return until(pod) ? pod : undefined;
  }, { timeout, interval: 250, message: `pod ${namespace}/${name} ${what}` });
}

/**
 * Whether the pod has its addresses and every container has run at least once (running now, or
 * ended, as a container whose postStart hook failed is).
 */
export function allStarted(pod: V1Pod): boolean {
  const statuses = pod.status?.containerStatuses ?? [];
  return (pod.status?.podIPs?.length ?? 0) > 0 &&
    statuses.length === (pod.spec?.containers.length ?? -1) &&
    statuses.every((s) =>
      s.state?.running !== undefined || s.state?.terminated !== undefined ||
      s.lastState?.terminated !== undefined || s.restartCount > 0
    );
}

/** The pod's addresses, comma-separated. */
export function addressesOf(pod: V1Pod): string {
  return (pod.status?.podIPs ?? []).map((ip) => ip.ip).join(",");
}

/** Readiness samples of some pods, taken every `interval` ms until stopped. */
export interface ReadinessSampler {
  /** Stops sampling; returns each sample that found a pod not Ready, and the sample count. */
  stop(): Promise<{ notReady: string[]; samples: number }>;
}

/**
 * Samples the readiness of pods (namespace/name) until stopped: the assertion on what it saw is
 * the caller's, outside any wait. A read that fails counts as a failed sample, not as Ready.
 */
export function sampleReadiness(
  core: CoreV1Api,
  pods: { namespace: string; name: string }[],
  interval = 500,
): ReadinessSampler {
  const notReady: string[] = [];
  let samples = 0, running = true;
  const loop = (async () => {
    while (running) {
      for (const { namespace, name } of pods) {
        try {
          const pod = await core.readNamespacedPod({ name, namespace });
          if (!isReady(pod)) notReady.push(`${new Date().toISOString()} ${namespace}/${name}`);
        } catch (error) {
          notReady.push(`${new Date().toISOString()} ${namespace}/${name}: ${error}`);
        }
      }
      samples++;
      await new Promise((resolve) => setTimeout(resolve, interval));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { notReady, samples };
    },
  };
}

/** The Ready condition's last transition time (it changes if the pod was unready meanwhile). */
export function readySince(pod: V1Pod): string | undefined {
  const ready = pod.status?.conditions?.find((c) => c.type === "Ready");
  return ready?.status === "True" ? String(ready.lastTransitionTime) : undefined;
}

/** Deletes the pods at once (no grace unless `grace`) and waits until each one is gone. */
export async function deleteAndWait(core: CoreV1Api, pods: V1Pod[], grace = 0): Promise<void> {
  const names = pods.map((p) => ({ name: p.metadata!.name!, namespace: p.metadata!.namespace! }));
  for (const { name, namespace } of names) {
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: grace }).catch(() => {});
  }
  await waitFor(async () => {
    for (const { name, namespace } of names) {
      const list = await core.listNamespacedPod({
        namespace,
        fieldSelector: `metadata.name=${name}`,
      });
      if (list.items.length > 0) return false;
    }
    return true;
  }, { timeout: 60_000, interval: 250, message: `pods ${names.map((n) => n.name)} to be gone` });
}
