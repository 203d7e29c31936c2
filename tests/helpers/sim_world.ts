/**
 * A whole simulated node for one test: two overlay networks whose pods share
 * one IPv4 and one IPv6 address, a kubelet and an "other" cgroup with a
 * prober in each, and a Datapath pinned under a unique bpffs path. Everything
 * is removed on dispose, in reverse order, even when building it failed.
 */
import { defaultConfig } from "../../lib/config.ts";
import { markFor } from "../../lib/probe/key.ts";
import { Datapath } from "../../lib/datapath/loader.ts";
import { uninstall } from "../../lib/datapath/pins.ts";
import { bpffsMountPoints, readMountInfo } from "../../lib/os/mountinfo.ts";
import type { ProbeKey } from "../../lib/probe/key.ts";
import { SimCgroups } from "../../lib/demo/cgroup.ts";
import { claimSuffix } from "../../lib/demo/leftovers.ts";
import { POD_IPV4, POD_IPV6, SimNode } from "../../lib/demo/netns.ts";
import { PodServer } from "../../lib/demo/pod_server.ts";
import { Prober } from "../../lib/prober/mod.ts";
import { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import { needsRoot, skipIf, skipName } from "./skip.ts";

export const HTTP_PORTS = [8080, 8081, 8082];
export const TCP_PORTS = [9000, 9001, 9002];
export { POD_IPV4, POD_IPV6 };

/**
 * How a file registers its tests that need root (netns, cgroups, BPF): where they cannot run,
 * each is skipped with the reason in its name, not root or `missing` (what else the file needs
 * and this machine lacks: a program, a CNI plugin); as root a skip fails (helpers/skip.ts).
 */
export function privilegedTests(
  missing?: string,
): (name: string, fn: () => void | Promise<void>) => void {
  const why = needsRoot() ?? missing;
  const ignore = skipIf(why);
  return (name, fn) => Deno.test({ name: skipName(name, why), ignore, fn });
}

/** A unique pin path under the bpffs mount. */
export function testPinPath(): string {
  const bpffs = bpffsMountPoints(readMountInfo())[0];
  if (!bpffs) throw new Error("bpffs is not mounted: run `mount -t bpf bpf /sys/fs/bpf`");
  return `${bpffs}/lace-test-${claimSuffix()}`;
}

/**
 * Starts a simulated node with networks 1 and 2, the kubelet and "other"
 * cgroups, and a pod server in each network answering on POD_IPV4/POD_IPV6
 * at the given ports. Each part's removal goes on `cleanups`.
 */
export async function startNodeWithPods(
  cleanups: CleanupStack,
  ports: { httpPorts: number[]; tcpPorts: number[] },
): Promise<{ node: SimNode; cgroups: SimCgroups }> {
  const node = await SimNode.create({ networks: [1, 2] });
  cleanups.push(() => node.dispose());
  const cgroups = SimCgroups.create();
  cleanups.push(() => cgroups.dispose());
  for (const net of node.networks) {
    const server = await PodServer.start({
      netns: net.podNetns,
      name: net.pod,
      addresses: [POD_IPV4, POD_IPV6],
      ...ports,
    });
    cleanups.push(() => server.dispose());
  }
  return { node, cgroups };
}

/** Starts a prober in the kubelet cgroup and one in the "other" cgroup of `netns`. */
export async function startProbers(
  cleanups: CleanupStack,
  netns: string,
  cgroups: SimCgroups,
): Promise<{ kubelet: Prober; other: Prober }> {
  const kubelet = await Prober.start({ netns, cgroup: cgroups.kubelet });
  cleanups.push(() => kubelet.dispose());
  const other = await Prober.start({ netns, cgroup: cgroups.other });
  cleanups.push(() => other.dispose());
  return { kubelet, other };
}

/**
 * What every simulated world stands on: the node with its pods (see
 * `startNodeWithPods`), a unique pin path uninstalled on cleanup, and a
 * prober in the kubelet and the "other" cgroup. Each part's removal goes on `cleanups`.
 */
export async function startSimNode(
  cleanups: CleanupStack,
  ports: { httpPorts: number[]; tcpPorts: number[] },
): Promise<
  { node: SimNode; cgroups: SimCgroups; pinPath: string; kubelet: Prober; other: Prober }
> {
  const { node, cgroups } = await startNodeWithPods(cleanups, ports);
  const pinPath = testPinPath();
  cleanups.push(() => uninstall(pinPath));
  const probers = await startProbers(cleanups, node.netns, cgroups);
  return { node, cgroups, pinPath, ...probers };
}

export class SimWorld implements AsyncDisposable {
  node!: SimNode;
  cgroups!: SimCgroups;
  pinPath!: string;
  datapath!: Datapath;
  kubelet!: Prober;
  other!: Prober;
  readonly #cleanups = new CleanupStack("SimWorld");

  /** Builds everything; the datapath is attached to the kubelet cgroup. */
  static async create(): Promise<SimWorld> {
    const w = new SimWorld();
    try {
      Object.assign(
        w,
        await startSimNode(w.#cleanups, { httpPorts: HTTP_PORTS, tcpPorts: TCP_PORTS }),
      );
      w.datapath = Datapath.open({ pinPath: w.pinPath });
      w.#cleanups.push(() => w.datapath.close());
      w.datapath.attach(w.cgroups.kubelet);
      return w;
    } catch (e) {
      await w.dispose();
      throw e;
    }
  }

  /** Registers a probe target for a network with the contract mark. */
  register(key: ProbeKey, networkId: number): void {
    this.datapath.store.put({
      key,
      value: { networkId, mark: markFor(defaultConfig(), networkId) },
    });
  }

  async dispose(): Promise<void> {
    await this.#cleanups.run();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}
