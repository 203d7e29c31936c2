/**
 * Figure 3, reconcile at scale: the agent core (rules, conflicts, diff)
 * against the real pinned BPF map holding ~10k targets. A full resync with
 * nothing changed must write nothing; with 10% of the targets changed
 * (removed, added, moved to another network) it must write exactly those.
 * Map writes are counted at the store, below the reconciler.
 */
import { AgentCore } from "../lib/agent/core.ts";
import { defaultConfig } from "../lib/config.ts";
import { Datapath } from "../lib/datapath/loader.ts";
import { uninstall } from "../lib/datapath/pins.ts";
import type { BpfProbeStore } from "../lib/datapath/probe_store.ts";
import type { Pod } from "../lib/pods/pod.ts";
import type { PodSink, PodSource } from "../lib/pods/source.ts";
import { keyId, type ProbeEntry, type ProbeKey, type ProbeStore } from "../lib/probe/key.ts";
import { benchPod, benchPodKeys, NODE_NAME } from "./pods.ts";
import { atMost, type FigureResult, fmt, type Goal } from "./report.ts";
import { max, median, round } from "./stats.ts";
import { benchPinPath } from "./system.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";

/**
 * A ProbeStore that counts and records every write reaching the map
 * underneath, and the time spent reading and writing the map (the rest of a
 * run is the agent's own computing: rules, conflicts, diff).
 */
class CountingStore implements ProbeStore {
  puts: string[] = [];
  removes: string[] = [];
  reads = 0;
  readMs = 0;
  writeMs = 0;
  constructor(readonly inner: ProbeStore) {}
  entries(): ProbeEntry[] {
    this.reads++;
    const t0 = performance.now();
    try {
      return this.inner.entries();
    } finally {
      this.readMs += performance.now() - t0;
    }
  }
  put(entry: ProbeEntry): void {
    this.puts.push(keyId(entry.key));
    const t0 = performance.now();
    this.inner.put(entry);
    this.writeMs += performance.now() - t0;
  }
  remove(key: ProbeKey): void {
    this.removes.push(keyId(key));
    const t0 = performance.now();
    this.inner.remove(key);
    this.writeMs += performance.now() - t0;
  }
  reset(): void {
    this.puts = [];
    this.removes = [];
    this.reads = 0;
    this.readMs = 0;
    this.writeMs = 0;
  }
}

/** A pod source whose full list the benchmark replaces at will. */
class ListSource implements PodSource {
  readonly name = "bench";
  #sink: PodSink | undefined;
  constructor(private pods: Pod[]) {}
  start(sink: PodSink): Promise<void> {
    this.#sink = sink;
    sink.replaceAll(this.name, this.pods);
    return Promise.resolve();
  }
  set(pods: Pod[]): void {
    this.pods = pods;
    this.#sink?.replaceAll(this.name, pods);
  }
  stop(): Promise<void> {
    this.#sink = undefined;
    return Promise.resolve();
  }
}

/** Where the time of a slow run went, from this run's own split. */
function slowReason(wallMs: number, mapMs: number): string {
  const [load] = Deno.loadavg();
  return `${fmt(wallMs - mapMs)} ms of it is the agent's own computing (rules, conflicts, diff ` +
    `over every pod), ${fmt(mapMs)} ms map I/O; load average ${fmt(load)} on ` +
    `${navigator.hardwareConcurrency} CPUs`;
}

/** Reading the whole map both ways, alternately in the same run (medians, ms). */
interface ReadFigures {
  reps: number;
  /** Read and decoded, as a resync reads it. */
  batchedMs: number;
  perEntryMs: number;
  /** The system calls and copies alone (BpfMap.readAll), not decoded. */
  batchedRawMs: number;
  perEntryRawMs: number;
  /** One bpf() lookup of one key through FFI, in µs: what a system call costs here. */
  lookupUs: number;
}

function measureReads(store: BpfProbeStore, expected: number, reps: number): ReadFigures {
  const ms = { auto: [] as number[], "per-entry": [] as number[] };
  const rawMs = { auto: [] as number[], "per-entry": [] as number[] };
  for (let r = 0; r < reps; r++) {
    for (const mode of ["auto", "per-entry"] as const) {
      let t0 = performance.now();
      const n = store.entries(mode).length;
      ms[mode].push(performance.now() - t0);
      t0 = performance.now();
      const raw = store.map.readAll(mode).count;
      rawMs[mode].push(performance.now() - t0);
      if (n !== expected || raw !== expected) {
        throw new Error(`Reading the map (${mode}) gave ${n}/${raw} entries, expected ${expected}`);
      }
    }
  }
  const key = store.map.readAll().key(0).slice();
  const lookups = 10_000;
  const t0 = performance.now();
  for (let i = 0; i < lookups; i++) store.map.lookup(key);
  const lookupUs = ((performance.now() - t0) * 1000) / lookups;
  return {
    reps,
    batchedMs: round(median(ms.auto), 2),
    perEntryMs: round(median(ms["per-entry"]), 2),
    batchedRawMs: round(median(rawMs.auto), 2),
    perEntryRawMs: round(median(rawMs["per-entry"]), 2),
    lookupUs: round(lookupUs, 3),
  };
}

export interface ReconcileScaleOptions {
  quick: boolean;
}

interface Run {
  wallMs: number;
  reportMs: number;
  /** Reading the whole map (batched where the kernel can). */
  mapReadMs: number;
  mapWriteMs: number;
  mapReads: number;
  puts: number;
  removes: number;
  exact: boolean;
}

export async function reconcileScale(
  opts: ReconcileScaleOptions,
  cleanups: CleanupStack,
): Promise<FigureResult> {
  // Dual-stack pods with two probes: 4 targets each.
  const podOpts = { dualStack: true, probes: 2 } as const;
  const pods = opts.quick ? 250 : 2500;
  const reps = opts.quick ? 3 : 7;
  const perPod = benchPodKeys(0, podOpts).length;
  const targets = pods * perPod;

  // 10% of the targets change: a third of the pods go, as many new ones come, the rest move network.
  const changedPods = Math.round(pods / 10);
  const gone = Math.floor(changedPods / 3);
  const moved = changedPods - 2 * gone;
  const base = Array.from({ length: pods }, (_, i) => benchPod(i, podOpts));
  const changed = [
    ...base.slice(gone, gone + moved).map((_, j) =>
      benchPod(gone + j, { ...podOpts, networkId: 2 })
    ),
    ...base.slice(gone + moved),
    ...Array.from({ length: gone }, (_, j) => benchPod(pods + j, podOpts)),
  ];
  const keysOf = (from: number, count: number) =>
    Array.from({ length: count }, (_, j) => benchPodKeys(from + j, podOpts).map(keyId)).flat();
  const goneKeys = keysOf(0, gone), movedKeys = keysOf(gone, moved), newKeys = keysOf(pods, gone);
  // Expected writes per direction, derived from how the lists were built, not from the diff code.
  const forward = { puts: new Set([...movedKeys, ...newKeys]), removes: new Set(goneKeys) };
  const backward = { puts: new Set([...movedKeys, ...goneKeys]), removes: new Set(newKeys) };
  const changedTargets = goneKeys.length + movedKeys.length + newKeys.length;

  const pinPath = benchPinPath();
  cleanups.push(() => uninstall(pinPath));
  const datapath = Datapath.open({ pinPath });
  cleanups.push(() => datapath.close());
  const store = new CountingStore(datapath.store);
  const source = new ListSource(base);
  // Long debounce and resync: only the runs the benchmark asks for happen.
  const config = {
    ...defaultConfig(),
    nodeName: NODE_NAME,
    debounceMs: 3_600_000,
    resyncMs: 3_600_000,
  };
  const core = new AgentCore({ config, store, sources: [source] });
  await core.start();
  cleanups.push(() => core.stop());

  const initial = await core.reconcileNow("initial");
  if (initial.error) throw new Error(`Initial reconcile failed: ${initial.error}`);
  const loaded = datapath.store.count();
  if (loaded !== targets) {
    throw new Error(
      `The map holds ${loaded} entries after the first reconcile, expected ${targets}`,
    );
  }

  const measure = async (expected?: { puts: Set<string>; removes: Set<string> }): Promise<Run> => {
    store.reset();
    const t0 = performance.now();
    const report = await core.reconcileNow("bench");
    const wallMs = performance.now() - t0;
    if (report.error) throw new Error(`Reconcile failed: ${report.error}`);
    const same = (got: string[], want: Set<string>) =>
      got.length === want.size && new Set(got).size === got.length && got.every((k) => want.has(k));
    const exact = expected
      ? same(store.puts, expected.puts) && same(store.removes, expected.removes)
      : store.puts.length === 0 && store.removes.length === 0;
    return {
      wallMs: round(wallMs, 2),
      reportMs: round(report.durationMs, 2),
      mapReadMs: round(store.readMs, 2),
      mapWriteMs: round(store.writeMs, 2),
      mapReads: store.reads,
      puts: store.puts.length,
      removes: store.removes.length,
      exact,
    };
  };

  const unchanged: Run[] = [];
  for (let r = 0; r < reps; r++) unchanged.push(await measure());
  const changes: Run[] = [];
  for (let r = 0; r < reps; r++) {
    const toChanged = r % 2 === 0;
    source.set(toChanged ? changed : base);
    changes.push(await measure(toChanged ? forward : backward));
  }
  const final = datapath.store.count();
  const reads = measureReads(datapath.store, final, opts.quick ? 3 : 9);

  const summary = (runs: Run[]) => ({
    medianMs: round(median(runs.map((r) => r.wallMs)), 2),
    maxMs: round(max(runs.map((r) => r.wallMs)), 2),
    mapReadMedianMs: round(median(runs.map((r) => r.mapReadMs)), 2),
    mapWriteMedianMs: round(median(runs.map((r) => r.mapWriteMs)), 2),
    writes: runs.map((r) => r.puts + r.removes),
    allExact: runs.every((r) => r.exact),
  });
  const u = summary(unchanged), c = summary(changes);
  const label = `${fmt(targets / 1000)}k targets`;
  const readRatio = reads.batchedMs / reads.perEntryMs;
  const goals: Goal[] = [
    atMost(
      "reconcile",
      `reading ${label}: batched / key by key (medians, same run)`,
      round(readRatio, 3),
      round(1 / 3, 3),
      "×",
      `batched ${fmt(reads.batchedMs)} ms (system calls alone ${fmt(reads.batchedRawMs)} ms), ` +
        `key by key ${fmt(reads.perEntryMs)} ms (${fmt(reads.perEntryRawMs)} ms)`,
    ),
    atMost(
      "reconcile",
      `full resync, ${label}, none changed: wall time (median)`,
      u.medianMs,
      50,
      "ms",
      slowReason(u.medianMs, u.mapReadMedianMs) +
        `; one bpf() map lookup costs ${fmt(reads.lookupUs)} µs here`,
    ),
    {
      figure: "reconcile",
      name: `full resync, ${label}, none changed: map writes`,
      target: "0",
      measured: `${Math.max(...u.writes)} (most in one run)`,
      met: u.allExact,
      ...(u.allExact ? {} : { reason: "a resync with nothing changed wrote to the map" }),
    },
    atMost(
      "reconcile",
      `full resync, ${label}, 10% changed: wall time (median)`,
      c.medianMs,
      100,
      "ms",
      slowReason(c.medianMs, c.mapReadMedianMs + c.mapWriteMedianMs),
    ),
    {
      figure: "reconcile",
      name: `full resync, ${label}, 10% changed: exactly the changed entries written`,
      target: `${changedTargets} writes, the changed keys only`,
      measured: `${c.writes.join("/")} writes, ${
        c.allExact ? "exactly the changed keys" : "NOT the changed keys"
      }`,
      met: c.allExact,
      ...(c.allExact ? {} : { reason: "the written keys differ from the changed ones" }),
    },
  ];
  return {
    name: "reconcile",
    title: "3. Reconcile at scale",
    rows: [
      {
        measurement: `full resync, ${label} in the map, none changed`,
        value: `${fmt(u.medianMs)} ms median (max ${fmt(u.maxMs)}), ${
          Math.max(...u.writes)
        } map writes`,
        goal: "≤ 50 ms, 0 writes",
      },
      {
        measurement: "  of which reading the map / writing it (medians)",
        value: `none changed: ${fmt(u.mapReadMedianMs)} / ${
          fmt(u.mapWriteMedianMs)
        } ms; 10% changed: ${fmt(c.mapReadMedianMs)} / ${fmt(c.mapWriteMedianMs)} ms`,
      },
      {
        measurement: `reading the map, ${label}: batched / key by key (medians of ${reads.reps})`,
        value: `${fmt(reads.batchedMs)} / ${fmt(reads.perEntryMs)} ms = ${
          fmt(readRatio)
        }×; system calls alone ${fmt(reads.batchedRawMs)} / ${
          fmt(reads.perEntryRawMs)
        } ms; one map lookup ${fmt(reads.lookupUs)} µs`,
        goal: "≤ ⅓×",
      },
      {
        measurement: `full resync, ${label}, 10% changed (${changedTargets} entries)`,
        value: `${fmt(c.medianMs)} ms median (max ${fmt(c.maxMs)}), ${c.writes[0]} map writes, ${
          c.allExact ? "exactly the changed" : "NOT exactly the changed"
        }`,
        goal: "≤ 100 ms, exactly the changed",
      },
    ],
    goals,
    data: {
      pods,
      targetsPerPod: perPod,
      targets,
      changedTargets,
      changedBreakdown: {
        removed: goneKeys.length,
        added: newKeys.length,
        movedNetwork: movedKeys.length,
      },
      reads,
      unchanged: { ...u, runs: unchanged },
      changed: { ...c, runs: changes },
      mapEntriesAtEnd: final,
    },
  };
}
