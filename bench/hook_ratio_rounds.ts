/**
 * Figure 1's ratio rounds: connect() time from four cgroups against the same
 * plain sibling, in interleaved rounds with the BPF statistics off.
 */
import { connectRatios } from "./connect_ratio.ts";
import {
  type Comparison,
  COMPARISONS,
  FAMILIES,
  type Family,
  PROGRAM,
  type RatioCell,
  type Side,
} from "./hook_cells.ts";
import type { HookBench } from "./hook_setup.ts";
import { progStats, STATS_SYSCTL } from "./hook_stat_rounds.ts";
import { setSysctl } from "./system.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";

/**
 * The ratio is taken the way a node runs: without the statistics' own cost (two clock
 * reads per run). Another process may turn them on meanwhile: the run times say so
 * (`statsDuringRatios`). The statistics are on again after.
 */
export async function ratiosWithStatsOff(
  bench: HookBench,
  opts: { rounds: number; count: number },
  cleanups: CleanupStack,
): Promise<{ ratios: RatioCell[]; statsDuringRatios: boolean }> {
  const { progIds } = bench;
  setSysctl(STATS_SYSCTL, "0", cleanups);
  const before = await Promise.all(FAMILIES.map((f) => progStats(progIds[PROGRAM[f]])));
  const ratios = await measureRatios(bench, opts);
  const after = await Promise.all(FAMILIES.map((f) => progStats(progIds[PROGRAM[f]])));
  const statsDuringRatios = after.some((a, i) => a.runTimeNs !== before[i].runTimeNs);
  setSysctl(STATS_SYSCTL, "1", cleanups);
  return { ratios, statsDuringRatios };
}

/**
 * Every cell (family × matching or not) compares four cgroups against the same plain
 * sibling, in the same interleaved rounds. In a matching cell, every side whose program
 * does not mark the socket has it marked beforehand, so all take the same route.
 */
async function measureRatios(
  bench: HookBench,
  opts: { rounds: number; count: number },
): Promise<RatioCell[]> {
  const { cgroups, programs, sibling2, mark, port } = bench;
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
    opts.rounds,
    async (side) => (await bench.connects(side, opts.count)).medianNs,
  );
  return pairs.map((p, i) => ({ ...p.cell, ...results[i], connectsPerRound: opts.count }));
}
