/**
 * A netcheck run over N in-memory nodes that samples the heap (after a full
 * GC) as paths complete, printing one JSON line. Run it with
 * `deno run --v8-flags=--expose-gc tests/netcheck/memory_run.ts 200`; the
 * memory test and the benchmark use it to show memory does not grow with
 * the number of paths.
 */
import { defaultNetcheckOptions } from "../../lib/netcheck/options.ts";
import { runChecks } from "../../lib/netcheck/pipeline/run.ts";
import { fakeNodes, MemoryCluster } from "./memory_cluster.ts";

const n = Number(Deno.args[0] ?? 200);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("Run with --v8-flags=--expose-gc");
const nodes = fakeNodes(n);
// Failing paths too, so the failure sample and the connect-failure set are exercised.
nodes[n - 1].refuses = true;
const every = Math.max(1, Math.floor((n * (n - 1)) / 8));
const samples: number[] = [];
let paths = 0;
const started = performance.now();
const cluster = new MemoryCluster(nodes);
// All pairs (no sampling): the point is memory that stays flat over every path.
const { summary } = await runChecks({
  ...defaultNetcheckOptions(),
  concurrency: 16,
  sampleThreshold: 1_000_000,
}, {
  cluster,
  progress: { write: () => {}, isTerminal: false },
  sinks: [{
    path() {
      if (++paths % every === 0) {
        gc();
        samples.push(Deno.memoryUsage().heapUsed);
      }
    },
    finish: () => Promise.resolve(),
  }],
  pollMs: 1,
});
console.log(JSON.stringify({
  nodes: n,
  paths,
  samples,
  seconds: (performance.now() - started) / 1000,
  maxActive: cluster.maxActive,
  violations: cluster.violations.length,
  failuresKept: summary.failures.items.length,
  asymmetryPending: summary.asymmetry.pending,
}));
