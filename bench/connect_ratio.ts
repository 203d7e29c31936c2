/**
 * connect() time of one cgroup against another, the way figure 1 compares
 * them: in rounds, each round one batch from each side back to back (the
 * order alternating, so neither side always gets the warmer caches), every
 * pair of a round measured before the next round starts (so a change of the
 * machine's load falls on all pairs alike). A round's ratio is the ratio of
 * the two batches' median connect() times; the result is the median over
 * rounds. Pure: the batches are measured by the function it is given.
 */
import { median, percentile, round } from "./stats.ts";

/** Two sides to compare, a against b; what a side is, only `batch` knows. */
export interface RatioPair<S> {
  a: S;
  b: S;
}

export interface RatioResult {
  /** Median over rounds of a's batch median / b's. */
  ratio: number;
  /** Medians over rounds of each side's batch median, ns. */
  aNs: number;
  bNs: number;
  /** Quartiles of the per-round ratios: the spread one round has. */
  q1: number;
  q3: number;
  rounds: number;
}

/** Measures every pair `rounds` times, interleaved; `batch` returns one batch's median ns. */
export async function connectRatios<S>(
  pairs: readonly RatioPair<S>[],
  rounds: number,
  batch: (side: S) => Promise<number>,
): Promise<RatioResult[]> {
  const samples = pairs.map(() => ({ a: [] as number[], b: [] as number[], q: [] as number[] }));
  for (let r = 0; r < rounds; r++) {
    for (const [i, pair] of pairs.entries()) {
      let a: number, b: number;
      if (r % 2 === 0) {
        a = await batch(pair.a);
        b = await batch(pair.b);
      } else {
        b = await batch(pair.b);
        a = await batch(pair.a);
      }
      samples[i].a.push(a);
      samples[i].b.push(b);
      samples[i].q.push(a / b);
    }
  }
  return samples.map((s) => ({
    ratio: round(median(s.q), 4),
    aNs: Math.round(median(s.a)),
    bNs: Math.round(median(s.b)),
    q1: round(percentile(s.q, 25), 4),
    q3: round(percentile(s.q, 75), 4),
    rounds,
  }));
}
