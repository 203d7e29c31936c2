/**
 * Property-style tests: a small seeded generator, and a check that runs a body
 * over many generated inputs and, on failure, says which seed replays it. Seeded, so `deno test` is reproducible; set
 * LACE_TEST_SEED to explore other inputs or to replay one failing run.
 */

/** A deterministic generator (mulberry32) with the helpers property tests need. */
export class SeededRandom {
  #state: number;

  constructor(readonly seed: number) {
    this.#state = seed | 0;
  }

  /** A number in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) | 0;
    let t = Math.imul(this.#state ^ (this.#state >>> 15), 1 | this.#state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A whole number in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }
}

function baseSeed(fallback: number): number {
  const text = Deno.env.get("LACE_TEST_SEED");
  if (text === undefined || text === "") return fallback;
  const seed = Number(text);
  if (!Number.isInteger(seed)) throw new TypeError(`LACE_TEST_SEED must be an integer: "${text}"`);
  return seed;
}

/**
 * Runs `body` `runs` times, each with its own generator seeded `seed + run`
 * (or LACE_TEST_SEED + run). A failure is re-thrown naming the seed of the
 * failing run, so `LACE_TEST_SEED=<seed>` replays it as run 0.
 */
export function forAll(
  options: { seed: number; runs: number },
  body: (random: SeededRandom) => void,
): void {
  const base = baseSeed(options.seed);
  for (let run = 0; run < options.runs; run++) {
    const seed = base + run;
    try {
      body(new SeededRandom(seed));
    } catch (cause) {
      throw new Error(
        `Property failed on run ${run} with seed ${seed} (replay: LACE_TEST_SEED=${seed}): ${
          cause instanceof Error ? cause.message : String(cause)
        }`,
        { cause },
      );
    }
  }
}
