/**
 * What figure 1 keeps of one map size's statistics rounds: the kubelet's copy
 * per cell, and at a floor size each program's ns and its ratio to lookup +
 * mark, as medians over rounds of each round's median over copies.
 */
import {
  cellKey,
  type Family,
  FLOOR_PROGRAMS,
  type FloorStat,
  type LaceOverLookup,
  type PerConnect,
} from "./hook_cells.ts";
import { median, round } from "./stats.ts";

/** One size's rounds as measured. */
export interface StatSamples {
  /** Per cell, the kubelet's copy's ns of each round and its runs in all. */
  kubelet: Map<string, { ns: number[]; runs: number }>;
  /** Per program and cell (`program/family/match`), each round's median over its copies. */
  floor: Map<string, number[]>;
}

export function summarizeStats(
  size: number,
  cells: { family: Family; match: boolean }[],
  samples: StatSamples,
): { perConnect: PerConnect[]; laceOverLookup: LaceOverLookup[]; floorStats: FloorStat[] } {
  const perConnect: PerConnect[] = [];
  const laceOverLookup: LaceOverLookup[] = [];
  const floorStats: FloorStat[] = [];
  for (const { family, match } of cells) {
    const cell = samples.kubelet.get(cellKey(family, match))!;
    perConnect.push({
      entries: size,
      family,
      match,
      ns: round(median(cell.ns), 1),
      runs: cell.runs,
    });
    const lookupNs = samples.floor.get(`lookup/${cellKey(family, match)}`);
    if (!lookupNs) continue;
    const overLookup = (ns: number[]) => median(ns.map((x, r) => x / lookupNs[r]));
    const laceNs = samples.floor.get(`lace/${cellKey(family, match)}`)!;
    laceOverLookup.push({
      entries: size,
      family,
      match,
      ns: round(median(laceNs), 1),
      ratio: overLookup(laceNs),
    });
    for (const program of FLOOR_PROGRAMS) {
      const ns = samples.floor.get(`${program}/${cellKey(family, match)}`);
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
  return { perConnect, laceOverLookup, floorStats };
}
