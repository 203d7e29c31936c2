/**
 * Isolation between networks (`--networks A,B,…`): a probe pod in every
 * network on every node; every cross-network path, from each pod of one
 * network to each pod of another, asks the target's address for /hostname.
 * Networks may reuse addresses, so an answer alone proves nothing: the
 * source's own network may hold the same address. Only an answer naming
 * the target pod itself is a leak. No answer, or an answer from another
 * pod, is isolation. Pure: pairs, verdicts and the matrix.
 */
import type { Endpoint } from "./cluster.ts";
import type { LatencyOutcome } from "./latency.ts";
import type { Pair } from "./pairs.ts";

/** An endpoint and the network (index into --networks) its pod is in. */
export interface NetworkEndpoint extends Endpoint {
  network: number;
}

/**
 * Every cross-network directed path lazily: for each ordered pair of distinct
 * networks, each pod of the first to each pod of the second, same node
 * included (a leak inside one node is the likeliest). M(M−1)·N² paths.
 */
export function* crossNetworkPairs(
  networks: readonly (readonly NetworkEndpoint[])[],
): Generator<Pair<NetworkEndpoint>> {
  for (let x = 0; x < networks.length; x++) {
    for (let y = 0; y < networks.length; y++) {
      if (x === y) continue;
      for (const from of networks[x]) for (const to of networks[y]) yield { from, to };
    }
  }
}

/** The verdict on one cross-network path. */
export type IsolationVerdict =
  | { isolated: true; detail: string }
  | { isolated: false; errorClass: "LEAK" | "UNVERIFIED"; detail: string };

/**
 * Judges what the request from a pod of one network to the address of
 * `toPod` (another network's) found. Only `toPod` naming itself is a leak; a
 * path whose answer could not be read is UNVERIFIED (a failure: isolation
 * was not shown).
 */
export function isolationVerdict(outcome: LatencyOutcome, toPod: string): IsolationVerdict {
  if (outcome.ok) {
    if (outcome.identity === toPod) {
      return { isolated: false, errorClass: "LEAK", detail: `answered by "${toPod}" itself` };
    }
    return { isolated: true, detail: `answered by "${outcome.identity}" (a reused address)` };
  }
  if (outcome.errorClass === "TIMEOUT") return { isolated: true, detail: "no answer" };
  return {
    isolated: false,
    errorClass: "UNVERIFIED",
    detail: `could not tell who answered: ${outcome.errorClass} ${outcome.message}`,
  };
}

/** Paths tested and failed between each ordered pair of networks (the report's matrix). */
export class NetworkMatrix {
  readonly tested: number[][];
  readonly failed: number[][];

  constructor(readonly names: readonly string[]) {
    this.tested = names.map(() => names.map(() => 0));
    this.failed = names.map(() => names.map(() => 0));
  }

  record(from: number, to: number, ok: boolean): void {
    this.tested[from][to]++;
    if (!ok) this.failed[from][to]++;
  }

  /** Cross-network paths answered by the other network's pod. */
  get leaks(): number {
    let n = 0;
    for (let x = 0; x < this.names.length; x++) {
      for (let y = 0; y < this.names.length; y++) if (x !== y) n += this.failed[x][y];
    }
    return n;
  }

  /** Plain data: `cells[from][to] = {tested, failed}`. */
  toJSON(): { networks: string[]; cells: { tested: number; failed: number }[][] } {
    return {
      networks: [...this.names],
      cells: this.tested.map((row, x) =>
        row.map((tested, y) => ({ tested, failed: this.failed[x][y] }))
      ),
    };
  }

  /**
   * Text rows: a cell on the diagonal is same-network connect paths
   * "passed/tested", off it "isolated/tested" (a failure there is a leak).
   */
  lines(): string[] {
    const cell = (x: number, y: number) => {
      const t = this.tested[x][y], f = this.failed[x][y];
      return x === y ? `${t - f}/${t} pass` : `${t - f}/${t} isolated`;
    };
    const width = Math.max(
      ...this.names.map((n) => n.length),
      ...this.names.flatMap((_, x) => this.names.map((_, y) => cell(x, y).length)),
    ) + 2;
    const out = ["from/to".padEnd(width) + this.names.map((n) => n.padEnd(width)).join("")];
    for (let x = 0; x < this.names.length; x++) {
      out.push(
        this.names[x].padEnd(width) +
          this.names.map((_, y) => cell(x, y).padEnd(width)).join(""),
      );
    }
    return out.map((l) => l.trimEnd());
  }
}
