/**
 * One netcheck run over N simulated nodes for the scheduling figure, in its
 * own process so its memory is its own. The in-memory cluster answers
 * connects at once; every bandwidth session takes a fixed time (the iperf3
 * stand-in). Prints one JSON line: when the bandwidth sessions ran, whether
 * two ever shared an endpoint, and memory (peak RSS, live heap after GC).
 *
 *   deno run -A --v8-flags=--expose-gc bench/netcheck_worker.ts NODES SESSION_MS CONCURRENCY [PEERS [ROUNDS]]
 *
 * With PEERS, one round samples PEERS peers a node for every phase (as above
 * --sample-threshold, with connectivity no longer fitting the interval); with
 * ROUNDS, that many rounds of --watch back to back (the peers rotate), so a
 * small cluster can run as many sessions, as long, as a large one.
 */
import type { ExecOptions, ExecResult } from "../lib/netcheck/cluster/netcheck_cluster.ts";
import { defaultNetcheckOptions } from "../lib/netcheck/options.ts";
import { NETCHECK_HEAP_STEP, runChecks } from "../lib/netcheck/pipeline/run.ts";
import { HeapGate } from "../lib/os/heap_gate.ts";
import { fakeNodes, MemoryCluster } from "../tests/netcheck/memory_cluster.ts";

export interface NetcheckWorkerResult {
  nodes: number;
  rounds: number;
  sessionMs: number;
  concurrency: number;
  exitCode: number;
  totalMs: number;
  bandwidthSessions: number;
  /** First bandwidth session start to last end. */
  bandwidthMs: number;
  maxConcurrentSessions: number;
  /** Mean measured length of a session (the fixed time plus timer lateness). */
  meanSessionMs: number;
  /** Times a session started on an endpoint another session was using. */
  endpointOverlaps: number;
  peakRssBytes: number;
  /** RSS after building the in-memory cluster, before the run (the stand-in's own O(N) data). */
  fixtureRssBytes: number;
  /** Heap in use right after a full GC, sampled at each eighth of the sessions. */
  liveHeapSamples: number[];
  /** Full collections netcheck's own heap gate made during the run, and their time. */
  collections: number;
  collectionMs: number;
}

const [nodesArg, msArg, concurrencyArg, peersArg, roundsArg] = Deno.args;
const peers = Number(peersArg ?? 0);
const rounds = Number(roundsArg ?? 1);
const n = Number(nodesArg), sessionMs = Number(msArg), concurrency = Number(concurrencyArg);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("Run with --v8-flags=--expose-gc");

/** The in-memory cluster with bandwidth sessions that last `sessionMs`. */
class TimedCluster extends MemoryCluster {
  busy = new Set<string>();
  sessions = 0;
  running = 0;
  maxRunning = 0;
  overlaps = 0;
  firstStart = Infinity;
  lastEnd = 0;
  samples: number[] = [];
  sessionTotalMs = 0;

  override async exec(
    namespace: string,
    pod: string,
    container: string,
    command: string[],
    options: ExecOptions,
  ): Promise<ExecResult> {
    if (container !== "bandwidth") return super.exec(namespace, pod, container, command, options);
    const from = pod.slice(pod.lastIndexOf("node-"));
    const to = this.nodeAt(command[command.indexOf("-c") + 1])?.name ?? "?";
    for (const e of [from, to]) {
      if (this.busy.has(e)) this.overlaps++;
      this.busy.add(e);
    }
    const started = performance.now();
    this.firstStart = Math.min(this.firstStart, started);
    this.maxRunning = Math.max(this.maxRunning, ++this.running);
    try {
      await new Promise((resolve) => setTimeout(resolve, sessionMs));
      return await super.exec(namespace, pod, container, command, options);
    } finally {
      this.busy.delete(from);
      this.busy.delete(to);
      this.running--;
      this.lastEnd = performance.now();
      this.sessionTotalMs += this.lastEnd - started;
      const every = Math.max(1, Math.floor((peers > 0 ? 2 * n * peers * rounds : n * (n - 1)) / 8));
      if (++this.sessions % every === 0) {
        gc!();
        this.samples.push(Deno.memoryUsage().heapUsed);
      }
    }
  }
}

const nodes = fakeNodes(n);
const cluster = new TimedCluster(nodes);
// What the in-memory cluster itself holds (nodes, pods, address maps: O(N)), before the run.
const rssNow = () =>
  Number(/^VmRSS:\s+(\d+)/m.exec(Deno.readTextFileSync("/proc/self/status"))?.[1] ?? 0) * 1024;
await cluster.listPods("", "");
gc();
const fixtureRssBytes = rssNow();
const t0 = performance.now();
const sampling = peers > 0
  ? { sampleThreshold: 2, peers, connectivityPeers: peers }
  : { sampleThreshold: 1_000_000 };
// netcheck's own gate, as runChecks makes it, counting its collections and their time.
let collections = 0, collectionMs = 0;
const heapGate = new HeapGate({
  stepBytes: NETCHECK_HEAP_STEP,
  gc: () => {
    const started = performance.now();
    gc();
    collectionMs += performance.now() - started;
    collections++;
  },
});
const stop = new AbortController();
const { exitCode } = await runChecks({
  ...defaultNetcheckOptions(),
  concurrency,
  ...sampling,
  ...(rounds > 1 ? { watch: true, intervalMs: 0 } : {}),
}, {
  cluster,
  progress: { write: () => {}, isTerminal: false },
  sinks: [],
  pollMs: 1,
  signal: stop.signal,
  heapGate,
  onRound: (_summary, _outcome, { round }) => {
    if (round >= rounds) stop.abort();
  },
});
const totalMs = performance.now() - t0;
const status = Deno.readTextFileSync("/proc/self/status");
const result: NetcheckWorkerResult = {
  nodes: n,
  rounds,
  sessionMs,
  concurrency,
  exitCode,
  totalMs,
  bandwidthSessions: cluster.sessions,
  bandwidthMs: cluster.lastEnd - cluster.firstStart,
  maxConcurrentSessions: cluster.maxRunning,
  meanSessionMs: cluster.sessionTotalMs / cluster.sessions,
  endpointOverlaps: cluster.overlaps,
  peakRssBytes: Number(/^VmHWM:\s+(\d+)/m.exec(status)?.[1] ?? 0) * 1024,
  fixtureRssBytes,
  liveHeapSamples: cluster.samples,
  collections,
  collectionMs,
};
console.log(JSON.stringify(result));
