/**
 * Figure 1's statistics rounds: the kernel's run time per run of each
 * program (run_time_ns / run_cnt, bpftool) over batches of connects, the
 * programs compared taking turns in a new order every round.
 */
import { run } from "../lib/os/process.ts";
import type { BenchProgram } from "./hook_programs.ts";
import { cellKey, type Family, type FloorProgram, PROGRAM, type Side } from "./hook_cells.ts";
import type { HookBench } from "./hook_setup.ts";
import type { StatSamples } from "./hook_stat_summary.ts";
import { median } from "./stats.ts";

export const STATS_SYSCTL = "kernel.bpf_stats_enabled";

interface ProgStats {
  runTimeNs: number;
  runCnt: number;
}

export async function progStats(id: number): Promise<ProgStats> {
  const info = JSON.parse(await run(["bpftool", "prog", "show", "id", String(id), "--json"]));
  return { runTimeNs: Number(info.run_time_ns ?? 0), runCnt: Number(info.run_cnt ?? 0) };
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

/** The kernel's run time per run of one program over `count` connects from `side`. */
async function bpfNsPerConnect(bench: HookBench, id: number, side: Side, count: number) {
  const before = await progStats(id);
  await bench.connects(side, count);
  const after = await progStats(id);
  const runs = after.runCnt - before.runCnt;
  if (runs <= 0) {
    throw new Error(
      `Program ${id} did not run during ${count} connects: is it attached to "${side.cgroup}"`,
    );
  }
  return { ns: (after.runTimeNs - before.runTimeNs) / runs, runs };
}

/**
 * `rounds` rounds over `cells` at the maps' present size: the kubelet's Lace alone, or at a
 * floor size (`atFloor`) beside Lace's other copies and the cheaper programs.
 */
export async function statRounds(
  bench: HookBench,
  cells: { family: Family; match: boolean }[],
  opts: { rounds: number; count: number; atFloor: boolean },
): Promise<StatSamples> {
  const { programs } = bench;
  const kubelet = new Map(
    cells.map((c) => [cellKey(c.family, c.match), { ns: [] as number[], runs: 0 }]),
  );
  const floor = new Map<string, number[]>();
  const kubeletLace: Pick<BenchProgram, "cgroup" | "progIds"> = {
    cgroup: bench.cgroups.kubelet,
    progIds: bench.progIds as BenchProgram["progIds"],
  };
  for (let r = 0; r < opts.rounds; r++) {
    for (const { family, match } of cells) {
      const runs: {
        group: "lace" | FloorProgram;
        program: Pick<BenchProgram, "cgroup" | "progIds">;
      }[] = [
        { group: "lace", program: kubeletLace },
      ];
      if (opts.atFloor) {
        runs.push(...programs.lace.map((program) => ({ group: "lace" as const, program })));
        runs.push({ group: "noop", program: programs.noop });
        runs.push(...programs.lookup.map((program) => ({ group: "lookup" as const, program })));
        if (!match) runs.push({ group: "outside", program: programs.outside });
      }
      const thisRound = new Map<string, number[]>();
      // In a new order each round, so no program always runs right after the same other one.
      for (const { group, program } of shuffled(runs)) {
        const side = { cgroup: program.cgroup, family, port: bench.port(family, match) };
        const got = await bpfNsPerConnect(
          bench,
          program.progIds[PROGRAM[family]],
          side,
          opts.count,
        );
        if (program === kubeletLace) {
          const cell = kubelet.get(cellKey(family, match))!;
          cell.ns.push(got.ns);
          cell.runs += got.runs;
        }
        thisRound.set(group, [...(thisRound.get(group) ?? []), got.ns]);
      }
      if (!opts.atFloor) continue;
      for (const [group, ns] of thisRound) {
        const k = `${group}/${cellKey(family, match)}`;
        floor.set(k, [...(floor.get(k) ?? []), median(ns)]);
      }
    }
  }
  return { kubelet, floor };
}
