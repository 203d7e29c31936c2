/**
 * The unmatched-connect counters and the range filter in front of their trie, on the real
 * kernel: which kubelet connects a network counts, and how the program reads the filter map.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { linkPinName, openPinnedLink } from "../lib/datapath/pins.ts";
import { hostRange, parseCidr } from "../lib/net/cidr.ts";
import { BpfMap, programMapIds } from "../lib/libbpf/mod.ts";
import {
  computeRangeFilter,
  encodeRangeFilter,
  RANGE_FILTER_LAYOUT,
  RANGE_FILTER_SLOT_LAYOUT,
} from "../lib/datapath/range_filter.ts";
import { POD_IPV4, POD_IPV6, privilegedTests, SimWorld, TCP_PORTS } from "./helpers/sim_world.ts";

const privileged = privilegedTests();
const TIMEOUT = 3000;
const ipv4 = (port: number) => ({ family: "ipv4" as const, address: POD_IPV4, port });

privileged(
  "a network counts each kubelet connect once: tagged for its target or unmatched in its range",
  async () => {
    await using w = await SimWorld.create();
    w.register(ipv4(TCP_PORTS[0]), 1);
    w.datapath.unmatched!.syncRanges([hostRange(POD_IPV4, 1)]);
    await w.kubelet.probe({ host: POD_IPV4, port: TCP_PORTS[0], timeoutMs: TIMEOUT });
    for (let i = 0; i < 2; i++) {
      await w.kubelet.probe({ host: POD_IPV4, port: TCP_PORTS[2], timeoutMs: TIMEOUT });
    }
    // Neither another cgroup's connect nor one outside every range counts.
    await w.other.probe({ host: POD_IPV4, port: TCP_PORTS[2], timeoutMs: TIMEOUT });
    await w.kubelet.probe({ host: POD_IPV6, port: TCP_PORTS[2], timeoutMs: TIMEOUT });
    assert.deepEqual(w.datapath.unmatched!.networkCounts([1]).get(1), {
      connects: 3n,
      unmatched: 2n,
    });
  },
);

privileged(
  "past the range filter, unmatched connects inside a pod range count for its network, " +
    "those outside every range do not",
  async () => {
    await using w = await SimWorld.create();
    const unmatched = w.datapath.unmatched!;
    const counts = () => unmatched.networkCounts([1, 2, 3]);
    // Prefixes longer than the bitmap's 14 bits, so the program folds the bucket as the agent does.
    unmatched.syncRanges([
      parseCidr("10.244.0.0/16", 1),
      parseCidr("fd00:244::/48", 2),
      parseCidr("10.245.0.0/16", 3),
    ]);
    assert.deepEqual(
      [unmatched.rangeFilter()?.ipv4.prefix, unmatched.rangeFilter()?.ipv6.prefix],
      [16, 48],
    );
    for (const host of [POD_IPV4, POD_IPV6, POD_IPV4]) {
      await w.kubelet.probe({ host, port: TCP_PORTS[2], timeoutMs: TIMEOUT });
    }
    assert.deepEqual(counts().get(1), { connects: 2n, unmatched: 2n });
    assert.deepEqual(counts().get(2), { connects: 1n, unmatched: 1n });
    // Ranges elsewhere: the pod's addresses are outside every range, their buckets clear.
    unmatched.syncRanges([parseCidr("10.245.0.0/16", 3), parseCidr("fd00:245::/48", 3)]);
    for (const host of [POD_IPV4, POD_IPV6]) {
      await w.kubelet.probe({ host, port: TCP_PORTS[2], timeoutMs: TIMEOUT });
    }
    assert.deepEqual(counts().get(1), { connects: 2n, unmatched: 2n });
    assert.deepEqual(counts().get(2), { connects: 1n, unmatched: 1n });
    assert.deepEqual(counts().get(3), { connects: 0n, unmatched: 0n });
  },
);

privileged(
  "past the range filter, pods' own host ranges count their unmatched connects: " +
    "IPv4 /32, IPv6 /128 (its first 64 bits folded), and an IPv4-mapped destination as IPv4",
  async () => {
    await using w = await SimWorld.create();
    const unmatched = w.datapath.unmatched!;
    // Without --pod-cidrs the agent's ranges are its pods' addresses: the filter's prefixes are
    // then the longest it takes, 32 and 64, where the program shifts by 32 and by 0.
    unmatched.syncRanges([hostRange(POD_IPV4, 1), hostRange(POD_IPV6, 2)]);
    assert.deepEqual(
      [unmatched.rangeFilter()?.ipv4.prefix, unmatched.rangeFilter()?.ipv6.prefix],
      [32, 64],
    );
    for (const host of [POD_IPV4, POD_IPV6, `::ffff:${POD_IPV4}`]) {
      await w.kubelet.probe({ host, port: TCP_PORTS[2], timeoutMs: TIMEOUT });
    }
    const counts = unmatched.networkCounts([1, 2]);
    assert.deepEqual(counts.get(1), { connects: 2n, unmatched: 2n });
    assert.deepEqual(counts.get(2), { connects: 1n, unmatched: 1n });
  },
);

/** The range filter map of the program in `pinPath`'s connect4 link (it is not pinned). */
function rangeFilterMap(pinPath: string): BpfMap {
  using link = openPinnedLink(join(pinPath, linkPinName("connect4")));
  for (const id of programMapIds(link!.info().progId)) {
    const map = BpfMap.openById(id);
    if (map.info.name === "range_filter") return map;
    map.close();
  }
  throw new Error(`no range_filter map in the program of ${pinPath}'s connect4 link`);
}

/**
 * The pod's IPv4 host range in the trie and the program's range filter map to write directly;
 * `unmatchedProbe()` connects to the pod on a port without a target and returns how many
 * unmatched connects its network counted for it (1 when the program asked the trie).
 */
function filterTester(w: SimWorld) {
  const unmatched = w.datapath.unmatched!;
  unmatched.syncRanges([hostRange(POD_IPV4, 1)]);
  const map = rangeFilterMap(w.pinPath);
  const count = () => unmatched.networkCounts([1]).get(1)!.unmatched;
  return {
    podFilter: unmatched.rangeFilter()!,
    write: (value: Uint8Array) => map.update(new Uint8Array(4), value),
    unmatchedProbe: async () => {
      const before = count();
      await w.kubelet.probe({ host: POD_IPV4, port: TCP_PORTS[2], timeoutMs: TIMEOUT });
      return count() - before;
    },
    [Symbol.dispose]: () => map.close(),
  };
}

privileged(
  "a clear bit in the range filter skips the trie; a prefix of 0 or past the family's asks it",
  async () => {
    await using w = await SimWorld.create();
    using t = filterTester(w);
    // The pod's range is in the trie, but the filter written here has no bit set: the program
    // must take the filter's word for it (what the agent's filter saves every other connect).
    const none = computeRangeFilter([]);
    assert.equal(none.ipv4.prefix, 32);
    t.write(encodeRangeFilter(none));
    assert.equal(await t.unmatchedProbe(), 0n, "a clear bit skips the trie");
    // Prefix 0 (a new object's zeroed filter, or a /0 range) and a prefix no IPv4 address has
    // send every connect to the trie.
    for (const prefix of [0, 33]) {
      t.write(encodeRangeFilter({ ...none, ipv4: { ...none.ipv4, prefix } }));
      assert.equal(await t.unmatchedProbe(), 1n, `prefix ${prefix} asks the trie`);
    }
  },
);

privileged(
  "the program reads the range filter in the slot `active` names, the other slot not at all",
  async () => {
    await using w = await SimWorld.create();
    using t = filterTester(w);
    // Slot 0 holds a filter with no bit set (the pod's connect skips the trie), slot 1 the
    // agent's (its bit set): which one counts the connect is the one `active` names.
    const none = encodeRangeFilter(computeRangeFilter([]));
    const slot0 = RANGE_FILTER_LAYOUT.fields.slot.offset;
    const both = (active: number) => {
      const value = encodeRangeFilter(t.podFilter, 1);
      value.set(none.subarray(slot0, slot0 + RANGE_FILTER_SLOT_LAYOUT.size), slot0);
      new DataView(value.buffer).setUint32(RANGE_FILTER_LAYOUT.fields.active.offset, active, true);
      return value;
    };
    // 3: the program reads the lowest bit, as the agent does.
    for (const [active, counted] of [[0, 0n], [1, 1n], [0, 0n], [3, 1n]] as const) {
      t.write(both(active));
      assert.equal(await t.unmatchedProbe(), counted, `active ${active}`);
    }
  },
);
