/**
 * Figure 1's stage: a simulated node with one pod network (the pod reachable
 * marked and unmarked alike), the kubelet cgroup with Lace attached beside the
 * programs of bench/hook_programs.ts, a second plain sibling, the connect
 * worker, and the maps and pod ranges filled to a given size.
 */
import { fileURLToPath } from "node:url";
import { defaultConfig } from "../lib/config.ts";
import { markFor } from "../lib/probe/key.ts";
import { Datapath } from "../lib/datapath/loader.ts";
import { type ProgramName, uninstall } from "../lib/datapath/pins.ts";
import type { ProbeKey } from "../lib/probe/key.ts";
import { hostRange, parseCidr, type PodRange } from "../lib/net/cidr.ts";
import { SimCgroups } from "../lib/demo/cgroup.ts";
import { run } from "../lib/os/process.ts";
import { POD_IPV4, POD_IPV6, SimNode, simNodeAddresses } from "../lib/demo/netns.ts";
import type { ConnectResponse } from "./connect_worker.ts";
import { FAMILIES, type Family, type Side } from "./hook_cells.ts";
import { fillerKeys } from "./hook_filler_keys.ts";
import { type BenchPrograms, loadBenchPrograms } from "./hook_programs.ts";
import { JsonLineChild } from "./json_child.ts";
import { benchPinPath } from "./system.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";

const POD_ADDRESS: Record<Family, string> = { ipv4: POD_IPV4, ipv6: POD_IPV6 };

export interface HookBench {
  cgroups: SimCgroups;
  /** The kubelet's Lace. */
  datapath: Datapath;
  progIds: Record<ProgramName, number>;
  programs: BenchPrograms;
  sibling2: string;
  /** The mark of the pod's network. */
  mark: number;
  /** The pod's port: the first of each family is a probe target, the second is not. */
  port: (family: Family, match: boolean) => number;
  connects: (side: Side, count: number) => Promise<ConnectResponse>;
  /** Fills every program's maps and ranges up to `size` targets (only ever grows). */
  fillTo: (size: number) => void;
}

export async function setUpHookBench(cleanups: CleanupStack): Promise<HookBench> {
  const node = await SimNode.create({ networks: [1] });
  cleanups.push(() => node.dispose());
  // The pod is reachable unmarked too (the node's main table, same veth), for the non-matching
  // connects. With the same source address as the network's table gives: without one, IPv6
  // picks a source per connect and an unmarked connect costs more than a marked one.
  const pod = node.networks[0];
  const src = simNodeAddresses(pod.id);
  const mainRoutes = [
    ["-4", `${POD_IPV4}/32`, src.ipv4],
    ["-6", `${POD_IPV6}/128`, src.ipv6],
  ];
  for (const [flag, to, from] of mainRoutes) {
    await run([
      "ip",
      "-n",
      node.netns,
      flag,
      "route",
      "add",
      to,
      "dev",
      `vn${pod.id}`,
      "src",
      from,
    ]);
  }
  const cgroups = SimCgroups.create();
  cleanups.push(() => cgroups.dispose());
  const pinPath = benchPinPath();
  cleanups.push(() => uninstall(pinPath));
  const datapath = Datapath.open({ pinPath });
  cleanups.push(() => datapath.close());
  datapath.attach(cgroups.kubelet);
  const progIds = Object.fromEntries(datapath.links().map((l) => [l.program, l.progId])) as Record<
    ProgramName,
    number
  >;
  const programs = await loadBenchPrograms(cgroups, cleanups);
  const sibling2 = cgroups.child("bench-sibling2");

  // nsenter, not `ip netns exec`: that one remounts /sys, hiding the cgroup tree the worker moves in.
  const worker = await JsonLineChild.spawn("connect worker", [
    "nsenter",
    `--net=/run/netns/${node.netns}`,
    Deno.execPath(),
    "run",
    "-A",
    fileURLToPath(new URL("./connect_worker.ts", import.meta.url)),
    `/run/netns/${pod.podNetns}`,
    POD_IPV4,
    POD_IPV6,
  ]);
  cleanups.push(() => worker.close());
  const ports = worker.ready.ports as Record<Family, [number, number]>;
  const connects = async (side: Side, count: number): Promise<ConnectResponse> => {
    const res = await worker.request<ConnectResponse>({ ...side, count });
    if (res.error) throw new Error(`Connects from "${side.cgroup}" failed: ${res.error}`);
    return res;
  };

  // The first port of each family is registered as a probe target, the second is not.
  const mark = markFor(defaultConfig(), 1);
  const matchKeys = FAMILIES.map((family) => ({
    key: { family, address: POD_ADDRESS[family], port: ports[family][0] } as ProbeKey,
    value: { networkId: 1, mark },
  }));
  const filler = fillerKeys();
  let entries = 0;
  // The pod ranges as an agent keeps them: the operator's CIDRs (which the filler addresses lie
  // in, loopback not) and one host range per pod address, so a non-matching connect pays for
  // the trie lookup it does on a real node.
  const ranges: PodRange[] = [parseCidr("10.0.0.0/8", 2), parseCidr("fd00::/8", 2)];
  // The other programs that look up get the same targets in maps of their own, so they look up
  // alike; Lace's other copies get the kubelet's ranges, and the "outside" one's ranges leave the
  // pod's addresses (10.244.1.10, fd00:244::10) out.
  const laceCopies = [datapath, ...programs.lace.map((p) => p.datapath)];
  const stores = [
    ...laceCopies,
    ...programs.lookup.map((p) => p.datapath),
    programs.outside.datapath,
  ]
    .map((d) => d.store);
  const outsideRanges: PodRange[] = [parseCidr("10.0.0.0/16", 2), parseCidr("fd00::/32", 2)];
  const fillTo = (size: number) => {
    if (size > 0 && entries === 0) {
      for (const e of matchKeys) for (const store of stores) store.put(e);
      entries += matchKeys.length;
    }
    for (; entries < size; entries++) {
      const key = filler.next().value as ProbeKey;
      for (const store of stores) store.put({ key, value: { networkId: 2, mark } });
      ranges.push(hostRange(key.address, 2));
      outsideRanges.push(hostRange(key.address, 2));
    }
    for (const d of laceCopies) d.unmatched?.syncRanges(ranges);
    programs.outside.datapath.unmatched?.syncRanges(outsideRanges);
  };
  const port = (family: Family, match: boolean) => ports[family][match ? 0 : 1];

  // Warm up every path (page faults, first-use costs) before anything is measured.
  const warm = [
    cgroups.kubelet,
    cgroups.other,
    sibling2,
    ...[programs.noop, programs.outside, ...programs.lookup, ...programs.lace].map((p) => p.cgroup),
  ];
  for (const cgroup of warm) {
    await connects({ cgroup, family: "ipv4", port: port("ipv4", false) }, 200);
  }
  return { cgroups, datapath, progIds, programs, sibling2, mark, port, connects, fillTo };
}
