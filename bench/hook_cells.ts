/**
 * The names figure 1's files share: its cells (family × matching or not), the
 * comparisons its ratio rounds make, the programs set beside Lace's, the
 * records its rounds produce, and the labels its rows print.
 */
import type { ProgramName } from "../lib/datapath/pins.ts";
import { MAX_TARGETS } from "../lib/probe/key.ts";
import type { ConnectRequest } from "./connect_worker.ts";
import type { RatioResult } from "./connect_ratio.ts";

export type Family = "ipv4" | "ipv6";
export const FAMILIES: Family[] = ["ipv4", "ipv6"];
export const PROGRAM: Record<Family, ProgramName> = { ipv4: "connect4", ipv6: "connect6" };

/** One side of a connect batch, as the worker takes it. */
export type Side = Omit<ConnectRequest, "count">;

/** What each cell's ratio compares against the plain sibling. */
export const COMPARISONS = ["lace", "lookup", "noop", "floor"] as const;
export type Comparison = (typeof COMPARISONS)[number];
export const COMPARISON_LABEL: Record<Comparison, string> = {
  lace: "kubelet (Lace)",
  lookup: "lookup + mark only",
  noop: "no-op program",
  floor: "second sibling",
};

/** The other programs of bench/hook_programs.ts ("outside" only runs non-matching cells). */
export const FLOOR_PROGRAMS = ["noop", "lookup", "outside"] as const;
export type FloorProgram = (typeof FLOOR_PROGRAMS)[number];

export interface RatioCell extends RatioResult {
  family: Family;
  match: boolean;
  comparison: Comparison;
  connectsPerRound: number;
}

/** The kubelet's copy of Lace, per map size and cell (the median over rounds). */
export interface PerConnect {
  entries: number;
  family: Family;
  match: boolean;
  ns: number;
  runs: number;
}

/** The cheaper programs' statistics at the floor sizes, beside Lace's (medians of copies). */
export interface FloorStat {
  program: FloorProgram;
  entries: number;
  family: Family;
  match: boolean;
  ns: number;
  /** The median over rounds of this program's time ÷ lookup + mark's in the same round. */
  overLookup: number;
}

/**
 * Lace's time ÷ lookup + mark's, the median over rounds of each round's ratio, each program
 * the median of its copies in that round (ns: the median over rounds of Lace's).
 */
export interface LaceOverLookup {
  entries: number;
  family: Family;
  match: boolean;
  ns: number;
  ratio: number;
}

/** The key of a cell in the rounds' sample maps. */
export const cellKey = (family: Family, match: boolean) => `${family}/${match}`;

export const label = (family: Family, match: boolean) =>
  `${family === "ipv4" ? "IPv4" : "IPv6"} ${match ? "matching" : "non-matching"}`;

export const sizeLabel = (n: number) =>
  n === MAX_TARGETS ? "64k" : n >= 1000 ? `${n / 1000}k` : String(n);
