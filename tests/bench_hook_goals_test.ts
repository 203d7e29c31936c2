/**
 * Figure 1's goals against lookup + mark (bench/hook_report.ts), judged on made-up ratios:
 * matches and misses outside every pod range within 1.5×, in-range misses within 2×.
 */
import assert from "node:assert/strict";
import { type HookMeasured, hookRowsAndGoals } from "../bench/hook_report.ts";

/** Figure 1's measurements with every Lace / lookup ratio set as given. */
function hookMeasured(ratios: { match: number; inRange: number; outside: number }): HookMeasured {
  const cells = (["ipv4", "ipv6"] as const).flatMap((family) =>
    [true, false].map((match) => ({ family, match }))
  );
  return {
    perConnect: cells.map((c) => ({ ...c, entries: 10_000, ns: 60, runs: 1 })),
    floorStats: cells.flatMap((c) => [
      { ...c, program: "lookup" as const, entries: 10_000, ns: 40, overLookup: 1 },
      { ...c, program: "noop" as const, entries: 10_000, ns: 20, overLookup: 0.5 },
      ...(c.match ? [] : [{
        ...c,
        program: "outside" as const,
        entries: 10_000,
        ns: 40 * ratios.outside,
        overLookup: ratios.outside,
      }]),
    ]),
    laceOverLookup: cells.map((c) => ({
      ...c,
      entries: 10_000,
      ns: 60,
      ratio: c.match ? ratios.match : ratios.inRange,
    })),
    ratios: [],
    statsDuringRatios: false,
    floorSizes: [10_000],
    ratioSize: 10_000,
    ratioRounds: 0,
    ratioCount: 0,
  };
}

Deno.test("figure 1 holds matches and outside misses to 1.5× lookup + mark, in-range misses to 2×", () => {
  const met = (r: { match: number; inRange: number; outside: number }) =>
    Object.fromEntries(
      hookRowsAndGoals(hookMeasured(r)).goals.filter((g) => g.target.endsWith("×")).map((
        g,
      ) => [g.name.split(",")[0], g.met]),
    );
  assert.deepEqual(met({ match: 1.45, inRange: 1.95, outside: 1.45 }), {
    "BPF cost of a match": true,
    "BPF cost of an in-range miss": true,
    "BPF cost outside every pod range": true,
  });
  assert.deepEqual(met({ match: 1.55, inRange: 2.05, outside: 1.55 }), {
    "BPF cost of a match": false,
    "BPF cost of an in-range miss": false,
    "BPF cost outside every pod range": false,
  });
});
