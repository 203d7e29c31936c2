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
import { CoreV1Api } from "@kubernetes/client-node";
import { join } from "node:path";
import { randomSuffix, run } from "../../lib/cli/process.ts";
import { CleanupStack } from "../../lib/cleanup_stack.ts";
import { type ControlPlane, startControlPlane } from "../kube/fixture.ts";
import { ManagedProcess, tail } from "../kube/_process.ts";
import { nodeToolPaths } from "../kube/tools.ts";
import { CGROUP_V1, CGROUP_V2, killCgroups, removeCgroupTree, V1_CONTROLLERS } from "./cgroups.ts";
import { importImages, startContainerd } from "./containerd.ts";
import { buildImages } from "./images.ts";
import { enterNodeNamespaces } from "./namespaces.ts";
import { installNetPlugin, networkPluginToken } from "./net_plugin_setup.ts";
import { createNodeNetwork, NODE_IP } from "./network.ts";
import { kubeletConfig } from "./node_config.ts";
import { waitFor } from "../helpers/wait.ts";

export interface Node {
  readonly name: string;
  readonly dir: string;
  readonly controlPlane: ControlPlane;
  /** The kubelet's cgroup v2 directory as the host sees it (for node.kubeletCgroupPath). */
  readonly kubeletCgroup: string;
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
  close(): Promise<void>;
}

async function writeFile(path: string, text: string, mode = 0o644): Promise<string> {
  await Deno.writeTextFile(path, text, { mode });
  return path;
}

/**
 * Brings up the node and waits until it is Ready in the API. Its result is AsyncDisposable;
 * any failure on the way tears down what was made and rethrows with the node's logs.
 */
export async function startNode(): Promise<Node & AsyncDisposable> {
  const tools = await nodeToolPaths();
  const sfx = randomSuffix();
  const name = `lace-knode-${sfx}`;
  const dir = await Deno.makeTempDir({ prefix: `${name}-` });
  const cleanup = new CleanupStack(`node ${name}`);
  const timings: Record<string, number> = {};
  const logFiles: string[] = [];
  let phase = performance.now();
  const mark = (what: string) => {
    const now = performance.now();
    timings[what] = Math.round(now - phase);
    phase = now;
  };
  cleanup.push(() => Deno.remove(dir, { recursive: true }).catch(() => {}));
  let controlPlane: ControlPlane | undefined;

  try {
    // Network namespace with loopback, uplink and the pod networks' node side.
    const netns = name;
    await createNodeNetwork(netns, cleanup);
    mark("network");

    // Cgroups: the node's processes, the pods' root, the kubelet's own v2 directory.
    const pidsRoot = join(CGROUP_V1, "pids", name);
    const v2Root = join(CGROUP_V2, name);
    const kubeletCgroup = join(v2Root, "kubelet");
    await Deno.mkdir(join(pidsRoot, "node"), { recursive: true });
    await Deno.mkdir(kubeletCgroup, { recursive: true });
    cleanup.push(async () => {
      for (const controller of V1_CONTROLLERS) {
        await removeCgroupTree(join(CGROUP_V1, controller, name));
      }
      await removeCgroupTree(v2Root);
    });
    const allCgroups = [...V1_CONTROLLERS.map((c) => join(CGROUP_V1, c, name)), v2Root];
    cleanup.push(() => killCgroups(allCgroups));

    // Images and the lace tree the node also mounts at LACE_IMAGE_HOME.
    const imagesDir = join(dir, "images");
    await Deno.mkdir(imagesDir);
    const images = await buildImages(imagesDir);
    const laceTree = join(imagesDir, "lace-rootfs");
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
    });
    const plane = controlPlane;
    cleanup.push(() => plane.close());
    const port = new URL(plane.url).port;
    // The kubernetes Service address (10.96.0.1:443), as kube-proxy would make it, for the
    // agent's in-cluster config.
    await run([
      "nsenter",
      `--net=/run/netns/${netns}`,
      "--",
      "nft",
      `add table ip lace_node; add chain ip lace_node out { type nat hook output priority -100; }; ` +
      `add rule ip lace_node out ip daddr 10.96.0.1 tcp dport 443 dnat to 127.0.0.1:${port}`,
    ]);
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
      "--controllers=daemonset-controller,serviceaccount-controller," +
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

    // containerd, with our shim first on its PATH and Debian's runc.
    const netConf = join(dir, "net.d");
    await Deno.mkdir(netConf);
    const containerd = await startContainerd({ tools, dir, netConf, cniBin, node, cleanup });
    const socket = containerd.socket;
    mark("containerd");
    await importImages(containerd, Object.values(images));
    mark("image import");

    // The pod network: our plugin's launcher, then the conflist naming it and `lace`.
    await installNetPlugin({
      dir,
      node,
      cniBin,
      netConf,
      apiServer: plane.url,
      caFile,
      tokenFile,
    });

    // The kubelet, alone in its cgroup v2 directory.
    const kubeletDir = join(dir, "kubelet");
    await Deno.mkdir(kubeletDir);
    const kubeletYaml = await writeFile(
      join(dir, "kubelet.yaml"),
      kubeletConfig({
        runtimeSocket: socket,
        cgroupRoot: `/${name}`,
        podLogsDir: join(dir, "pod-logs"),
        port: 10250,
        healthzPort: 10248,
      }),
    );
    const kubeletArgs = [
      tools.kubelet,
      `--config=${kubeletYaml}`,
      `--kubeconfig=${plane.kubeconfigPath}`,
      `--root-dir=${kubeletDir}`,
      `--hostname-override=${name}`,
      `--node-ip=${NODE_IP}`,
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
    mark("kubelet ready");

    const logs = async (maxLines = 40) => {
      const parts = [await plane.logs(maxLines)];
      for (const file of logFiles) parts.push(`--- ${file} ---\n${await tail(file, maxLines)}`);
      return parts.join("\n");
    };
    const close = () => cleanup.run();
    return {
      name,
      dir,
      controlPlane: plane,
      kubeletCgroup,
      exec,
      execResult,
      restartKubelet,
      logs,
      timings,
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    let logs = "";
    for (const file of logFiles) logs += `--- ${file} ---\n${await tail(file, 30)}\n`;
    if (controlPlane) logs += await controlPlane.logs(20).catch(() => "");
    if (Deno.env.get("LACE_KEEP_NODE") === "1") {
      console.warn(`Keeping ${dir} for inspection (processes are stopped)`);
      await Deno.rename(dir, `${dir}-kept`).catch(() => {});
    }
    await cleanup.run().catch((e) => console.error(e));
    throw new Error(`The node did not start: ${error}\n${logs}`, { cause: error });
  }
}
