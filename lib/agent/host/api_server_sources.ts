/**
 * Where the API server's addresses are read from (api_server_addresses.ts): the agent's own
 * kubeconfig, the `kubernetes` Service and its EndpointSlice in `default` and kubeadm's `cluster-info`
 * in `kube-public` (through the reads the caller passes, the Kubernetes client's), and the
 * kubelet's kubeconfig, found on its command line through /proc. Each read is bounded in time,
 * so a hung API call is a failed read.
 */
import { lookup } from "node:dns/promises";
import { realTimers, type Timers, within } from "../../time/timers.ts";
import { apiStatus } from "../../kube/api_error.ts";
import { getLogger } from "@logtape/logtape";
import { errorText } from "../../text/error.ts";
import {
  type ApiServerSource,
  kubeconfigFlag,
  kubeconfigHosts,
  MAX_SOURCE_ADDRESSES,
  serverHost,
} from "./api_server_addresses.ts";

const log = getLogger(["lace", "agent", "api-server-addresses"]);

/** How long one read of a source may take. */
export const API_SERVER_READ_MS = 10_000;

/** The `kubernetes` Service, as far as it is read here. */
interface ServiceObject {
  spec?: { clusterIP?: string; clusterIPs?: string[] };
}
/** The `kubernetes` EndpointSlice, as far as it is read here. */
export interface EndpointSliceObject {
  endpoints?: { addresses?: string[] }[];
}

/**
 * A GET of `what` bounded in time, its failure in one short line: the HTTP status and the API's
 * own message (client-node's text carries the whole response, headers too). A 404 is `undefined`.
 */
async function getObject<T>(what: string, read: () => Promise<T>, timers: Timers) {
  try {
    return await within(timers, read(), API_SERVER_READ_MS, `GET ${what}`);
  } catch (e) {
    const status = apiStatus(e);
    if (status === 404) return undefined;
    if (status === undefined) throw e;
    let message = "";
    try {
      message = JSON.parse(String((e as { body?: unknown }).body)).message ?? "";
    } catch { /* no Status in the body */ }
    throw new Error(`GET ${what}: HTTP ${status}${message ? `: ${message}` : ""}`);
  }
}

/** Resolves a host name as the kubelet's client would (getaddrinfo: /etc/hosts too). */
export async function resolveHost(name: string): Promise<string[]> {
  return (await lookup(name, { all: true })).map((r) => r.address);
}

/** The host of the server the agent's own kubeconfig names (`server`: its cluster's URL). */
export function agentKubeconfigSource(server: () => string | undefined): ApiServerSource {
  return {
    name: "agent-kubeconfig",
    read: () => {
      const url = server();
      const host = url === undefined ? undefined : serverHost(url);
      if (host === undefined) {
        return Promise.reject(new Error(`the agent's kubeconfig names no server URL (${url})`));
      }
      return Promise.resolve([host]);
    },
  };
}

/** The ClusterIPs of the `kubernetes` Service in `default` (`read`: a GET of it). */
export function kubernetesServiceSource(
  read: () => Promise<ServiceObject>,
  timers: Timers = realTimers,
): ApiServerSource {
  return {
    name: "kubernetes-service",
    read: async () => {
      const svc = await getObject("service default/kubernetes", read, timers);
      if (svc === undefined) throw new Error("service default/kubernetes does not exist");
      const ips = svc.spec?.clusterIPs?.length ? svc.spec.clusterIPs : [svc.spec?.clusterIP ?? ""];
      const out = ips.filter((ip) => ip && ip !== "None");
      if (out.length === 0) throw new Error("service default/kubernetes has no ClusterIP");
      return out;
    },
  };
}

/**
 * The endpoints of the `kubernetes` Service, ready or not, from the one EndpointSlice the API
 * server writes for it (`read`: a GET of `default/kubernetes`, `discovery.k8s.io/v1`): the API
 * server's own addresses as it publishes them. kube-apiserver's endpoint reconciler
 * (pkg/controlplane/reconcilers/endpointsadapter.go) names that slice `kubernetes`, one address
 * family, with no label but kubernetes.io/service-name (no endpointslice.kubernetes.io/managed-by
 * to tell it by), so it is read by name: a list by that label would also take any other slice in
 * `default` carrying it, which whoever may create EndpointSlices there can write (another
 * tenant's pod address held by the host, or the real one pushed past the cap). Not the v1
 * Endpoints, deprecated since Kubernetes 1.33 (every read warned and counted in
 * apiserver_requested_deprecated_apis). A not-ready address is the API server's too (one
 * shutting down, kubelets may still be connected to it). None where there is no such slice (the
 * API server publishes no endpoints, e.g. --endpoint-reconciler-type=none).
 */
export function kubernetesEndpointSliceSource(
  read: () => Promise<EndpointSliceObject>,
  timers: Timers = realTimers,
): ApiServerSource {
  return {
    name: "kubernetes-endpointslice",
    read: async () => {
      const slice = await getObject("endpointslice default/kubernetes", read, timers);
      const out: string[] = [];
      for (const endpoint of slice?.endpoints ?? []) {
        for (const address of endpoint.addresses ?? []) {
          if (out.length === MAX_SOURCE_ADDRESSES) return out;
          if (typeof address === "string" && address) out.push(address);
        }
      }
      return out;
    },
  };
}

/**
 * The servers of the kubeconfig kubeadm publishes in kube-public's `cluster-info` ConfigMap: its
 * control-plane endpoint, which the nodes' kubelets talk to; behind a load balancer (an HA
 * control plane) that address is in neither the `kubernetes` Service nor its EndpointSlice. None
 * where there is no such ConfigMap (404: not a kubeadm cluster).
 */
export function clusterInfoSource(
  read: () => Promise<{ data?: Record<string, string> }>,
  timers: Timers = realTimers,
): ApiServerSource {
  return {
    name: "cluster-info",
    read: async () => {
      const cm = await getObject("configmap kube-public/cluster-info", read, timers);
      return kubeconfigHosts(cm?.data?.kubeconfig ?? "");
    },
  };
}

/** What the kubelet source reads of /proc (the host's; a fake in tests). */
export interface KubeletFiles {
  /** /proc/<pid>/cmdline's text. */
  cmdline(pid: number): string;
  /** A file as the process sees it (through /proc/<pid>/root; relative to its cwd). */
  readFile(pid: number, path: string): string;
}

/** The host's /proc. */
export function procKubeletFiles(procRoot = "/proc"): KubeletFiles {
  return {
    cmdline: (pid) => Deno.readTextFileSync(`${procRoot}/${pid}/cmdline`),
    readFile: (pid, path) =>
      Deno.readTextFileSync(
        path.startsWith("/") ? `${procRoot}/${pid}/root${path}` : `${procRoot}/${pid}/cwd/${path}`,
      ),
  };
}

/**
 * The servers the kubelet's kubeconfig names (its command line's --kubeconfig). Nothing while
 * the kubelet's pid is not known or its command line names no kubeconfig, nor where the agent may
 * not look into the kubelet's files (/proc/<pid>/root needs CAP_SYS_PTRACE over a process with
 * more capabilities: the chart's agent has not, and the agent's other sources name its API
 * server there), said once; a kubeconfig it names that cannot be read otherwise is a failed read.
 */
export function kubeletKubeconfigSource(
  pid: () => number | null,
  files: KubeletFiles = procKubeletFiles(),
  onDenied: (path: string, error: unknown) => void = (path, error) =>
    log.info(
      "The kubelet's kubeconfig {path} is not readable by the agent ({error}): its server is not among the API server's addresses held, the agent's kubeconfig and the kubernetes Service's are",
      { path, error: errorText(error) },
    ),
): ApiServerSource {
  let denied = false;
  return {
    name: "kubelet-kubeconfig",
    read: () => {
      let path: string | undefined;
      try {
        const p = pid();
        if (p === null) return Promise.resolve([]);
        path = kubeconfigFlag(files.cmdline(p).split("\0"));
        if (path === undefined) return Promise.resolve([]);
        return Promise.resolve(kubeconfigHosts(files.readFile(p, path)));
      } catch (e) {
        if (path !== undefined && e instanceof Deno.errors.PermissionDenied) {
          if (!denied) onDenied(path, e);
          denied = true;
          return Promise.resolve([]);
        }
        return Promise.reject(new Error("reading the kubelet's kubeconfig failed", { cause: e }));
      }
    },
  };
}
