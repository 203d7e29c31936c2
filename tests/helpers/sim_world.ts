/**
 * A whole simulated node for one test: two overlay networks whose pods share
 * one IPv4 and one IPv6 address, a kubelet and an "other" cgroup with a
 * prober in each, and a Datapath pinned under a unique bpffs path. Everything
 * is removed on dispose, in reverse order, even when building it failed.
 */
import { defaultConfig, markFor } from "../../lib/config.ts";
import { Datapath, uninstall } from "../../lib/datapath.ts";
import { bpffsMountPoints, readMountInfo } from "../../lib/mountinfo.ts";
import type { ProbeKey } from "../../lib/probe_map.ts";
import { SimCgroups } from "../../lib/sim/cgroup.ts";
import { randomSuffix } from "../../lib/sim/exec.ts";
import { POD_IPV4, POD_IPV6, SimNode } from "../../lib/sim/netns.ts";
import { PodServer } from "../../lib/sim/pod_server.ts";
import { Prober } from "../../lib/sim/prober.ts";

export const HTTP_PORTS = [8080, 8081, 8082];
export const TCP_PORTS = [9000, 9001, 9002];
export { POD_IPV4, POD_IPV6 };

/** Why privileged tests are skipped, or undefined when they can run. */
export function privilegedSkipReason(): string | undefined {
  if (Deno.uid() !== 0) return "needs root (netns, cgroups, BPF)";
  return undefined;
}

/** A unique pin path under the bpffs mount. */
export function testPinPath(): string {
  const bpffs = bpffsMountPoints(readMountInfo())[0];
  if (!bpffs) throw new Error("bpffs is not mounted: run `mount -t bpf bpf /sys/fs/bpf`");
  return `${bpffs}/lace-test-${randomSuffix()}`;
}

export class SimWorld implements AsyncDisposable {
  node!: SimNode;
  cgroups!: SimCgroups;
  pinPath!: string;
  datapath!: Datapath;
  kubelet!: Prober;
  other!: Prober;
  readonly #cleanups: (() => unknown)[] = [];

  /** Builds everything; the datapath is attached to the kubelet cgroup. */
  static async create(): Promise<SimWorld> {
    const w = new SimWorld();
    try {
      w.node = await SimNode.create({ networks: [1, 2] });
      w.#cleanups.push(() => w.node.dispose());
      w.cgroups = SimCgroups.create();
      w.#cleanups.push(() => w.cgroups.dispose());
      for (const net of w.node.networks) {
        const server = await PodServer.start({
          netns: net.podNetns,
          name: net.pod,
          addresses: [POD_IPV4, POD_IPV6],
          httpPorts: HTTP_PORTS,
          tcpPorts: TCP_PORTS,
        });
        w.#cleanups.push(() => server.dispose());
      }
      w.pinPath = testPinPath();
      w.#cleanups.push(() => uninstall(w.pinPath));
      w.datapath = Datapath.open({ pinPath: w.pinPath });
      w.#cleanups.push(() => w.datapath.close());
      w.datapath.attach(w.cgroups.kubelet);
      w.kubelet = await Prober.start({ netns: w.node.netns, cgroup: w.cgroups.kubelet });
      w.#cleanups.push(() => w.kubelet.dispose());
      w.other = await Prober.start({ netns: w.node.netns, cgroup: w.cgroups.other });
      w.#cleanups.push(() => w.other.dispose());
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
    const errors: unknown[] = [];
    while (this.#cleanups.length) {
      try {
        await this.#cleanups.pop()!();
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length) throw new AggregateError(errors, "SimWorld cleanup failed");
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}
