/**
 * `lace status`: whether every node's agent is attached to the kubelet's cgroup and ready, for
 * the whole cluster, through the Kubernetes API and the agents' node listeners (the chart's
 * `helm test` runs it; Cilium's `cilium status` is the model). It reads the agent's DaemonSet
 * and lists its pods (get on that DaemonSet, list pods in its namespace: nothing else), then
 * asks each agent's listener on its node's IP for /readyz and the lace_attached series of
 * /metrics, which every pod may reach and which name no tenant. Exit 0 when every node that
 * should run an agent runs one that is attached and ready, 1 otherwise (with what is wrong
 * where), 2 on bad flags.
 */
import { apiErrorText, apiStatus } from "../kube/api_error.ts";
import { realTimers, sleep, type Timers } from "../time/timers.ts";
import {
  type AgentAnswer,
  type AgentPodView,
  type DaemonSetView,
  statusJson,
  type StatusReport,
  statusReport,
  statusText,
} from "./agents_status.ts";
import {
  type CommandSpec,
  duration,
  integer,
  parseCommand,
  text,
  UsageError,
} from "../flags/parser.ts";
import { outputFlags, type OutputSettings } from "../flags/output.ts";

interface StatusOptions extends OutputSettings {
  daemonSet: string;
  kubeconfig: string;
  metricsPort: number;
  waitMs: number;
}

/** The command's flags, for its help and shell completion. */
export const statusCommand: CommandSpec<StatusOptions> = {
  name: "status",
  summary:
    "Check that every node's agent is attached to the kubelet's cgroup and ready, through the Kubernetes API and each agent's listener on its node's IP (the chart's helm test). Exit 0 when all are, 1 otherwise.",
  usage:
    "lace status [--daemonset NS/NAME] [--kubeconfig FILE] [--metrics-port N] [--wait DURATION] [-o text|json]",
  flags: [
    {
      name: "daemonset",
      key: "daemonSet",
      value: text,
      env: ["LACE_DAEMONSET"],
      metavar: "NS/NAME",
      help: "The agent's DaemonSet",
    },
    {
      name: "kubeconfig",
      key: "kubeconfig",
      value: text,
      env: ["LACE_KUBECONFIG", "KUBECONFIG"],
      metavar: "FILE",
      help: "Kubeconfig file (default: in-cluster service account)",
    },
    {
      name: "metrics-port",
      key: "metricsPort",
      value: integer,
      metavar: "PORT",
      help:
        "Port of the agents' listener on their node's IP (the chart's node.metricsPort); 0 asks the API only (the pods' Ready condition)",
    },
    {
      name: "wait",
      key: "waitMs",
      value: duration,
      help: "Check again until every agent is attached and ready, for at most this long",
    },
    ...outputFlags<StatusOptions>(),
  ],
  defaults: () => ({
    daemonSet: "lace-system/lace",
    kubeconfig: "",
    metricsPort: 9808,
    waitMs: 0,
    output: "text",
  }),
};

/** How long one agent's listener may take to answer one request. */
const REQUEST_MS = 5000;
/** Agents asked at once: a large cluster is asked a slice at a time. */
const CONCURRENCY = 32;
/** Time between two checks while --wait lasts. */
const RECHECK_MS = 2000;

/** What `lace status` reads through the API: the DaemonSet and its pods. */
export interface AgentsSource {
  daemonSet(): Promise<DaemonSetView & { selector: string; uid: string }>;
  pods(selector: string, ownerUid: string): Promise<AgentPodView[]>;
}

/** Asks one agent's listener; never throws (a failure is the answer's error). */
export type AskAgent = (hostIP: string, port: number) => Promise<AgentAnswer>;

/** `hostIP:port` as a URL's authority (IPv6 in brackets). */
export function authority(hostIP: string, port: number): string {
  return hostIP.includes(":") ? `[${hostIP}]:${port}` : `${hostIP}:${port}`;
}

/** Asks the agent's /readyz and /metrics on its node's IP with fetch. */
export const fetchAgent: AskAgent = async (hostIP, port) => {
  const base = `http://${authority(hostIP, port)}`;
  try {
    const get = (path: string) =>
      fetch(`${base}${path}`, { signal: AbortSignal.timeout(REQUEST_MS) });
    const readyz = await get("/readyz");
    const body = await readyz.text();
    const metrics = await get("/metrics");
    if (!metrics.ok) {
      await metrics.body?.cancel();
      return { error: `its listener ${base} answered /metrics with ${metrics.status}` };
    }
    return { readyz: { status: readyz.status, body }, metrics: await metrics.text() };
  } catch (e) {
    return {
      error: `its listener ${base} did not answer (${(e as Error).message}): pods must reach ` +
        "the agents' metrics port on their node's IP (node.metricsHost, network policies), " +
        "or check with --metrics-port 0",
    };
  }
};

/** Runs `ask` over `items`, at most `limit` at a time, keeping their order. */
async function inSlices<T, R>(items: T[], limit: number, ask: (item: T) => Promise<R>) {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await ask(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** One check: the DaemonSet, its pods and, with a port, each agent's answer. */
export async function checkAgents(
  source: AgentsSource,
  ask: AskAgent,
  metricsPort: number,
): Promise<StatusReport> {
  const ds = await source.daemonSet();
  const pods = await source.pods(ds.selector, ds.uid);
  const answers = await inSlices(
    pods,
    CONCURRENCY,
    (pod) =>
      metricsPort > 0 && pod.hostIP ? ask(pod.hostIP, metricsPort) : Promise.resolve(undefined),
  );
  return statusReport(ds, pods.map((pod, i) => ({ pod, answer: answers[i] })));
}

/**
 * Checks until every agent is attached and ready or `waitMs` passed on `timers`, a check every
 * RECHECK_MS; returns the last report.
 */
export async function checkUntil(
  check: () => Promise<StatusReport>,
  waitMs: number,
  timers: Timers = realTimers,
): Promise<StatusReport> {
  const deadline = timers.now() + waitMs;
  for (;;) {
    const report = await check();
    const left = deadline - timers.now();
    if (report.ok || left <= 0) return report;
    await sleep(timers, Math.min(RECHECK_MS, left));
  }
}

/** The selector `matchLabels` make, as a label selector's text. */
export function labelSelector(matchLabels: Record<string, string> | undefined): string {
  return Object.entries(matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(",");
}

/** The agents' DaemonSet and pods through client-node (the only part that imports it). */
async function apiSource(
  kubeconfig: string,
  namespace: string,
  name: string,
): Promise<AgentsSource> {
  const { loadKubeConfig } = await import("../kube/client.ts");
  const { AppsV1Api, CoreV1Api } = await import("../kube/k8s.ts");
  const config = loadKubeConfig({ kubeconfig });
  const apps = config.makeApiClient(AppsV1Api);
  const core = config.makeApiClient(CoreV1Api);
  const refused = (what: string, verb: string) => (e: unknown): never => {
    const status = apiStatus(e);
    const hint = status === 403
      ? `: its identity needs ${verb} (the chart's test Role grants it)`
      : status === 404
      ? `: no such DaemonSet (--daemonset NAMESPACE/NAME)`
      : "";
    throw new Error(`cannot read ${what}: ${apiErrorText(e)}${hint}`, { cause: e });
  };
  return {
    async daemonSet() {
      const ds = await apps.readNamespacedDaemonSet({ name, namespace })
        .catch(
          refused(`DaemonSet ${namespace}/${name}`, `get on daemonsets "${name}" in ${namespace}`),
        );
      const selector = labelSelector(ds.spec?.selector?.matchLabels);
      if (!selector) {
        throw new Error(
          `DaemonSet ${namespace}/${name} has no matchLabels selector: it is not the chart's`,
        );
      }
      return {
        namespace,
        name,
        uid: ds.metadata?.uid ?? "",
        selector,
        desired: ds.status?.desiredNumberScheduled ?? 0,
      };
    },
    async pods(selector, ownerUid) {
      const list = await core.listNamespacedPod({ namespace, labelSelector: selector })
        .catch(refused(`the pods of ${namespace}`, `list on pods in ${namespace}`));
      // Only the DaemonSet's own pods: another DaemonSet may share its labels.
      return list.items
        .filter((p) => p.metadata?.ownerReferences?.some((o) => o.uid === ownerUid))
        .map((p) => {
          const container = p.status?.containerStatuses?.find((c) => c.name === "agent") ??
            p.status?.containerStatuses?.[0];
          const waiting = container?.state?.waiting;
          return {
            name: p.metadata?.name ?? "",
            node: p.spec?.nodeName,
            hostIP: p.status?.hostIP,
            phase: p.status?.phase,
            ready: p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ??
              false,
            waiting: waiting?.reason
              ? `${waiting.reason}${waiting.message ? ` (${waiting.message})` : ""}`
              : undefined,
            terminating: p.metadata?.deletionTimestamp != null,
          };
        });
    },
  };
}

/** Parses NAMESPACE/NAME. */
function namespacedName(text: string): [string, string] {
  const m = /^([a-z0-9][-a-z0-9.]*)\/([a-z0-9][-a-z0-9.]*)$/.exec(text);
  if (!m) throw new UsageError(`--daemonset must be NAMESPACE/NAME: "${text}"`);
  return [m[1], m[2]];
}

export async function runStatusCommand(args: string[]): Promise<number> {
  const options = parseCommand(statusCommand, args);
  if (options === null) return 0;
  const [namespace, name] = namespacedName(options.daemonSet);
  if (options.metricsPort > 65535) {
    throw new UsageError(`--metrics-port must be 0..65535: ${options.metricsPort}`);
  }
  const source = await apiSource(options.kubeconfig, namespace, name);
  const report = await checkUntil(
    () => checkAgents(source, fetchAgent, options.metricsPort),
    options.waitMs,
  );
  console.log(options.output === "json" ? statusJson(report) : statusText(report));
  return report.ok ? 0 : 1;
}
