/**
 * Durations as operators write them, in Go's `time.ParseDuration` syntax
 * (what Kubernetes users know from every other flag and CNI config): one or
 * more decimal numbers each with a unit, like "250ms", "1.5s", "1m30s". No
 * imports, so the CNI plugin path can use it and stay small.
 */

/** The longest delay a timer can wait (setTimeout's limit, 2^31-1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3, // U+00B5, as Go accepts it
  "μs": 1e-3, // U+03BC, likewise
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const WHOLE = /^[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
const PART = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g;

/**
 * Parses a Go-style duration into milliseconds (possibly fractional or
 * negative, as Go allows; callers bound the range they accept). Like Go,
 * "0" needs no unit and anything else does. Throws a TypeError naming the
 * text when it is not a duration.
 */
export function parseDuration(text: string): number {
  if (/^[-+]?0$/.test(text)) return 0;
  if (!WHOLE.test(text)) {
    throw new TypeError(
      `Invalid duration "${text}": use numbers with units (ms, s, m, h), e.g. 500ms, 5s, 1m30s`,
    );
  }
  let total = 0;
  for (const [, number, unit] of text.matchAll(PART)) total += Number(number) * UNIT_MS[unit];
  return text.startsWith("-") ? -total : total;
}

/** Formats milliseconds the way parseDuration reads them, shortest first: 300000 → "5m". */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  const sign = ms < 0 ? "-" : "";
  let rest = Math.abs(ms);
  let out = "";
  for (const [unit, size] of [["h", 3_600_000], ["m", 60_000], ["s", 1000]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  if (rest > 0) out += `${rest}ms`;
  return sign + out;
}
