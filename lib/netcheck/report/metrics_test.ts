import assert from "node:assert/strict";
import { NetcheckMetrics, seriesBound } from "./metrics.ts";
import type { PathResult } from "../checks/path_result.ts";

const node = (i: number) => `node-${String(i).padStart(4, "0")}`;
const figures = {
  samples: 10,
  connect: { p50: 0.2, p99: 1, max: 1 },
  request: { p50: 0.5, p99: 2, max: 2 },
};

/**
 * One round's results on a simulated cluster of `n` nodes in networks A and B: every node
 * measured, three failing paths per node in each phase, leaks both ways.
 */
function* round(n: number): Generator<PathResult> {
  const base = { fromPod: "p", toPod: "q", attempts: 1, durationMs: 1 };
  for (const network of ["A", "B"]) {
    for (let i = 0; i < n; i++) {
      const from = node(i);
      for (let k = 1; k <= 5; k++) {
        const to = node((i + k) % n);
        const ok = k > 3;
        yield {
          ...base,
          phase: "connect",
          network,
          from,
          to,
          ok,
          ...(ok ? {} : { errorClass: "TIMEOUT" }),
        };
        yield {
          ...base,
          phase: "latency",
          network,
          from,
          to,
          ok,
          latency: figures,
          ...(ok ? {} : { errorClass: "LATENCY" }),
        };
        yield {
          ...base,
          phase: "bandwidth",
          network,
          from,
          to,
          ok,
          bitsPerSecond: 9e9,
          ...(ok ? {} : { errorClass: "SLOW" }),
        };
      }
    }
  }
  for (let i = 0; i < n; i++) {
    for (const network of ["A → B", "B → A"]) {
      yield {
        ...base,
        phase: "isolation",
        network,
        from: node(i),
        to: node(i),
        ok: false,
        errorClass: "LEAK",
      };
    }
  }
}

Deno.test("metrics of a simulated 1000-node cluster stay within the documented bound, and shrink with it", async () => {
  const metrics = new NetcheckMetrics(50);
  const nodes = Array.from({ length: 1000 }, (_, i) => node(i));
  for (const r of round(1000)) metrics.observe(r);
  metrics.endRound({ nodes, networks: ["A", "B"], failed: true }, 1234, false);
  const bound = seriesBound(1000, 2, 50);
  const count = await metrics.seriesCount();
  assert.ok(count <= bound, `${count} series, bound ${bound}`);
  // Tight: only the unused per-network path counters (isolation per network) are spare.
  assert.ok(count >= bound - 2 * 2 * 4, `${count} series, bound ${bound}`);
  assert.equal(bound, 23 + 2000 + 2 * (2 * 16 + 13 + 12) + 2 + 50);
  const text = await metrics.registry.metrics();
  // 1000 × (3 phases × 3 × 2 networks + 2 leaks) failing paths, 50 shown by pair, the rest
  // counted; node-0000 is the source of 20 of them.
  assert.equal(text.match(/^lace_netcheck_failing_path\{/gm)?.length, 50);
  assert.match(text, /^lace_netcheck_failing_paths_not_shown 19950$/m);
  assert.match(text, /^lace_netcheck_isolation_leaks\{from_network="A",to_network="B"\} 1000$/m);
  assert.match(text, /^lace_netcheck_node_failed_paths\{node="node-0000",direction="from"\} 20$/m);

  // The next round with 100 nodes and everything passing: per-node and per-pair series go.
  metrics.endRound({ nodes: nodes.slice(0, 100), networks: ["A", "B"], failed: false }, 10, true);
  const after = await metrics.registry.metrics();
  assert.equal(after.match(/^lace_netcheck_failing_path\{/gm), null);
  assert.equal(after.match(/^lace_netcheck_node_failed_paths\{/gm)?.length, 200);
  assert.match(after, /^lace_netcheck_round_overruns_total 1$/m);
  assert.match(after, /^lace_netcheck_rounds_total\{result="passed"\} 1$/m);
  assert.ok((await metrics.seriesCount()) <= seriesBound(100, 2, 50));
});

Deno.test("seriesBound() grows linearly with nodes: no per-pair term", () => {
  const grow = (n: number) => seriesBound(n + 1, 1, 50) - seriesBound(n, 1, 50);
  assert.equal(grow(10), 2);
  assert.equal(grow(5000), 2);
});

Deno.test("a hostile name in a label cannot forge a series, and failing paths stay capped", async () => {
  const metrics = new NetcheckMetrics(3);
  const forged = 'a"} 1\nlace_netcheck_forged{x="\\';
  const base = { fromPod: "p", toPod: "q", attempts: 1, durationMs: 1 };
  for (let i = 0; i < 100; i++) {
    metrics.observe({
      ...base,
      phase: "connect",
      network: `${forged}\x1b[2J`,
      from: `${forged}${i}`,
      to: "b",
      ok: false,
      errorClass: "OTHER",
      message: forged,
    });
  }
  metrics.endRound({ nodes: [forged], networks: [], failed: true }, 1, false);
  const text = await metrics.registry.metrics();
  // Each sample line is one series of a metric netcheck defines; the label values are escaped.
  for (const line of text.split("\n").filter((l) => l && !l.startsWith("#"))) {
    assert.match(line, /^(lace_netcheck|process)_\w+(\{.*\})? [-+\w.]+$/, line);
    assert.doesNotMatch(line, /^lace_netcheck_forged/, line);
  }
  assert.equal((text.match(/^lace_netcheck_failing_path\{/gm) ?? []).length, 3);
  assert.match(text, /^lace_netcheck_failing_paths_not_shown 97$/m);
});

Deno.test("bandwidth is recorded in bytes per second and each round's duration in a histogram", async () => {
  const metrics = new NetcheckMetrics();
  const base = { fromPod: "p", toPod: "q", attempts: 1, durationMs: 1, from: "a", to: "b" };
  metrics.observe({ ...base, phase: "bandwidth", ok: true, bitsPerSecond: 8e9 });
  metrics.endRound({ nodes: ["a", "b"], networks: [], failed: false }, 4_000, false);
  metrics.endRound({ nodes: ["a", "b"], networks: [], failed: false }, 40_000, false);
  const text = await metrics.registry.metrics();
  // 8 Gbit/s is 1 GB/s: above the 5 Gbit/s bucket, within the 10 Gbit/s one.
  assert.match(
    text,
    /^lace_netcheck_bandwidth_bytes_per_second_sum\{network="default"\} 1000000000$/m,
  );
  assert.match(
    text,
    /^lace_netcheck_bandwidth_bytes_per_second_bucket\{le="625000000",network="default"\} 0$/m,
  );
  assert.match(
    text,
    /^lace_netcheck_bandwidth_bytes_per_second_bucket\{le="1250000000",network="default"\} 1$/m,
  );
  assert.match(text, /^lace_netcheck_round_duration_seconds_count 2$/m);
  assert.match(text, /^lace_netcheck_round_duration_seconds_sum 44$/m);
  assert.match(text, /^lace_netcheck_round_duration_seconds_bucket\{le="5"\} 1$/m);
  assert.doesNotMatch(text, /bits_per_second/);
});
