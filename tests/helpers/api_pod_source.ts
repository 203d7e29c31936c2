/**
 * ApiPodSource through the real client-node against the test API server, for the tests of what
 * it delivers (tests/pod_source_api_test.ts) and of how it recovers
 * (tests/pod_source_api_recovery_test.ts): a sink that records every call, pods on the node, and
 * a source whose own waits run on fake time that the test advances.
 */
import { ApiPodSource } from "../../lib/pods/api_source.ts";
import { loadKubeConfig } from "../../lib/kube/client.ts";
import type { Pod } from "../../lib/pods/pod.ts";
import type { PodSink } from "../../lib/pods/source.ts";
import { type KubeObject, TestApiServer } from "../api_server/mod.ts";
import { fakeTime } from "./fake_time.ts";
import { waitFor, type WaitOptions } from "./wait.ts";

/** The node whose pods the source watches. */
export const NODE = "node-a";

/** Records every call and keeps the pods the sink currently believes in. */
export class RecordingSink implements PodSink {
  calls: { op: "replaceAll" | "upsert" | "remove"; source: string; detail: string }[] = [];
  lists: Pod[][] = [];
  pods = new Map<string, Pod>();

  replaceAll(source: string, pods: Pod[]): void {
    this.calls.push({
      op: "replaceAll",
      source,
      detail: pods.map((p) => p.metadata.name).join(","),
    });
    this.lists.push(pods);
    this.pods = new Map(pods.map((p) => [p.metadata.uid, p]));
  }
  upsert(source: string, pod: Pod): void {
    this.calls.push({ op: "upsert", source, detail: pod.metadata.name });
    this.pods.set(pod.metadata.uid, pod);
  }
  remove(source: string, uid: string): void {
    this.calls.push({ op: "remove", source, detail: uid });
    this.pods.delete(uid);
  }
  names(): string[] {
    return [...this.pods.values()].map((p) => p.metadata.name).sort();
  }
}

/** A running pod `name` bound to `node`, with `extra` fields over the defaults. */
export function pod(name: string, node = NODE, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", labels: { app: name } },
    spec: { nodeName: node, containers: [{ name: "c", image: "i" }] },
    status: { phase: "Running", podIP: "10.0.0.1", podIPs: [{ ip: "10.0.0.1" }] },
    ...extra,
  };
}

/** Names of the pods on NODE in the server, the truth the sink must converge to. */
export function serverNames(server: TestApiServer): string[] {
  return server.store.list(server.typeOf({ apiVersion: "v1", kind: "Pod" }), {}).items
    .filter((p) => (p.spec as { nodeName?: string }).nodeName === NODE)
    .map((p) => p.metadata!.name!).sort();
}

/** Fake time the source's waits see advances by this much between two checks of a condition. */
const STEP_MS = 10;

/**
 * A test API server, a source watching NODE through it on fake time and a recording sink;
 * disposing it stops the source, then the server.
 */
export async function setup(
  options: {
    restarts?: unknown[];
    livenessMs?: number;
    pageSize?: number;
    maxPodBytes?: number;
    annotations?: string[];
  } = {},
) {
  const server = await TestApiServer.start();
  const kubeConfig = loadKubeConfig({ kubeconfig: await server.writeKubeconfig() });
  const { clock, timers } = fakeTime();
  const source = new ApiPodSource({
    kubeConfig,
    nodeName: NODE,
    backoff: { initialMs: 10, maxMs: 50 },
    livenessMs: options.livenessMs,
    probeTimeoutMs: 500,
    listTimeoutMs: 2_000,
    pageSize: options.pageSize,
    maxPodBytes: options.maxPodBytes,
    annotations: options.annotations,
    onRestart: (error) => options.restarts?.push(error),
    timers,
  });
  const sink = new RecordingSink();
  return {
    server,
    source,
    sink,
    clock,
    /** Waits for `condition`, moving the source's fake time on by STEP_MS before each check. */
    until<T>(condition: () => T, opts: WaitOptions) {
      return waitFor(async () => {
        await clock.tickAsync(STEP_MS);
        return condition();
      }, opts);
    },
    async [Symbol.asyncDispose]() {
      await source.stop();
      await server.close();
    },
  };
}

/** The watch requests the server has seen for pods. */
export const watchRequests = (server: TestApiServer) =>
  server.requests.filter((r) => r.path === "/api/v1/pods" && r.query.get("watch") === "true");
