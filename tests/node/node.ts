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
import { CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { join } from "node:path";
import { randomSuffix, run } from "../../lib/cli/process.ts";
import { CleanupStack } from "../../lib/cleanup_stack.ts";
import { type ControlPlane, startControlPlane } from "../kube/fixture.ts";
import { ManagedProcess, tail } from "../kube/_process.ts";
import { nodeToolPaths } from "../kube/tools.ts";
import { buildImages, IMAGES, LACE_IMAGE_HOME } from "./images.ts";
import { conflist, containerdConfig, kubeletConfig, type NetworkSetting } from "./node_config.ts";

/** The three isolated pod networks; every one allocates from the same ranges. */
export const NETWORKS: NetworkSetting[] = [
  { name: "red", id: 1, bridge: "lnet1" },
  { name: "green", id: 2, bridge: "lnet2" },
  { name: "blue", id: 3, bridge: "lnet3" },
];
export const POD_SUBNET4 = "10.244.1.0/24";
export const POD_SUBNET6 = "fd00:244::/64";
export const NODE_IP = "10.200.0.1";
const UPLINK_PEER = "10.200.0.2";
const PROBE_FLAG = 0x1000;
const MARK_SHIFT = 16;

const V1_CONTROLLERS = [
  "cpu",
  "cpuacct",
  "cpuset",
  "memory",
  "devices",
  "freezer",
  "blkio",
  "pids",
];
const CGROUP_V1 = "/sys/fs/cgroup";
const CGROUP_V2 = "/sys/fs/cgroup/unified";

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

/** Pids in a cgroup directory and every cgroup below it. */
async function cgroupPids(dir: string): Promise<number[]> {
  const pids: number[] = [];
  const walk = async (path: string) => {
    try {
      const text = await Deno.readTextFile(join(path, "cgroup.procs"));
      for (const line of text.split("\n")) if (line) pids.push(Number(line));
      for await (const entry of Deno.readDir(path)) {
        if (entry.isDirectory) await walk(join(path, entry.name));
      }
    } catch {
      // Gone meanwhile.
    }
  };
  await walk(dir);
  return pids;
}

/** Removes a cgroup directory tree, deepest first; cgroupfs refuses rm -r. */
async function removeCgroupTree(dir: string): Promise<void> {
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isDirectory) await removeCgroupTree(join(dir, entry.name));
    }
    await Deno.remove(dir);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** SIGKILLs every process in the cgroups until none is left (or throws after 20 s). */
async function killCgroups(dirs: string[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (true) {
    const pids = (await Promise.all(dirs.map(cgroupPids))).flat();
    if (pids.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`Processes ${pids.join(", ")} of the node survived SIGKILL for 20 s`);
    }
    for (const pid of pids) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // Exited meanwhile.
      }
    }
    await delay(100);
  }
}

/**
 * Polls check every 250 ms until it returns a truthy value, which it returns; throws after
 * timeoutMs with the last error check threw. For the node's start and the tests on it.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    await delay(250);
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}: ${last ?? ""}`);
}

/**
 * A token of kube-system/lace-cni, the network plugin's ServiceAccount (the chart's default
 * admissionPolicy.networkAnnotationWriters), allowed to read and annotate pods.
 */
async function networkPluginToken(plane: ControlPlane): Promise<string> {
  const config = plane.adminConfig();
  const core = config.makeApiClient(CoreV1Api);
  const rbac = config.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({
    namespace: "kube-system",
    body: { metadata: { name: "lace-cni" } },
  });
  await rbac.createClusterRole({
    body: {
      metadata: { name: "lace-test-cni" },
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "patch"] }],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: "lace-test-cni" },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "lace-test-cni",
      },
      subjects: [{ kind: "ServiceAccount", name: "lace-cni", namespace: "kube-system" }],
    },
  });
  return await plane.serviceAccountToken("kube-system", "lace-cni", 4 * 3600);
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
    await run(["ip", "netns", "add", netns]);
    cleanup.push(() => run(["ip", "netns", "del", netns]));
    const ipn = (...args: string[]) => run(["ip", "-n", netns, ...args]);
    const sysctl = (kv: string) =>
      run(["nsenter", `--net=/run/netns/${netns}`, "--", "sysctl", "-qw", kv]);
    await ipn("link", "set", "lo", "up");
    for (
      const kv of [
        "net.ipv4.conf.all.rp_filter=0",
        "net.ipv4.conf.default.rp_filter=0",
        "net.ipv6.conf.all.accept_dad=0",
        "net.ipv6.conf.default.accept_dad=0",
      ]
    ) await sysctl(kv);
    await ipn("link", "add", "uplink0", "type", "veth", "peer", "name", "uplink1");
    await ipn("addr", "add", `${NODE_IP}/24`, "dev", "uplink0");
    await ipn("addr", "add", `${UPLINK_PEER}/24`, "dev", "uplink1");
    await ipn("addr", "add", "fd00:200::1/64", "dev", "uplink0", "nodad");
    await ipn("link", "set", "uplink0", "up");
    await ipn("link", "set", "uplink1", "up");
    await ipn("route", "add", "default", "via", UPLINK_PEER, "dev", "uplink0");
    for (const network of NETWORKS) {
      const table = String(100 + network.id);
      const nodeV4 = `10.99.${network.id}.1`, nodeV6 = `fd99::${network.id}`;
      await ipn("link", "add", network.bridge, "type", "bridge");
      await ipn("addr", "add", `${nodeV4}/32`, "dev", network.bridge);
      await ipn("addr", "add", `${nodeV6}/128`, "dev", network.bridge, "nodad");
      await ipn("link", "set", network.bridge, "up");
      await ipn("route", "add", POD_SUBNET4, "dev", network.bridge, "src", nodeV4, "table", table);
      await ipn(
        "-6",
        "route",
        "add",
        POD_SUBNET6,
        "dev",
        network.bridge,
        "src",
        nodeV6,
        "table",
        table,
      );
      // The README's mark contract: network bits select the table, whatever else is set.
      const value = (PROBE_FLAG | (network.id << MARK_SHIFT)) >>> 0;
      const mask = (PROBE_FLAG | (0xffff << MARK_SHIFT)) >>> 0;
      for (const family of ["-4", "-6"]) {
        await ipn(
          family,
          "rule",
          "add",
          "fwmark",
          `0x${value.toString(16)}/0x${mask.toString(16)}`,
          "lookup",
          table,
          "priority",
          "100",
        );
      }
    }
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
    // cgroup. Its own PID namespace keeps the machine's other processes out of the hostPID agent's
    // sight (another test's fake kubelet), and takes every node process down with pid 1.
    const cniBin = "/opt/cni/bin";
    const holderScript = [
      "set -e",
      // Shared inside this namespace only (it starts private): containerd wants host-to-container
      // mounts on shared or slave mounts.
      "mount --make-rshared /",
      "mount -t bpf bpf /sys/fs/bpf",
      "mount -t tmpfs -o mode=755 lace-node-run /run",
      "mount -t tmpfs -o mode=755 lace-node-opt /opt",
      `mkdir -p ${cniBin} ${LACE_IMAGE_HOME}`,
      `mount --bind ${laceTree}${LACE_IMAGE_HOME} ${LACE_IMAGE_HOME}`,
      // pid 1 of the node: reaps the runtime's orphans (shims, containers) as init does.
      "exec bash -c 'while :; do sleep 3600 & wait; done'",
    ].join("\n");
    const holderLog = join(dir, "holder.log");
    logFiles.push(holderLog);
    const holder = await ManagedProcess.spawn(
      "sh",
      [
        "-c",
        `echo $$ > ${pidsRoot}/node/cgroup.procs && exec "$@"`,
        "sh",
        "nsenter",
        `--net=/run/netns/${netns}`,
        "--",
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--pid",
        "--fork",
        "--mount-proc",
        "--",
        "sh",
        "-c",
        holderScript,
      ],
      holderLog,
    );
    let nodeInit = 0;
    // Killing the node's pid 1 kills every process in its PID namespace.
    cleanup.push(async () => {
      if (nodeInit) {
        try {
          Deno.kill(nodeInit, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
      await holder.stop(1000);
    });
    // unshare forks the node's pid 1; ready once its last mount is there.
    await waitFor("the node's namespaces", async () => {
      if (holder.exited) throw new Error(`holder exited: ${await tail(holderLog)}`);
      const children = await Deno.readTextFile(`/proc/${holder.pid}/task/${holder.pid}/children`);
      nodeInit = Number(children.trim().split(" ")[0]);
      if (!nodeInit) return false;
      const mounts = await Deno.readTextFile(`/proc/${nodeInit}/mountinfo`);
      return mounts.includes(` ${LACE_IMAGE_HOME} `);
    }, 10_000);
    const nsArgs = [`--target=${nodeInit}`, "--mount", "--net", "--pid"];
    const inNode = (cmd: string[]) => ["nsenter", ...nsArgs, "--", ...cmd];
    const execResult = (cmd: string[]) =>
      new Deno.Command(inNode(cmd)[0], {
        args: inNode(cmd).slice(1),
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
    const exec = (cmd: string[]) => run(inNode(cmd));
    /** Spawns a node process in the node cgroup (and the kubelet's v2 cgroup if asked). */
    const spawnInNode = async (
      label: string,
      cmd: string[],
      extraCgroup?: string,
      env: Record<string, string> = {},
    ) => {
      const log = join(dir, `${label}.log`);
      if (!logFiles.includes(log)) logFiles.push(log);
      // nsenter forks into the PID namespace and does not pass signals on: each process gets a
      // cgroup of its own, through which it is stopped.
      const own = join(pidsRoot, "node", label);
      await Deno.mkdir(own, { recursive: true });
      const joins = [`echo $$ > ${own}/cgroup.procs`];
      if (extraCgroup) joins.push(`echo $$ > ${extraCgroup}/cgroup.procs`);
      const envArgs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
      const process = await ManagedProcess.spawn(
        "sh",
        ["-c", `${joins.join(" && ")} && exec "$@"`, "sh", ...inNode(["env", ...envArgs, ...cmd])],
        log,
      );
      const stop = async () => {
        for (const pid of await cgroupPids(own)) {
          try {
            Deno.kill(pid, "SIGTERM");
          } catch {
            // Exited meanwhile.
          }
        }
        await waitFor(`${label} to stop`, async () => (await cgroupPids(own)).length === 0, 10_000)
          .catch(() => killCgroups([own]));
        await process.stop(1000);
      };
      cleanup.push(stop);
      return { stop };
    };

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
      await waitFor(`relay socket ${socket}`, async () => {
        await Deno.stat(socket);
        return true;
      }, 5000);
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
    await spawnInNode("kube-controller-manager", [
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
    await spawnInNode("kube-scheduler", [
      tools.kubeScheduler,
      `--kubeconfig=${plane.kubeconfigPath}`,
      "--leader-elect=false",
      "--secure-port=0",
      "--v=1",
    ]);

    // containerd, with our shim first on its PATH and Debian's runc.
    const containerdDir = join(dir, "containerd");
    const socket = join(dir, "containerd.sock");
    const netConf = join(dir, "net.d");
    await Deno.mkdir(netConf);
    const runc = (await run(["sh", "-c", "command -v runc"])).trim();
    const containerdToml = await writeFile(
      join(dir, "containerd.toml"),
      containerdConfig({
        root: join(containerdDir, "root"),
        state: join(containerdDir, "state"),
        socket,
        cniConfDir: netConf,
        cniBinDir: cniBin,
        sandboxImage: IMAGES.pause,
        runc,
      }),
    );
    // Without QoS cgroups the kubelet passes no cgroup parent, so runc puts every container in
    // /k8s.io/<id> of each controller: find this node's ids in containerd's own directories.
    cleanup.push(async () => {
      const ids = new Set<string>();
      for (
        const listing of [
          join(containerdDir, "root", "io.containerd.grpc.v1.cri", "containers"),
          join(containerdDir, "root", "io.containerd.grpc.v1.cri", "sandboxes"),
          join(containerdDir, "state", "io.containerd.runtime.v2.task", "k8s.io"),
        ]
      ) {
        try {
          for await (const entry of Deno.readDir(listing)) ids.add(entry.name);
        } catch {
          // Not created: no container of that kind.
        }
      }
      const dirs = [...ids].flatMap((id) =>
        V1_CONTROLLERS.map((c) => join(CGROUP_V1, c, "k8s.io", id))
      );
      await killCgroups(dirs);
      for (const cgroup of dirs) await removeCgroupTree(cgroup);
      // The shared parent goes only when no other runtime's container is left in it.
      for (const c of V1_CONTROLLERS) {
        await Deno.remove(join(CGROUP_V1, c, "k8s.io")).catch(() => {});
      }
    });
    const shimDir = join(tools.containerdShim, "..");
    await spawnInNode("containerd", [tools.containerd, "--config", containerdToml], undefined, {
      PATH: `${shimDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    });
    const ctr = (...args: string[]) => exec([tools.ctr, "--address", socket, ...args]);
    await waitFor("containerd", async () => {
      await ctr("version");
      return true;
    }, 30_000);
    mark("containerd");
    for (const archive of Object.values(images)) {
      await ctr("-n", "k8s.io", "images", "import", "--no-unpack=false", archive);
    }
    mark("image import");

    // The pod network: our plugin's launcher, then the conflist naming it and `lace`.
    const deno = Deno.execPath();
    const plugin = new URL("./net_plugin.ts", import.meta.url).pathname;
    const pluginHome = join(dir, "plugin");
    await Deno.mkdir(pluginHome);
    const launcher = await writeFile(
      join(pluginHome, "lace-testnet"),
      `#!/bin/sh\nexec ${deno} run --allow-all --no-prompt --quiet --no-lock ${plugin}\n`,
      0o755,
    );
    await exec(["cp", launcher, `${cniBin}/lace-testnet`]);
    await writeFile(
      join(netConf, "10-lace-test.conflist"),
      conflist({
        networks: NETWORKS,
        subnet4: POD_SUBNET4,
        subnet6: POD_SUBNET6,
        stateDir: join(dir, "ipam"),
        apiServer: plane.url,
        caFile,
        tokenFile,
        laceSocket: "/run/lace/cni.sock",
      }),
    );

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
    let kubelet = await spawnInNode("kubelet", kubeletArgs, kubeletCgroup);
    // As systemd restarts a unit: the process stops, its cgroup goes, a new one is made.
    const restartKubelet = async () => {
      await kubelet.stop();
      await Deno.remove(kubeletCgroup);
      await Deno.mkdir(kubeletCgroup);
      kubelet = await spawnInNode("kubelet", kubeletArgs, kubeletCgroup);
    };
    const core = plane.adminConfig().makeApiClient(CoreV1Api);
    await waitFor(`node ${name} to be Ready`, async () => {
      const node = await core.readNode({ name });
      return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ??
        false;
    }, 90_000);
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
