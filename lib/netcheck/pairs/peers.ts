/**
 * Thousands of nodes: all pairs is N·(N−1) paths, and bandwidth over all of
 * them does not scale. Above --sample-threshold nodes each round tests every
 * node against about k peers, both directions, and the rounds rotate so that
 * every directed pair is covered within ⌈(N−1)/k⌉ rounds.
 *
 * The peers of a round are a slice of the round-robin tournament that
 * directedPairs() walks (directed.ts): its M matchings (N−1, or N for an odd N)
 * are cut into R = ⌈(N−1)/k⌉ consecutive slices of ⌊M/R⌋ or ⌈M/R⌉ matchings.
 * A matching pairs every node with one partner (an odd N leaves one node
 * out), so a slice gives each node at most k partners (k+1 for some nodes
 * when N is odd: N matchings must fit the same R rounds), each in both
 * directions; R slices cover every matching, hence every pair, once. The
 * order within a slice is directedPairs()'s, which the scheduler runs in
 * 2·(matchings) session times. Pure.
 */
import { matchingCount, matchingPairs, type Pair } from "./directed.ts";

/** Rounds after which every directed pair of `n` nodes has been tested with `k` peers a round. */
export function roundsToCover(n: number, k: number): number {
  if (n < 2) return 1;
  return Math.ceil((n - 1) / Math.max(1, Math.min(k, n - 1)));
}

/** The tournament matchings [first, end) of round `round` (any integer; rounds repeat). */
export function roundMatchings(n: number, k: number, round: number): [number, number] {
  const m = matchingCount(n);
  const rounds = roundsToCover(n, k);
  const r = ((round % rounds) + rounds) % rounds;
  return [Math.floor((r * m) / rounds), Math.floor(((r + 1) * m) / rounds)];
}

/** The directed pairs of round `round` over `items` with `k` peers a node, lazily. */
export function sampledPairs<T>(items: readonly T[], k: number, round: number): Generator<Pair<T>> {
  const [first, end] = roundMatchings(items.length, k, round);
  return matchingPairs(items, first, end);
}

/** How many directed pairs sampledPairs() yields for `n` items. */
export function sampledPairCount(n: number, k: number, round: number): number {
  const [first, end] = roundMatchings(n, k, round);
  // A matching has ⌊n/2⌋ pairs, two directions each.
  return (end - first) * 2 * Math.floor(n / 2);
}

/**
 * Peers per node for connectivity and latency in the next --watch round:
 * all of them (0) while a round of all pairs fits `budgetMs`, else as many
 * as fit by the last all-pairs timing, never fewer than `k`.
 */
export function connectivityPeers(
  n: number,
  lastAllPairsMs: number,
  budgetMs: number,
  k: number,
): number {
  if (n < 2 || lastAllPairsMs <= budgetMs) return 0;
  const fit = Math.floor(((n - 1) * budgetMs) / lastAllPairsMs);
  return Math.max(k, Math.min(fit, n - 1));
}
