/**
 * What makes a prepared node namespace a Kubernetes node: containerd with the node's images, the
 * pod network (our plugin, then `lace` when the agent runs there) and the real kubelet alone in
 * its cgroup v2 directory, registered with the API server and Ready. The first node
 * (tests/node/node.ts) and a second one (second_node.ts) start the same way.
 */
import { CoreV1Api } from "@kubernetes/client-node";
import { join } from "node:path";
import type { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import type { ControlPlane } from "../kube/fixture.ts";
import type { NodeToolPaths } from "../kube/tools.ts";
import { waitFor } from "../helpers/wait.ts";
import { importImages, startContainerd } from "./containerd.ts";
import type { NodeNamespaces } from "./namespaces.ts";
import { installNetPlugin } from "./net_plugin_setup.ts";
import type { PodSubnets } from "./network.ts";
import { kubeletConfig } from "./node_config.ts";

export interface NodeRuntimeOptions {
  /** The node's name in the API (also its namespaces' and cgroups' name). */
  name: string;
  /** The node's run directory. */
  dir: string;
  tools: NodeToolPaths;
  node: NodeNamespaces;
  cleanup: CleanupStack;
  plane: ControlPlane;
  /** Image archives to import. */
  images: readonly string[];
  /** The CNI plugins' directory inside the node. */
  cniBin: string;
  caFile: string;
  /** The network plugin's token in a file. */
  tokenFile: string;
  /** The kubelet's own cgroup v2 directory. */
  kubeletCgroup: string;
  nodeIp: string;
  /** Where the kubelet's server listens (default 127.0.0.1). */
  kubeletAddress?: string;
  /** The kubelet accepts client certificates of this CA (the API server's, for exec). */
  clientCAFile?: string;
  /** The node's pod ranges (default the first node's). */
  subnets?: PodSubnets;
  /** Network of unlabelled pods by namespace (see ConflistSettings). */
  namespaceNetworks?: Record<string, string>;
  /** Pods join the network named after their namespace (see ConflistSettings). */
  networkPerNamespace?: boolean;
  /** Every pod gets an IPv6 address only. */
  ipv6Only?: boolean;
  /** The namespace networks' ids in this file, shared with another node (ConflistSettings). */
  networksFile?: string;
  /** No agent runs on this node: no `lace` plugin is chained after ours. */
  noAgent?: boolean;
  /** The `lace` entry names addressSharing "shared" (NodeOptions.sharedAddresses). */
  sharedAddresses?: boolean;
  /** The kubelet's pod limit (default 50). */
  maxPods?: number;
  /** Records a start-up phase's duration. */
  mark(what: string): void;
}

export interface NodeRuntime {
  /** Stops the kubelet, removes and re-creates its cgroup, starts it again (as systemd does). */
  restartKubelet(): Promise<void>;
}

/** Starts containerd, imports the images, installs the pod network, starts the kubelet. */
export async function startNodeRuntime(o: NodeRuntimeOptions): Promise<NodeRuntime> {
  const { name, dir, tools, node, cleanup, plane, cniBin, kubeletCgroup } = o;
  // containerd, with our shim first on its PATH and Debian's runc.
  const netConf = join(dir, "net.d");
  await Deno.mkdir(netConf);
  const containerd = await startContainerd({ tools, dir, netConf, cniBin, node, cleanup });
  o.mark("containerd");
  await importImages(containerd, o.images);
  o.mark("image import");

  // The pod network: our plugin's launcher, then the conflist naming it (and `lace`).
  await installNetPlugin({
    dir,
    node,
    cniBin,
    netConf,
    apiServer: plane.url,
    caFile: o.caFile,
    tokenFile: o.tokenFile,
    overrides: {
      ...(o.noAgent ? { laceSocket: undefined } : {}),
      ...(o.sharedAddresses ? { laceAddressSharing: "shared" as const } : {}),
      ...(o.subnets ? { subnet4: o.subnets.v4, subnet6: o.subnets.v6 } : {}),
      ...(o.namespaceNetworks ? { namespaceNetworks: o.namespaceNetworks } : {}),
      ...(o.networkPerNamespace ? { networkPerNamespace: true } : {}),
      ...(o.networksFile ? { networksFile: o.networksFile } : {}),
      ...(o.ipv6Only ? { ipv6Only: true } : {}),
      ...(o.networkPerNamespace ? { uniqueAddresses: true } : {}),
    },
  });

  // The kubelet, alone in its cgroup v2 directory.
  const kubeletDir = join(dir, "kubelet");
  await Deno.mkdir(kubeletDir);
  const kubeletYaml = join(dir, "kubelet.yaml");
  await Deno.writeTextFile(
    kubeletYaml,
    kubeletConfig({
      runtimeSocket: containerd.socket,
      cgroupRoot: `/${name}`,
      podLogsDir: join(dir, "pod-logs"),
      port: 10250,
      healthzPort: 10248,
      address: o.kubeletAddress,
      clientCAFile: o.clientCAFile,
      maxPods: o.maxPods,
    }),
    { mode: 0o644 },
  );
  const kubeletArgs = [
    tools.kubelet,
    `--config=${kubeletYaml}`,
    `--kubeconfig=${plane.kubeconfigPath}`,
    `--root-dir=${kubeletDir}`,
    `--hostname-override=${name}`,
    `--node-ip=${o.nodeIp}`,
    "--v=2",
  ];
  let kubelet = await node.spawn("kubelet", kubeletArgs, kubeletCgroup);
  // As systemd restarts a unit: the process stops, its cgroup goes, a new one is made.
  const restartKubelet = async () => {
    await kubelet.stop();
    await Deno.remove(kubeletCgroup);
    await Deno.mkdir(kubeletCgroup);
    kubelet = await node.spawn("kubelet", kubeletArgs, kubeletCgroup);
  };
  const core = plane.adminConfig().makeApiClient(CoreV1Api);
  await waitFor(async () => {
    const node = await core.readNode({ name });
    return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ??
      false;
  }, { timeout: 90_000, interval: 250, message: `node ${name} to be Ready` });
  // The kubelet registers with the not-ready taint, which the node lifecycle controller (not run
  // here) lifts once the node is Ready; lifted here, so pods without its toleration schedule.
  const registered = await core.readNode({ name });
  const taints = (registered.spec?.taints ?? []).filter((t) =>
    t.key !== "node.kubernetes.io/not-ready"
  );
  await core.patchNode({ name, body: [{ op: "add", path: "/spec/taints", value: taints }] });
  o.mark("kubelet ready");
  return { restartKubelet };
}
