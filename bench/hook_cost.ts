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
 * copies: where the kernel places a program moves its cost by as much as the
 * allowance judged (bench/hook_programs.ts).
 */
import { MAX_TARGETS } from "../lib/probe/key.ts";
import {
  FAMILIES,
  type FloorStat,
  type LaceOverLookup,
  type PerConnect,
  type RatioCell,
} from "./hook_cells.ts";
import { COPIES } from "./hook_programs.ts";
import { ratiosWithStatsOff } from "./hook_ratio_rounds.ts";
import { hookRowsAndGoals } from "./hook_report.ts";
import { setUpHookBench } from "./hook_setup.ts";
import { statRounds, STATS_SYSCTL } from "./hook_stat_rounds.ts";
import { summarizeStats } from "./hook_stat_summary.ts";
import type { FigureResult } from "./report.ts";
import { setSysctl } from "./system.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";

export interface HookCostOptions {
  quick: boolean;
}

export async function hookCost(
  opts: HookCostOptions,
  cleanups: CleanupStack,
): Promise<FigureResult> {
  const sizes = opts.quick ? [0, 1000] : [0, 1000, 10_000, MAX_TARGETS];
  // Many short rounds rather than a few long ones: the programs compared take turns often, so
  // load that comes and goes (2 CPUs shared with other work) falls on all of them alike.
  const statRoundCount = opts.quick ? 3 : 9;
  const statCount = opts.quick ? 500 : 3500;
  const ratioSize = opts.quick ? 1000 : 10_000;
  // Where the cheaper programs run beside Lace's, for the goals of Lace against lookup + mark.
  const floorSizes = opts.quick ? [1000] : [10_000, MAX_TARGETS];
  const ratioRounds = opts.quick ? 6 : 100;
  const ratioCount = opts.quick ? 200 : 500;

  const bench = await setUpHookBench(cleanups);
  const perConnect: PerConnect[] = [];
  const floorStats: FloorStat[] = [];
  const laceOverLookup: LaceOverLookup[] = [];
  let ratios: RatioCell[] = [];
  let statsDuringRatios = false;
  setSysctl(STATS_SYSCTL, "1", cleanups);
  for (const size of sizes) {
    bench.fillTo(size);
    const cells = FAMILIES.flatMap((family) =>
      (size > 0 ? [false, true] : [false]).map((match) => ({ family, match }))
    );
    const samples = await statRounds(bench, cells, {
      rounds: statRoundCount,
      count: statCount,
      atFloor: floorSizes.includes(size),
    });
    const summary = summarizeStats(size, cells, samples);
    perConnect.push(...summary.perConnect);
    laceOverLookup.push(...summary.laceOverLookup);
    floorStats.push(...summary.floorStats);
    if (size !== ratioSize) continue;
    ({ ratios, statsDuringRatios } = await ratiosWithStatsOff(
      bench,
      { rounds: ratioRounds, count: ratioCount },
      cleanups,
    ));
  }
  const tagged = bench.datapath.counters();
  const { rows, goals } = hookRowsAndGoals({
    perConnect,
    floorStats,
    laceOverLookup,
    ratios,
    statsDuringRatios,
    floorSizes,
    ratioSize,
    ratioRounds,
    ratioCount,
  });

  return {
    name: "hook",
    title: "1. Hook cost",
    rows,
    goals,
    data: {
      perConnect,
      statConnectsPerCell: statCount * statRoundCount,
      statRounds: statRoundCount,
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
