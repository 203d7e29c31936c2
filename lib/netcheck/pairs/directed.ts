/**
 * Lazy directed pairs in an order that keeps endpoints disjoint: a
 * round-robin tournament (circle method) gives rounds of disjoint unordered
 * pairs; each round is yielded A→B for all its pairs, then B→A. Consecutive
 * pairs therefore rarely share an endpoint, so a small window of upcoming
 * pairs keeps `--concurrency` sessions busy, and A→B sits right next to B→A
 * (the asymmetry check holds only a round's worth of figures). Each item
 * meets its partners in round order, which the scheduler keeps: with equal
 * session lengths the N−1 rounds of each direction take exactly 2(N−1)
 * session times (2N for an odd N, one bye per round). Memory is O(1): the
 * partners are computed as they are yielded.
 */

export interface Pair<T> {
  from: T;
  to: T;
}

/** Every ordered pair of distinct items exactly once, lazily, in round-robin order. */
export function directedPairs<T>(items: readonly T[]): Generator<Pair<T>> {
  return matchingPairs(items, 0, matchingCount(items.length));
}

/** The number of tournament matchings of `n` items: n−1, or n for an odd n (one bye each). */
export function matchingCount(n: number): number {
  if (n < 2) return 0;
  return n % 2 === 0 ? n - 1 : n;
}

/**
 * The pairs of tournament matchings `first` to `end` (exclusive), each
 * matching A→B for all its pairs, then B→A: every item meets each partner of
 * those matchings in both directions.
 */
export function* matchingPairs<T>(
  items: readonly T[],
  first: number,
  end: number,
): Generator<Pair<T>> {
  const n = items.length;
  if (n < 2) return;
  // With an odd count, slot n is a bye.
  const slots = n % 2 === 0 ? n : n + 1;
  const rounds = slots - 1;
  // The matching's partners are computed again for its second direction rather than kept in an
  // array: N/2 index pairs per matching would outlive many young-generation collections and be
  // promoted, old-generation garbage in a large cluster.
  for (let r = first; r < Math.min(end, rounds); r++) {
    for (let reverse = 0; reverse < 2; reverse++) {
      for (let i = 0; i < slots / 2; i++) {
        const a = i === 0 ? 0 : ((i - 1 + r) % rounds) + 1;
        const j = slots - 1 - i;
        const b = ((j - 1 + r) % rounds) + 1;
        if (a < n && b < n) {
          yield reverse ? { from: items[b], to: items[a] } : { from: items[a], to: items[b] };
        }
      }
    }
  }
}

/** The number of directed pairs of `n` items. */
export function pairCount(n: number): number {
  return n < 2 ? 0 : n * (n - 1);
}
