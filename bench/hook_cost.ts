/**
 * Figure 1, hook cost per connect: the kernel's own BPF statistics
 * (run_time_ns / run_cnt of the connect4/connect6 programs) over connects
 * from the kubelet cgroup, for matching and non-matching destinations at
 * several map sizes; then the same cost seen from user space, as the ratio of
 * connect() time in the kubelet cgroup (programs attached) to a sibling cgroup
 * without them, in interleaved rounds with the statistics off. Every connect
 * goes the way a probe does: from the node's namespace over a veth into a
 * pod's namespace, the pod answering. Both sides take the same route into the
 * same pod: a non-matching connect through the node's main table, a matching
 * one through its network's fwmark table (the sibling's socket gets the same
 * mark by setsockopt before its connect, outside the timed call).
 *
 * In the same rounds, three more comparisons against the same sibling say
 * what the ratio is made of: a second plain sibling (the noise floor: what
 * "no difference" measures), a sibling with a program that returns at once
 * (what the kernel charges for running any connect program), and one with a
 * program that only looks the destination up and marks it (the least a
 * tagging program does; bench/hook_programs.ts).
 *
 * A non-matching connect here goes into a pod range (the pod's port has no
 * target): it pays for the trie lookup, its network's count and the
 * rate-limited report. Lace's program runs once more on a node whose ranges
 * leave the pod outside (the "outside" program: the same targets, the
 * operator's ranges narrowed), for the misses most kubelet connects are (the
 * API server, a registry, a host-network pod), which the range filter lets
 * skip the trie.
 *
 * Beside the floors, Lace and lookup + mark each run as COPIES copies (the
 * kubelet's Lace is one), and each round takes the median of a program's
 * copies: where the kernel places a program is worth ±15–20 % of its cost on
 * this kind of machine (bench/hook_programs.ts).
 */
import { fileURLToPath } from "node:url";
import { defaultConfig, markFor } from "../lib/config.ts";
import { Datapath } from "../lib/datapath/loader.ts";
import { type ProgramName, uninstall } from "../lib/datapath/pins.ts";
import { MAX_TARGETS, type ProbeKey } from "../lib/datapath/probe_map.ts";
import { hostRange, parseCidr, type PodRange } from "../lib/datapath/pod_ranges.ts";
import { SimCgroups } from "../lib/demo/cgroup.ts";
import { run } from "../lib/cli/process.ts";
import { POD_IPV4, POD_IPV6, SimNode, simNodeAddresses } from "../lib/demo/netns.ts";
import type { ConnectRequest, ConnectResponse } from "./connect_worker.ts";
import { connectRatios, type RatioResult } from "./connect_ratio.ts";
import { type BenchProgram, COPIES, loadBenchPrograms } from "./hook_programs.ts";
import { JsonLineChild } from "./json_child.ts";
import { atMost, type FigureResult, fmt, type Goal, type Row } from "./report.ts";
import { median, round } from "./stats.ts";
import { benchPinPath, setSysctl } from "./system.ts";
import type { CleanupStack } from "../lib/cleanup_stack.ts";

type Family = "ipv4" | "ipv6";
const FAMILIES: Family[] = ["ipv4", "ipv6"];
const PROGRAM: Record<Family, ProgramName> = { ipv4: "connect4", ipv6: "connect6" };
const POD_ADDRESS: Record<Family, string> = { ipv4: POD_IPV4, ipv6: POD_IPV6 };
const STATS_SYSCTL = "kernel.bpf_stats_enabled";

/** One side of a connect batch, as the worker takes it. */
type Side = Omit<ConnectRequest, "count">;

/** What each cell's ratio compares against the plain sibling. */
const COMPARISONS = ["lace", "lookup", "noop", "floor"] as const;
type Comparison = (typeof COMPARISONS)[number];
const COMPARISON_LABEL: Record<Comparison, string> = {
  lace: "kubelet (Lace)",
  lookup: "lookup + mark only",
  noop: "no-op program",
  floor: "second sibling",
};

/** The other programs of bench/hook_programs.ts ("outside" only runs non-matching cells). */
const FLOOR_PROGRAMS = ["noop", "lookup", "outside"] as const;
type FloorProgram = (typeof FLOOR_PROGRAMS)[number];

interface RatioCell extends RatioResult {
  family: Family;
  match: boolean;
  comparison: Comparison;
  connectsPerRound: number;
}

export interface HookCostOptions {
  quick: boolean;
}

interface ProgStats {
  runTimeNs: number;
  runCnt: number;
}

/** A copy of `items` in random order (Fisher–Yates). */
function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

async function progStats(id: number): Promise<ProgStats> {
  const info = JSON.parse(await run(["bpftool", "prog", "show", "id", String(id), "--json"]));
  return { runTimeNs: Number(info.run_time_ns ?? 0), runCnt: Number(info.run_cnt ?? 0) };
}

/** Deterministic distinct keys of both families, none on loopback (so none matches by chance). */
function* fillerKeys(): Generator<ProbeKey> {
  for (let i = 0;; i++) {
    const port = 1024 + (i % 50_000);
    const n = Math.floor(i / 2);
    if (i % 2 === 0) {
      yield {
        family: "ipv4",
        address: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
        port,
      };
    } else {
      yield {
        family: "ipv6",
        address: `fd00::${(n >> 16).toString(16)}:${(n & 0xffff).toString(16)}`,
        port,
      };
    }
  }
}

export async function hookCost(
  opts: HookCostOptions,
  cleanups: CleanupStack,
): Promise<FigureResult> {
  const sizes = opts.quick ? [0, 1000] : [0, 1000, 10_000, MAX_TARGETS];
  // Many short rounds rather than a few long ones: the programs compared take turns often, so
  // load that comes and goes (2 CPUs shared with other work) falls on all of them alike.
  const statRounds = opts.quick ? 3 : 9;
  const statCount = opts.quick ? 500 : 3500;
  const ratioSize = opts.quick ? 1000 : 10_000;
  // Where the cheaper programs run beside Lace's, for the goal of issue 28 (≤ 1.25× lookup + mark).
  const floorSizes = opts.quick ? [1000] : [10_000, MAX_TARGETS];
  const ratioRounds = opts.quick ? 6 : 100;
  const ratioCount = opts.quick ? 200 : 500;

  const node = await SimNode.create({ networks: [1] });
  cleanups.push(() => node.dispose());
  // The pod is reachable unmarked too (the node's main table, same veth), for the non-matching
  // connects. With the same source address as the network's table gives: without one, IPv6
  // picks a source per connect and an unmarked connect costs 0.15 µs more than a marked one.
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
  const progIds = Object.fromEntries(datapath.links().map((l) => [l.program, l.progId]));
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

  /** The kernel's run time per run of one program over `count` connects from `side`. */
  const bpfNsPerConnect = async (id: number, side: Side, count: number) => {
    const before = await progStats(id);
    await connects(side, count);
    const after = await progStats(id);
    const runs = after.runCnt - before.runCnt;
    if (runs <= 0) {
      throw new Error(
        `Program ${id} did not run during ${count} connects: is it attached to "${side.cgroup}"`,
      );
    }
    return { ns: (after.runTimeNs - before.runTimeNs) / runs, runs };
  };

  const perConnect: {
    entries: number;
    family: Family;
    match: boolean;
    ns: number;
    runs: number;
  }[] = [];
  /** The cheaper programs' statistics at the floor sizes, beside Lace's (medians of copies). */
  const floorStats: {
    program: FloorProgram;
    entries: number;
    family: Family;
    match: boolean;
    ns: number;
    /** The median over rounds of this program's time ÷ lookup + mark's in the same round. */
    overLookup: number;
  }[] = [];
  /**
   * Lace's time ÷ lookup + mark's, the median over rounds of each round's ratio, each program
   * the median of its copies in that round (ns: the median over rounds of Lace's).
   */
  const laceOverLookup: {
    entries: number;
    family: Family;
    match: boolean;
    ns: number;
    ratio: number;
  }[] = [];
  let ratios: RatioCell[] = [];
  let statsDuringRatios = false;
  const key = (family: Family, match: boolean) => `${family}/${match}`;
  setSysctl(STATS_SYSCTL, "1", cleanups);
  for (const size of sizes) {
    fillTo(size);
    const cells = FAMILIES.flatMap((family) =>
      (size > 0 ? [false, true] : [false]).map((match) => ({ family, match }))
    );
    const samples = new Map(
      cells.map((c) => [key(c.family, c.match), { ns: [] as number[], runs: 0 }]),
    );
    /** Per program and cell, each round's median over the program's copies. */
    const floorSamples = new Map<string, number[]>();
    const kubeletLace: Pick<BenchProgram, "cgroup" | "progIds"> = {
      cgroup: cgroups.kubelet,
      progIds: progIds as BenchProgram["progIds"],
    };
    for (let r = 0; r < statRounds; r++) {
      for (const { family, match } of cells) {
        const atFloor = floorSizes.includes(size);
        const runs: {
          group: "lace" | FloorProgram;
          program: Pick<BenchProgram, "cgroup" | "progIds">;
        }[] = [
          { group: "lace", program: kubeletLace },
        ];
        if (atFloor) {
          runs.push(...programs.lace.map((program) => ({ group: "lace" as const, program })));
          runs.push({ group: "noop", program: programs.noop });
          runs.push(...programs.lookup.map((program) => ({ group: "lookup" as const, program })));
          if (!match) runs.push({ group: "outside", program: programs.outside });
        }
        const thisRound = new Map<string, number[]>();
        // In a new order each round, so no program always runs right after the same other one.
        for (const { group, program } of shuffled(runs)) {
          const side = { cgroup: program.cgroup, family, port: port(family, match) };
          const got = await bpfNsPerConnect(program.progIds[PROGRAM[family]], side, statCount);
          if (program === kubeletLace) {
            const cell = samples.get(key(family, match))!;
            cell.ns.push(got.ns);
            cell.runs += got.runs;
          }
          thisRound.set(group, [...(thisRound.get(group) ?? []), got.ns]);
        }
        if (!atFloor) continue;
        for (const [group, ns] of thisRound) {
          const k = `${group}/${key(family, match)}`;
          floorSamples.set(k, [...(floorSamples.get(k) ?? []), median(ns)]);
        }
      }
    }
    for (const { family, match } of cells) {
      const cell = samples.get(key(family, match))!;
      perConnect.push({
        entries: size,
        family,
        match,
        ns: round(median(cell.ns), 1),
        runs: cell.runs,
      });
      const lookupNs = floorSamples.get(`lookup/${key(family, match)}`);
      if (!lookupNs) continue;
      const overLookup = (ns: number[]) => median(ns.map((x, r) => x / lookupNs[r]));
      const laceNs = floorSamples.get(`lace/${key(family, match)}`)!;
      laceOverLookup.push({
        entries: size,
        family,
        match,
        ns: round(median(laceNs), 1),
        ratio: overLookup(laceNs),
      });
      for (const program of FLOOR_PROGRAMS) {
        const ns = floorSamples.get(`${program}/${key(family, match)}`);
        if (ns) {
          floorStats.push({
            program,
            entries: size,
            family,
            match,
            ns: round(median(ns), 1),
            overLookup: round(overLookup(ns), 3),
          });
        }
      }
    }
    if (size !== ratioSize) continue;
    // The ratio is taken the way a node runs: without the statistics' own cost (two clock
    // reads per run). Another process may turn them on meanwhile: the run times say so.
    setSysctl(STATS_SYSCTL, "0", cleanups);
    const before = await Promise.all(FAMILIES.map((f) => progStats(progIds[PROGRAM[f]])));
    ratios = await measureRatios();
    const after = await Promise.all(FAMILIES.map((f) => progStats(progIds[PROGRAM[f]])));
    statsDuringRatios = after.some((a, i) => a.runTimeNs !== before[i].runTimeNs);
    setSysctl(STATS_SYSCTL, "1", cleanups);
  }
  const tagged = datapath.counters();

  /**
   * Every cell (family × matching or not) compares four cgroups against the same plain
   * sibling, in the same interleaved rounds. In a matching cell, every side whose program
   * does not mark the socket has it marked beforehand, so all take the same route.
   */
  async function measureRatios(): Promise<RatioCell[]> {
    const cells = FAMILIES.flatMap((family) => [false, true].map((match) => ({ family, match })));
    const sides = (family: Family, match: boolean) => {
      const side = (cgroup: string, tags: boolean): Side => ({
        cgroup,
        family,
        port: port(family, match),
        ...(match && !tags ? { mark } : {}),
      });
      return {
        sibling: side(cgroups.other, false),
        versus: {
          lace: side(cgroups.kubelet, true),
          lookup: side(programs.lookup[0].cgroup, programs.lookup[0].tags),
          noop: side(programs.noop.cgroup, programs.noop.tags),
          floor: side(sibling2, false),
        } satisfies Record<Comparison, Side>,
      };
    };
    const pairs = cells.flatMap(({ family, match }) => {
      const { sibling, versus } = sides(family, match);
      return COMPARISONS.map((c) => ({
        cell: { family, match, comparison: c },
        a: versus[c],
        b: sibling,
      }));
    });
    const results = await connectRatios(
      pairs,
      ratioRounds,
      async (side) => (await connects(side, ratioCount)).medianNs,
    );
    return pairs.map((p, i) => ({ ...p.cell, ...results[i], connectsPerRound: ratioCount }));
  }

  const label = (family: Family, match: boolean) =>
    `${family === "ipv4" ? "IPv4" : "IPv6"} ${match ? "matching" : "non-matching"}`;
  const sizeLabel = (n: number) =>
    n === MAX_TARGETS ? "64k" : n >= 1000 ? `${n / 1000}k` : String(n);
  const rows: Row[] = [];
  const goals: Goal[] = [];
  for (const family of FAMILIES) {
    for (const match of [false, true]) {
      const cells = perConnect.filter((c) => c.family === family && c.match === match);
      rows.push({
        measurement: `BPF ns/connect, ${label(family, match)}, the kubelet's copy (by map entries)`,
        value: cells.map((c) => `${sizeLabel(c.entries)}: ${fmt(c.ns)}`).join(", "),
      });
    }
  }
  const statOf = (program: FloorProgram, entries: number, family: Family, match: boolean) =>
    floorStats.find((s) =>
      s.program === program && s.entries === entries && s.family === family && s.match === match
    )?.ns ?? NaN;
  /** Lace's ns beside the floors: the median of its copies (the kubelet's and the siblings'). */
  const laceStat = (entries: number, family: Family, match: boolean) =>
    laceOverLookup.find((c) => c.entries === entries && c.family === family && c.match === match)
      ?.ns ?? NaN;
  const cellsOf = FAMILIES.flatMap((family) => [false, true].map((match) => ({ family, match })));
  // The 150 ns goal is judged at a full map; a --quick run has none and judges its largest size.
  const judgedAt = Math.max(...floorSizes);
  for (const entries of floorSizes) {
    rows.push({
      measurement: `BPF ns/connect at ${
        sizeLabel(entries)
      }: ${COMPARISON_LABEL.noop} / ${COMPARISON_LABEL.lookup} / Lace`,
      value: cellsOf.map(({ family, match }) =>
        `${label(family, match)} ${fmt(statOf("noop", entries, family, match))} / ${
          fmt(statOf("lookup", entries, family, match))
        } / ${fmt(laceStat(entries, family, match))}`
      ).join(", "),
      goal: entries === judgedAt ? "Lace ≤ 150 ns" : undefined,
    });
    // Issue 28: Lace within 1.25× of the least a tagging program does, in every case, same run.
    const overLookup = cellsOf.map(({ family, match }) => ({
      family,
      match,
      ratio: laceOverLookup.find((c) =>
        c.entries === entries && c.family === family && c.match === match
      )?.ratio ?? NaN,
    }));
    rows.push({
      measurement: `  Lace / lookup + mark only, at ${
        sizeLabel(entries)
      } (median of each round's ratio, ${COPIES} copies of each)`,
      value: overLookup.map((c) =>
        `${label(c.family, c.match)} ${c.ratio.toFixed(2)}×`
      ).join(
        ", ",
      ),
      goal: "≤ 1.25× each",
    });
    const worst = overLookup.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    goals.push({
      ...atMost(
        "hook",
        `BPF cost, Lace / lookup + mark only, at ${sizeLabel(entries)} (worst case)`,
        round(worst.ratio, 2),
        1.25,
        "×",
      ),
      measured: `${worst.ratio.toFixed(2)}× (${label(worst.family, worst.match)}: ${
        fmt(laceStat(entries, worst.family, worst.match))
      } vs ${fmt(statOf("lookup", entries, worst.family, worst.match))} ns)`,
    });
    // The same goal for the misses outside every pod range (Lace's program past its range filter).
    const outside = FAMILIES.map((family) => {
      const [ns, floor] = [
        statOf("outside", entries, family, false),
        statOf("lookup", entries, family, false),
      ];
      const ratio = floorStats.find((s) =>
        s.program === "outside" && s.entries === entries && s.family === family && !s.match
      )?.overLookup ?? NaN;
      return { family, ns, floor, ratio };
    });
    const familyLabel = (f: Family) => (f === "ipv4" ? "IPv4" : "IPv6");
    rows.push({
      measurement: `  non-matching outside every pod range, at ${
        sizeLabel(entries)
      }: Lace / lookup + mark only`,
      value: outside.map((c) =>
        `${familyLabel(c.family)} ${fmt(c.ns)} / ${fmt(c.floor)} ns, ${c.ratio.toFixed(2)}×`
      ).join(", "),
      goal: "≤ 1.25× each",
    });
    const worstOutside = outside.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    goals.push({
      ...atMost(
        "hook",
        `BPF cost outside every pod range, Lace / lookup + mark only, at ${
          sizeLabel(entries)
        } (worst case)`,
        round(worstOutside.ratio, 2),
        1.25,
        "×",
      ),
      measured: `${worstOutside.ratio.toFixed(2)}× (${familyLabel(worstOutside.family)}: ${
        fmt(worstOutside.ns)
      } vs ${fmt(worstOutside.floor)} ns)`,
    });
  }
  // Judged at a full map, the worst case (issue 16; it was 10k before), on the median of Lace's
  // copies as the ratios are: one copy alone read 151 ns in one run and 98 in the next. The
  // kubelet's copy is printed beside it.
  const atJudged = laceOverLookup.filter((c) => c.entries === judgedAt);
  if (atJudged.length) {
    const worst = atJudged.reduce((a, b) => (b.ns > a.ns ? b : a));
    const kubeletCopy = perConnect.find((c) =>
      c.entries === judgedAt && c.family === worst.family && c.match === worst.match
    )?.ns ?? NaN;
    const where = judgedAt === MAX_TARGETS ? "a full map" : `${sizeLabel(judgedAt)} entries`;
    goals.push({
      ...atMost(
        "hook",
        `BPF cost per connect at ${where}, median of Lace's ${COPIES} copies (worst case)`,
        worst.ns,
        150,
        "ns",
      ),
      measured: `${fmt(worst.ns)} ns (${label(worst.family, worst.match)}; the kubelet's copy ${
        fmt(kubeletCopy)
      } ns)`,
    });
  }
  if (ratios.length) ratioRowsAndGoal();

  /** The connect() ratios' rows and goal (absent when the rounds were not run). */
  function ratioRowsAndGoal(): void {
    const ratioOf = (c: Comparison, family: Family, match: boolean) =>
      ratios.find((r) => r.comparison === c && r.family === family && r.match === match)!;
    for (const family of FAMILIES) {
      for (const match of [false, true]) {
        const r = ratioOf("lace", family, match);
        rows.push({
          measurement: `connect() into a pod, kubelet/sibling cgroup, ${label(family, match)}, ${
            sizeLabel(ratioSize)
          } entries`,
          value: `${r.ratio.toFixed(4)} (${fmt(r.aNs / 1000)} µs vs ${fmt(r.bNs / 1000)} µs)`,
          goal: "≤ 1.01",
        });
      }
    }
    for (const c of ["floor", "noop", "lookup"] as const) {
      rows.push({
        measurement: `  same rounds, ${COMPARISON_LABEL[c]}/sibling`,
        value: FAMILIES.flatMap((family) =>
          [false, true].map((match) =>
            `${label(family, match)} ${ratioOf(c, family, match).ratio.toFixed(4)}`
          )
        ).join(", "),
      });
    }
    const spread = ratios.filter((r) => r.comparison === "floor");
    rows.push({
      measurement: "  one round's spread, second sibling/sibling (quartiles)",
      value: spread.map((r) => `${r.q1.toFixed(3)}–${r.q3.toFixed(3)}`).join(", ") +
        ` over ${ratioRounds} rounds of ${ratioCount} connects a side`,
    });
    const laceRatios = ratios.filter((r) => r.comparison === "lace");
    const worstRatio = laceRatios.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    const at = (c: Comparison) => ratioOf(c, worstRatio.family, worstRatio.match).ratio.toFixed(4);
    goals.push({
      ...atMost(
        "hook",
        "connect() time ratio, kubelet vs sibling (worst case)",
        worstRatio.ratio,
        1.01,
        "",
      ),
      measured: `${worstRatio.ratio.toFixed(4)} (${label(worstRatio.family, worstRatio.match)})`,
      ...(worstRatio.ratio <= 1.01 && !statsDuringRatios ? {} : {
        reason: (statsDuringRatios
          ? "BPF statistics were on during the ratio rounds (another process enabled them), " +
            "so every program's ratio includes their cost; "
          : "") +
          `in the same rounds a second plain sibling measured ${at("floor")}, a program that ` +
          `returns at once ${at("noop")}, one that only looks up and marks ${at("lookup")} ` +
          `(a connect() takes ${fmt(worstRatio.bNs / 1000)} µs here)`,
      }),
    });
  }

  return {
    name: "hook",
    title: "1. Hook cost",
    rows,
    goals,
    data: {
      perConnect,
      statConnectsPerCell: statCount * statRounds,
      statRounds,
      copies: COPIES,
      floorStats,
      laceOverLookup,
      ratios,
      ratioEntries: ratioSize,
      siblingMarkedWhenMatching: true,
      statsDuringRatios,
      counters: {
        connect4Seen: Number(tagged.connect4Seen),
        connect4Tagged: Number(tagged.connect4Tagged),
        connect6Seen: Number(tagged.connect6Seen),
        connect6Tagged: Number(tagged.connect6Tagged),
      },
    },
  };
}
