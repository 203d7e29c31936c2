/**
 * Isolation between networks (`--networks A,B,…`): a probe pod in every
 * network on every node; every cross-network path, from each pod of one
 * network to each pod of another, asks the target's address for /hostname.
 * Networks may reuse addresses, so an answer alone proves nothing: the
 * source's own network may hold the same address. An answer naming the
 * target pod itself, or any probe pod of another network, is a leak; no
 * answer, or an answer naming a probe pod of the source's own network, is
 * isolation. An answer naming no probe pod of this run proves neither (a
 * pod outside netcheck answered, in either network): UNVERIFIED. Pure:
 * pairs, verdicts and the matrix.
 *
 * What a name cannot prove: a pod's name is no secret (netexec's /hostname
 * tells it to anyone who reaches the pod, and a tenant may list the pods
 * of its own namespace), so a pod that knows the name of a probe pod can
 * answer with it. agnhost netexec has nothing a pod could answer only if
 * it were ours (no challenge it could sign; /shell is not acceptable), so
 * netcheck cannot tell our probe pod from a pod naming itself after it.
 * docs/netcheck.md says what this leaves.
 */
import type { NetworkEndpoint } from "../cluster/netcheck_cluster.ts";
import type { LatencyOutcome } from "./latency.ts";
import type { Pair } from "../pairs/directed.ts";

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

/** Whose answer an isolation path got: the probe pods of this round, by name, and their networks. */
export interface ProbePodNetworks {
  /** Network index of each probe pod of the round, by pod name. */
  networkOf: ReadonlyMap<string, number>;
  /** Network names (--networks) by index, for messages. */
  names: readonly string[];
}

/** Each probe pod of `perNetwork` with the index of its network. */
export function probePodNetworks(
  perNetwork: readonly (readonly NetworkEndpoint[])[],
  names: readonly string[],
): ProbePodNetworks {
  const networkOf = new Map<string, number>();
  for (const endpoints of perNetwork) for (const e of endpoints) networkOf.set(e.pod, e.network);
  return { networkOf, names };
}

/**
 * Judges what the request from a pod of network `fromNetwork` to the address
 * of `toPod` (another network's) found. `toPod` naming itself, or another
 * network's probe pod answering, is a leak; a probe pod of the source's own
 * network answering (a reused address) or no answer is isolation. An answer
 * from a pod that is none of the round's probe pods, or one that could not
 * be read, is UNVERIFIED (a failure: isolation was not shown).
 */
export function isolationVerdict(
  outcome: LatencyOutcome,
  toPod: string,
  fromNetwork: number,
  probes: ProbePodNetworks,
): IsolationVerdict {
  if (outcome.ok) {
    const who = outcome.identity;
    if (who === toPod) {
      return { isolated: false, errorClass: "LEAK", detail: `answered by "${toPod}" itself` };
    }
    const network = probes.networkOf.get(who);
    if (network === fromNetwork) {
      return {
        isolated: true,
        detail: `answered by "${who}", a probe pod of the source's own network (a reused address)`,
      };
    }
    if (network !== undefined) {
      return {
        isolated: false,
        errorClass: "LEAK",
        detail: `answered by "${who}", the probe pod of network ${probes.names[network]} there`,
      };
    }
    return {
      isolated: false,
      errorClass: "UNVERIFIED",
      detail: `answered by "${who}", which is no probe pod of this run: a pod outside netcheck ` +
        `answers the address (in either network), so whether the request left its network is ` +
        `not shown`,
    };
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
  #leaks = 0;

  constructor(readonly names: readonly string[]) {
    this.tested = names.map(() => names.map(() => 0));
    this.failed = names.map(() => names.map(() => 0));
  }

  /** A path from network `from` to `to`; `leak`: a cross-network path failed as LEAK. */
  record(from: number, to: number, ok: boolean, leak = false): void {
    this.tested[from][to]++;
    if (!ok) this.failed[from][to]++;
    if (leak) this.#leaks++;
  }

  /**
   * Cross-network paths answered by another network's pod (LEAK); the failed paths of a cell
   * also count those UNVERIFIED.
   */
  get leaks(): number {
    return this.#leaks;
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
