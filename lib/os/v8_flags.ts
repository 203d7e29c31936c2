/**
 * V8 settings for Lace as a small, long-lived process: the compiled binary
 * has them built in (`deno task compile`), the chart and the systemd unit set
 * them in DENO_V8_FLAGS as well (for a `deno run` of the source), and the
 * tests and benchmarks start the agent with them.
 *
 * A 1 MiB semi-space caps V8's young generation, which otherwise grows to
 * 16 MiB per semi-space under a burst (the first pod list, 50 netcheck
 * sessions at once) and is returned only when the memory reducer runs
 * (agent peak RSS 169 → 144 MiB side by side, bench/RESULTS.md).
 * --optimize-for-size was measured and left out: it brings netcheck's peak
 * RSS 100 vs 20 nodes from 1.34× to 1.22×, but makes an agent with a full map
 * collect in memory-reducing mode, with pauses of up to 145 ms and /targets
 * twice as slow.
 * --expose-gc lets the agent collect once when its first full pod list is
 * applied (lib/agent/start.ts): start-up's garbage (the module graph, the
 * first reconcile) otherwise stays in the heap until the old generation
 * reaches its limit, which at a full map meant a 20–80 ms collection in the
 * middle of serving /targets. One pause at start instead (about 110 ms at
 * 65k targets, a few ms at 250 pods); the API agent's idle RSS 136 → 129 MiB
 * side by side with the previous flags.
 */
export const V8_FLAGS: readonly string[] = ["--max-semi-space-size=1", "--expose-gc"];

/** The flags as one `--v8-flags=` argument of `deno run` or `deno compile`. */
export function v8FlagsArg(): string {
  return `--v8-flags=${V8_FLAGS.join(",")}`;
}
