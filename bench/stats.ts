/** Small statistics over measured samples: nothing here invents a number. */

/** The p-th percentile (0..100) by nearest rank; NaN for no samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** The median (50th percentile by nearest rank). */
export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

export function max(samples: readonly number[]): number {
  return samples.length ? Math.max(...samples) : NaN;
}

export function mean(samples: readonly number[]): number {
  return samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : NaN;
}

/** Rounds for display and JSON, keeping `digits` decimals. */
export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
