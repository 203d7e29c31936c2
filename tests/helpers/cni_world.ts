/**
 * A simulated node for the CNI tests: a node network namespace where the
 * runtime runs the conflist `ptp` (real reference plugin, host-local IPAM) →
 * overlay routing → `lace`; an agent composed in-process (AgentCore, the real
 * Datapath attached to a kubelet cgroup, a directory pod source and the CNI
 * socket server); and probers in the kubelet and another cgroup. Pods live in
 * namespaces made here; the node reaches them only through the routing table
 * their network's mark selects, as on a Lace node. Dispose removes it all.
 */
import { AgentCore } from "../../lib/agent/core.ts";
import { cniHandlerFor } from "../../lib/cni/check.ts";
import { type CniServer, startCniServer } from "../../lib/cni/server.ts";
import { defaultConfig } from "../../lib/config.ts";
import { Datapath } from "../../lib/datapath/loader.ts";
import { uninstall } from "../../lib/datapath/pins.ts";
import { DirPodSource } from "../../lib/pods/dir_source.ts";
import { SimCgroups } from "../../lib/demo/cgroup.ts";
import { randomSuffix, run } from "../../lib/os/process.ts";
import { claimSuffix } from "../../lib/demo/leftovers.ts";
import { SimNode } from "../../lib/demo/netns.ts";
import { PodServer } from "../../lib/demo/pod_server.ts";
import type { Prober } from "../../lib/prober/mod.ts";
import { type AttachmentParams, CniChain, laceCommand } from "./cni_runtime.ts";
import { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import { startProbers, testPinPath } from "./sim_world.ts";
import { waitFor } from "./wait.ts";

export const NETWORK = "blue";
export const NETWORK_ID = 7;
const TABLE = 107;
export const HTTP_PORT = 8080;
export const TCP_PORT = 9000;

export interface TestPod {
  name: string;
  uid: string;
  netns: string;
  params: AttachmentParams;
  ip?: string;
}

/** A Pod manifest as the API holds it before the kubelet reports an IP: no status. */
export function podManifest(name: string, uid: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", uid, creationTimestamp: "2025-01-01T00:00:00Z" },
    spec: {
      containers: [{
        name: "app",
        readinessProbe: { httpGet: { port: HTTP_PORT, path: "/ready" } },
        livenessProbe: { tcpSocket: { port: TCP_PORT } },
      }],
    },
  };
}

export class CniWorld implements AsyncDisposable {
  node!: SimNode;
  cgroups!: SimCgroups;
  dir!: string;
  socket!: string;
  podsDir!: string;
  pinPath!: string;
  datapath!: Datapath;
  core?: AgentCore;
  server?: CniServer;
  kubelet!: Prober;
  other!: Prober;
  chain!: CniChain;
  subnet!: string;
  readonly #cleanups = new CleanupStack("CniWorld");

  /** Builds the node; `agent: false` leaves the socket without an agent. */
  static async create(opts: { agent: boolean; timeout?: string }): Promise<CniWorld> {
    const w = new CniWorld();
    try {
      w.node = await SimNode.create({ networks: [] });
      w.#cleanups.push(() => w.node.dispose());
      w.cgroups = SimCgroups.create();
      w.#cleanups.push(() => w.cgroups.dispose());
      w.dir = await Deno.makeTempDir({ prefix: "lace-cni-world-" });
      w.#cleanups.push(() => Deno.remove(w.dir, { recursive: true }));
      w.socket = `${w.dir}/run/lace/cni.sock`;
      w.podsDir = `${w.dir}/pods`;
      await Deno.mkdir(w.podsDir);
      const n = w.node.netns;
      // The overlay's routing: marked connects of this network look up its table.
      const mark = `0x${(NETWORK_ID << 16).toString(16)}/0xffff0000`;
      await run(["ip", "-n", n, "rule", "add", "fwmark", mark, "lookup", String(TABLE)]);
      w.subnet = `10.70.${1 + (crypto.getRandomValues(new Uint8Array(1))[0] % 250)}`;
      w.pinPath = testPinPath();
      w.#cleanups.push(() => uninstall(w.pinPath));
      w.datapath = Datapath.open({ pinPath: w.pinPath });
      w.#cleanups.push(() => w.datapath.close());
      w.datapath.attach(w.cgroups.kubelet);
      if (opts.agent) await w.#startAgent();
      ({ kubelet: w.kubelet, other: w.other } = await startProbers(w.#cleanups, n, w.cgroups));
      w.chain = new CniChain({
        name: "lace-blue",
        cniVersion: "1.0.0",
        runtimeNetns: n,
        plugins: [
          {
            conf: {
              type: "ptp",
              ipMasq: false,
              ipam: {
                type: "host-local",
                ranges: [[{ subnet: `${w.subnet}.0/24` }]],
                dataDir: `${w.dir}/ipam`,
              },
            },
          },
          { conf: { type: "overlay-routes" }, step: (c, prev) => w.#overlayRoutes(c, prev) },
          {
            conf: {
              type: "lace",
              network: NETWORK,
              networkId: NETWORK_ID,
              socket: w.socket,
              timeout: opts.timeout ?? "1s",
              pinPath: w.pinPath,
            },
            cmd: laceCommand(),
          },
        ],
      });
      return w;
    } catch (e) {
      await w.dispose();
      throw e;
    }
  }

  async #startAgent(): Promise<void> {
    const config = { ...defaultConfig(), debounceMs: 1 };
    const core = new AgentCore({
      config,
      store: this.datapath.store,
      sources: [new DirPodSource(this.podsDir, "", { debounceMs: 5 })],
    });
    await core.start();
    this.#cleanups.push(() => core.stop());
    this.core = core;
    this.server = await startCniServer(this.socket, cniHandlerFor(core, this.datapath.store));
    this.#cleanups.push(() => this.server?.close());
  }

  /**
   * What Lace's overlay plugin does before `lace` runs: the node reaches the
   * pod only through its network's table. ptp put the host route in the
   * main table; it moves to the network's table.
   */
  async #overlayRoutes(command: string, prev: Record<string, unknown> | undefined): Promise<void> {
    if (command !== "ADD" || !prev) return;
    const n = this.node.netns;
    for (const ip of prev.ips as { address: string }[]) {
      const address = ip.address.split("/")[0];
      const route = (await run(["ip", "-n", n, "route", "show", address])).trim();
      const dev = /\bdev (\S+)/.exec(route)?.[1];
      if (!dev) throw new Error(`ptp left no host route to ${address}: "${route}"`);
      await run(["ip", "-n", n, "route", "del", `${address}/32`, "dev", dev]);
      await run(["ip", "-n", n, "route", "add", `${address}/32`, "dev", dev, "table", `${TABLE}`]);
    }
  }

  /** A pod known to the pod source (as the API knows a bound pod) with its own netns. */
  async makePod(name: string): Promise<TestPod> {
    const uid = crypto.randomUUID();
    const netns = `lace-cnipod-${claimSuffix()}`;
    await run(["ip", "netns", "add", netns]);
    this.#cleanups.push(() => run(["ip", "netns", "del", netns]).catch(() => {}));
    await run(["ip", "-n", netns, "link", "set", "lo", "up"]);
    await Deno.writeTextFile(
      `${this.podsDir}/${name}.json`,
      JSON.stringify(podManifest(name, uid)),
    );
    if (this.core) {
      await waitFor(() => this.core!.cache.get(uid), {
        message: `pod ${name} in the agent's cache`,
      });
    }
    const containerId = randomSuffix(16);
    return {
      name,
      uid,
      netns,
      params: {
        containerId,
        netns: `/var/run/netns/${netns}`,
        ifname: "eth0",
        args: {
          IgnoreUnknown: "1",
          K8S_POD_NAMESPACE: "default",
          K8S_POD_NAME: name,
          K8S_POD_INFRA_CONTAINER_ID: containerId,
          K8S_POD_UID: uid,
        },
      },
    };
  }

  /** Starts the pod's servers on its address (after ADD gave it one). */
  async startPodServer(pod: TestPod): Promise<void> {
    const server = await PodServer.start({
      netns: pod.netns,
      name: pod.name,
      addresses: [pod.ip!],
      httpPorts: [HTTP_PORT],
      tcpPorts: [TCP_PORT],
    });
    this.#cleanups.push(() => server.dispose());
  }

  async dispose(): Promise<void> {
    await this.#cleanups.run();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}
