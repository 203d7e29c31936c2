/**
 * V8 settings for Lace as a small, long-lived process: the compiled binary
 * has them built in (`deno task compile`), the chart and the systemd unit set
 * them in DENO_V8_FLAGS as well (for a `deno run` of the source), and the
 * tests and benchmarks start the agent with them.
 *
 * A 1 MiB semi-space caps V8's young generation, which otherwise grows to
 * 16 MiB per semi-space under a burst (the first pod list, 50 netcheck
 * sessions at once) and is returned only when the memory reducer runs, so the
 * agent's peak RSS is lower with the cap.
 * --optimize-for-size is left out: it lowers netcheck's peak RSS, but makes an
 * agent with a full map collect in memory-reducing mode, with long pauses and
 * a slower /targets.
 * --expose-gc lets the agent collect once when its first full pod list is
 * applied (lib/agent/start.ts): start-up's garbage (the module graph, the
 * first reconcile) otherwise stays in the heap until the old generation
 * reaches its limit, which at a full map means a long collection in the
 * middle of serving /targets. One pause at start instead, and a smaller idle
 * RSS. What each flag did: bench/RESULTS.md, "Figures behind the code's
 * comments".
 */
export const V8_FLAGS: readonly string[] = ["--max-semi-space-size=1", "--expose-gc"];

/** The flags as one `--v8-flags=` argument of `deno run` or `deno compile`. */
export function v8FlagsArg(): string {
  return `--v8-flags=${V8_FLAGS.join(",")}`;
}
