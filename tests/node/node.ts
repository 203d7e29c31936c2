/**
 * A real Kubernetes node on this machine, for end-to-end tests of Lace as users run it: etcd,
 * kube-apiserver, kube-controller-manager and kube-scheduler (the control plane of
 * tests/kube/fixture.ts), containerd 2 with Debian's runc, and the real kubelet, all built by
 * scripts/build_k8s_tools.sh. Everything lives in namespaces made here:
 * - a node network namespace: loopback for the control plane, an uplink veth pair whose both
 *   ends are inside (the kubelet needs a default route to find its node IP; nothing leaves),
 *   and per pod network a bridge plus a routing table that only the mark contract selects;
 * - a node mount namespace (held by one process): its own bpffs on /sys/fs/bpf, tmpfs on /run
 *   and /opt, so the chart's host paths (/sys/fs/bpf, /run/lace, /opt/cni/bin) are this node's;
 * - cgroups: every process of the node in `pids:/lace-node-*`, the pods under the kubelet's
 *   cgroupRoot `/lace-node-*` in the v1 controllers, and the kubelet alone in its own cgroup v2
 *   directory (the chart's node.kubeletCgroupPath).
 * close() kills every process in those cgroups, then removes cgroups, the namespaces and the
 * run's directory; a failed start does the same.
 */
import { join } from "node:path";
import { type ControlPlane, startControlPlane } from "../kube/fixture.ts";
import { ManagedProcess } from "../kube/_process.ts";
import { nodeToolPaths } from "../kube/tools.ts";
import { makeNodeCgroups } from "./cgroups.ts";
import { buildE2eImages } from "./e2e_images.ts";
import { buildImages, buildLaceVariantImage, type IMAGES } from "./images.ts";
import { enterNodeNamespaces } from "./namespaces.ts";
import { networkPluginToken } from "./net_plugin_setup.ts";
import { addKubernetesService, createNodeNetwork, letPodsReachNode, NODE_IP } from "./network.ts";
import { startNodeRuntime } from "./node_runtime.ts";
import { beginNodeStart } from "./node_start.ts";
import { waitFor } from "../helpers/wait.ts";

export interface Node {
  readonly name: string;
  readonly dir: string;
  readonly controlPlane: ControlPlane;
  /** The kubelet's cgroup v2 directory as the host sees it (for node.kubeletCgroupPath). */
  readonly kubeletCgroup: string;
  /** The node's pid 1 as the machine sees it: `nsenter --target` enters the node through it. */
  readonly initPid: number;
  /** Runs a command inside the node's network and mount namespaces and returns its stdout. */
  exec(cmd: string[]): Promise<string>;
  /** The same, but returns the whole result without throwing. */
  execResult(cmd: string[]): Promise<Deno.CommandOutput>;
  /** Stops the kubelet, removes and re-creates its cgroup, starts it again (as systemd does). */
  restartKubelet(): Promise<void>;
  /** Logs of the node's processes, for a failure message. */
  logs(maxLines?: number): Promise<string>;
  /** Measured start-up phases in ms. */
  readonly timings: Record<string, number>;
  /** The archives of the images built here (IMAGES), by name. */
  readonly images: Record<keyof typeof IMAGES, string>;
  /** Every image archive the node imported (upstream's too), for another node to import. */
  readonly archives: readonly string[];
  /** The lace image's tree (mounted at LACE_IMAGE_HOME in the node). */
  readonly laceTree: string;
  /** The variant lace image's BPF object (NodeOptions.laceVariant), if it was built. */
  readonly variantObject?: string;
  /** The cluster CA and the network plugin's token, in files. */
  readonly caFile: string;
  readonly tokenFile: string;
  close(): Promise<void>;
}

export interface NodeOptions {
  /**
   * The first node of several (tests/node/second_node.ts joins another): the API server execs
   * into pods through each kubelet at its node IP with a client certificate the kubelets trust;
   * pods in these namespaces join the named network without a label. `lace` is chained as on a
   * single node; installLaceOnNodes (second_node.ts) runs the agent on every node.
   */
  cluster?: { namespaceNetworks: Record<string, string> };
  /**
   * false: the network plugin's conflist starts without `lace`, as on a node Lace was never
   * installed on (the chart's auto-chaining adds it); default true: chained by hand.
   */
  chainLace?: boolean;
  /** Also import LACE_VARIANT_IMAGE (images.ts), for a chart upgrade to another BPF object. */
  laceVariant?: boolean;
  /**
   * The hand-chained `lace` entry says the agent runs with node.addressSharing=shared, as the
   * agent's own chaining writes it: an ADD no agent answers then keeps the entries there.
   */
  sharedAddresses?: boolean;
  /**
   * Each namespace's pods join a network of its own, made on the namespace's first pod
   * (namespace_networks.ts); the network label still picks another (scripts/dev node).
   */
  networkPerNamespace?: boolean;
  /**
   * Pods of the fixed networks reach the kubernetes Service and the node's IP, as in a cluster
   * (letPodsReachNode: the chart's helm test asks the agent's listener there).
   */
  podsReachNode?: boolean;
  /** Also import the images upstream's e2e tests run, under their names (e2e_images.ts). */
  upstreamImages?: boolean;
  /** Every pod gets an IPv6 address only (the network label's family, for all pods). */
  ipv6Only?: boolean;
  /**
   * The API server reaches the kubelet (logs, exec, port-forward) at the node IP with a client
   * certificate the kubelet trusts, as the first node of a cluster does (`kubectl logs`, and the
   * e2e specs that read a pod's log).
   */
  kubeletApi?: boolean;
  /** The kubelet's pod limit (default 50; the probe bench runs its default 110 and the agent). */
  maxPods?: number;
}

async function writeFile(path: string, text: string, mode = 0o644): Promise<string> {
  await Deno.writeTextFile(path, text, { mode });
  return path;
}

/**
 * Brings up the node and waits until it is Ready in the API. Its result is AsyncDisposable;
 * any failure on the way tears down what was made and rethrows with the node's logs.
 */
export async function startNode(options: NodeOptions = {}): Promise<Node & AsyncDisposable> {
  const tools = await nodeToolPaths();
  const start = await beginNodeStart();
  const { name, dir, cleanup, timings, logFiles, mark } = start;
  let controlPlane: ControlPlane | undefined;

  try {
    // Network namespace with loopback, uplink and the pod networks' node side.
    const netns = name;
    await createNodeNetwork(netns, cleanup);
    mark("network");

    // Cgroups: the node's processes, the pods' root, the kubelet's own v2 directory.
    const { pidsRoot, kubeletCgroup } = await makeNodeCgroups(name, cleanup);

    // Images and the lace tree the node also mounts at LACE_IMAGE_HOME.
    const imagesDir = join(dir, "images");
    await Deno.mkdir(imagesDir);
    const images = await buildImages(imagesDir);
    const upstreamImages = options.upstreamImages ? await buildE2eImages(imagesDir) : [];
    const laceTree = join(imagesDir, "lace-rootfs");
    const variantArchive = join(imagesDir, "lace-variant.oci.tar");
    const variantObject = options.laceVariant
      ? await buildLaceVariantImage(laceTree, variantArchive)
      : undefined;
    mark("images");

    // The node's mount and PID namespaces, held by one process (pid 1 of the node) in the node's
    // cgroup.
    const cniBin = "/opt/cni/bin";
    const node = await enterNodeNamespaces({
      netns,
      dir,
      pidsRoot,
      laceTree,
      cniBin,
      cleanup,
      logFiles,
    });
    const { exec, execResult } = node;

    // The control plane inside the node's network namespace, relayed to the test's loopback.
    const relays: ManagedProcess[] = [];
    const exposePort = async (port: number) => {
      const socket = join(dir, `relay-${port}.sock`);
      const nodeSide = await ManagedProcess.spawn(
        "nsenter",
        [
          `--net=/run/netns/${netns}`,
          "--",
          "socat",
          `UNIX-LISTEN:${socket},fork`,
          `TCP:127.0.0.1:${port}`,
        ],
        join(dir, `relay-${port}-node.log`),
      );
      const hostSide = await ManagedProcess.spawn(
        "socat",
        [`TCP-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork`, `UNIX-CONNECT:${socket}`],
        join(dir, `relay-${port}-host.log`),
      );
      relays.push(nodeSide, hostSide);
      await waitFor(async () => {
        await Deno.stat(socket);
        return true;
      }, { timeout: 5000, interval: 250, message: `relay socket ${socket}` });
    };
    cleanup.push(async () => {
      for (const relay of relays) await relay.stop(1000);
    });
    controlPlane = await startControlPlane({
      spawnPrefix: ["nsenter", `--net=/run/netns/${netns}`, "--"],
      exposePort,
      kubeletClient: options.cluster !== undefined || options.kubeletApi === true,
    });
    const plane = controlPlane;
    cleanup.push(() => plane.close());
    const port = new URL(plane.url).port;
    // The kubernetes Service address (10.96.0.1:443), as kube-proxy would make it, for the
    // agent's in-cluster config.
    await addKubernetesService(netns, port);
    if (options.podsReachNode) await letPodsReachNode(netns, NODE_IP);
    const caFile = await writeFile(join(dir, "ca.pem"), plane.caPem);
    // The network plugin's identity: the chart's default networkAnnotationWriters.
    const tokenFile = await writeFile(
      join(dir, "lace-cni.token"),
      await networkPluginToken(plane),
      0o600,
    );
    mark("control plane");

    // Controller manager and scheduler: DaemonSet pods, ServiceAccounts, the root CA ConfigMap.
    await node.spawn("kube-controller-manager", [
      tools.kubeControllerManager,
      `--kubeconfig=${plane.kubeconfigPath}`,
      "--leader-elect=false",
      "--controllers=daemonset-controller,deployment-controller,replicaset-controller," +
      "serviceaccount-controller," +
      "root-ca-certificate-publisher-controller,garbage-collector-controller," +
      "namespace-controller",
      `--root-ca-file=${caFile}`,
      "--use-service-account-credentials=false",
      "--secure-port=0",
      "--v=1",
    ]);
    await node.spawn("kube-scheduler", [
      tools.kubeScheduler,
      `--kubeconfig=${plane.kubeconfigPath}`,
      "--leader-elect=false",
      "--secure-port=0",
      "--v=1",
    ]);

    const archives = [
      ...Object.values(images),
      ...upstreamImages,
      ...(variantObject ? [variantArchive] : []),
    ];
    const { restartKubelet } = await startNodeRuntime({
      name,
      dir,
      tools,
      node,
      cleanup,
      plane,
      images: archives,
      cniBin,
      caFile,
      tokenFile,
      kubeletCgroup,
      nodeIp: NODE_IP,
      networkPerNamespace: options.networkPerNamespace,
      ipv6Only: options.ipv6Only,
      ...((options.cluster || options.kubeletApi) && {
        kubeletAddress: NODE_IP,
        clientCAFile: caFile,
      }),
      ...(options.cluster && { namespaceNetworks: options.cluster.namespaceNetworks }),
      ...(options.chainLace === false && { noAgent: true }),
      ...(options.sharedAddresses && { sharedAddresses: true }),
      maxPods: options.maxPods,
      mark,
    });

    const logs = async (maxLines = 40) =>
      `${await plane.logs(maxLines)}\n${await start.logs(maxLines)}`;
    const close = () => cleanup.run();
    return {
      name,
      dir,
      controlPlane: plane,
      kubeletCgroup,
      initPid: node.initPid,
      exec,
      execResult,
      restartKubelet,
      logs,
      timings,
      images,
      archives,
      laceTree,
      variantObject,
      caFile,
      tokenFile,
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    let logs = `${await start.logs(30)}\n`;
    if (controlPlane) logs += await controlPlane.logs(20).catch(() => "");
    if (Deno.env.get("LACE_KEEP_NODE") === "1") {
      console.warn(`Keeping ${dir} for inspection (processes are stopped)`);
      await Deno.rename(dir, `${dir}-kept`).catch(() => {});
    }
    await cleanup.run().catch((e) => console.error(e));
    throw new Error(`The node did not start: ${error}\n${logs}`, { cause: error });
  }
}
