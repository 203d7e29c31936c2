/**
 * The agent's parts that read and write the cluster, built for startAgent: the pod sources (the
 * directory's, the API's watch), the API pod lookup of the CNI ADD (exclusive only), the Event
 * recorder, the watch of the agent's own DaemonSet and the sources of the API server's addresses
 * (host/api_server_sources.ts). Each one started here pushes its stop onto `parts`.
 */
import { getLogger } from "@logtape/logtape";
import type { CleanupStack } from "../os/cleanup_stack.ts";
import type { Config } from "../config.ts";
import { addressSharingPolicy } from "../rules/address_sharing.ts";
import type { PodLookup, PodSource } from "../pods/source.ts";
import { DirPodSource } from "../pods/dir_source.ts";
import { type EventSink, noopEventSink } from "../kube/event_sink.ts";
import type { EventDropReason } from "../kube/event_drops.ts";
import type { ApiServerSource } from "./host/api_server_addresses.ts";

const log = getLogger(["lace", "agent"]);

export interface ClusterParts {
  sources: PodSource[];
  events: EventSink;
  /** Whether `helm uninstall` is under way (the agent's DaemonSet deleted); none without one. */
  uninstalling?: () => Promise<boolean>;
  podLookup?: PodLookup;
  /** Where the API server's addresses are read (host/api_server_sources.ts); none without API. */
  apiServerSources: ApiServerSource[];
  /** Reads this Node's status.nodeInfo.containerRuntimeVersion; none without the API. */
  readRuntimeVersion?: () => Promise<string>;
}

/** What the parts report for the metrics. */
export interface ClusterHooks {
  /** The API watch restarted. */
  onWatchRestart: () => void;
  /** Events the recorder dropped, by reason. */
  onEventDrop: (reason: EventDropReason, count: number) => void;
}

/** Builds the parts of the module comment. */
export async function clusterParts(
  config: Config,
  parts: CleanupStack,
  hooks: ClusterHooks,
): Promise<ClusterParts> {
  const { onWatchRestart } = hooks;
  const sources: PodSource[] = [];
  if (config.podsDir) {
    // A write that ended (closed, renamed in) is read at once; this quiet time only covers a
    // writer that has not closed its file, and the agent's scheduler gathers bursts of pods.
    sources.push(new DirPodSource(config.podsDir, config.nodeName, { debounceMs: 2 }));
  }
  let events: EventSink = noopEventSink;
  let uninstalling: (() => Promise<boolean>) | undefined;
  let podLookup: PodLookup | undefined;
  let readRuntimeVersion: (() => Promise<string>) | undefined;
  const apiServerSources: ApiServerSource[] = [];
  const sharing = addressSharingPolicy(config.addressSharing);
  if (sharing.startWarning) log.warning(sharing.startWarning);
  if (config.useApi) {
    // Loaded only here: the Kubernetes client costs tens of MiB of RSS, even as its bundle
    // (bench/RESULTS.md, figure 4).
    const { ApiPodSource } = await import("../pods/api_source.ts");
    const { loadKubeConfig } = await import("../kube/client.ts");
    const { EventRecorder } = await import("../kube/events.ts");
    const { AppsV1Api, CoreV1Api, DiscoveryV1Api, clientNodeOrigin, Watch } = await import(
      "../kube/k8s.ts"
    );
    log.debug("Kubernetes client loaded from its {origin}", { origin: clientNodeOrigin });
    const kubeConfig = loadKubeConfig({ kubeconfig: config.kubeconfig });
    // The ADD's clash check looks up a pod whose network the cache cannot tell yet.
    if (sharing.refusesClashAtAdd) {
      const { apiPodLookup } = await import("../pods/api_lookup.ts");
      podLookup = apiPodLookup(kubeConfig);
    }
    sources.push(
      new ApiPodSource({
        kubeConfig,
        nodeName: config.nodeName,
        annotations: [config.networkAnnotation, config.networkIdAnnotation],
        livenessMs: config.watchLivenessMs,
        onRestart: onWatchRestart,
      }),
    );
    const {
      agentKubeconfigSource,
      clusterInfoSource,
      kubernetesEndpointSliceSource,
      kubernetesServiceSource,
    } = await import("./host/api_server_sources.ts");
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const discovery = kubeConfig.makeApiClient(DiscoveryV1Api);
    const kubernetes = { name: "kubernetes", namespace: "default" };
    apiServerSources.push(
      agentKubeconfigSource(() => kubeConfig.getCurrentCluster()?.server),
      kubernetesServiceSource(() => core.readNamespacedService(kubernetes)),
      kubernetesEndpointSliceSource(() => discovery.readNamespacedEndpointSlice(kubernetes)),
      clusterInfoSource(() =>
        core.readNamespacedConfigMap({ name: "cluster-info", namespace: "kube-public" })
      ),
    );
    if (config.nodeName) {
      // For the chaining's choice of the CNI file the runtime uses (the chart's Role: get nodes).
      readRuntimeVersion = () =>
        core.readNode({ name: config.nodeName }).then((n) =>
          n.status?.nodeInfo?.containerRuntimeVersion ?? ""
        );
    }
    const recorder = new EventRecorder({
      api: core,
      nodeName: config.nodeName,
      onDrop: hooks.onEventDrop,
    });
    events = recorder;
    parts.push(() => recorder.stop());
    if (config.daemonSet) {
      // Its DaemonSet's deletion is what tells `helm uninstall` from a restart: the CNI files
      // (lib/agent/chaining.ts) and the pins (start.ts) go only then.
      const { OwnDaemonSet } = await import("../kube/own_daemonset.ts");
      const [namespace, name] = config.daemonSet.split("/");
      const apps = kubeConfig.makeApiClient(AppsV1Api);
      const watch = new Watch(kubeConfig);
      const own = new OwnDaemonSet({
        namespace,
        name,
        list: (fieldSelector) => apps.listNamespacedDaemonSet({ namespace, fieldSelector }),
        watch: (path, query, callback, done) => watch.watch(path, query, callback, done),
        get: () => apps.readNamespacedDaemonSet({ name, namespace }),
      });
      own.start();
      parts.push(() => own.stop());
      uninstalling = () => own.uninstalling();
    }
  }
  return { sources, events, uninstalling, podLookup, apiServerSources, readRuntimeVersion };
}
