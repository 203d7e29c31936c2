/**
 * The metrics follow Prometheus' conventions as Prometheus' own checker reads them:
 * `promtool check metrics` on a real scrape of the agent and of `lace netcheck --watch`, and the
 * standard process metrics in both.
 */
import assert from "node:assert/strict";
import { agentTestOptions } from "./helpers/agent_process.ts";
import { metricsProblems, promtoolMissing } from "./helpers/promtool.ts";
import { scrapeAgent, scrapeNetcheck } from "./helpers/scrapes.ts";
import { needsRoot, skipIf, skipName } from "./helpers/skip.ts";

const PROMTOOL_MISSING = promtoolMissing();

/** The value of an unlabelled sample of an exposition. */
function sample(text: string, name: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} in the scrape`);
  return Number(line.slice(name.length + 1));
}

Deno.test({
  name: skipName("promtool check metrics flags a unit that is not a base unit", PROMTOOL_MISSING),
  ignore: skipIf(PROMTOOL_MISSING),
  async fn() {
    // What lace netcheck exported before: the check below must be able to see it.
    const old = [
      "# HELP lace_netcheck_bandwidth_bits_per_second iperf3 bandwidth per path",
      "# TYPE lace_netcheck_bandwidth_bits_per_second histogram",
      'lace_netcheck_bandwidth_bits_per_second_bucket{le="+Inf",network="default"} 1',
      'lace_netcheck_bandwidth_bits_per_second_sum{network="default"} 9000000000',
      'lace_netcheck_bandwidth_bits_per_second_count{network="default"} 1',
      "",
    ].join("\n");
    assert.match(await metricsProblems(old), /lace_netcheck_bandwidth_bits_per_second.*bytes/);
  },
});

Deno.test({
  name: skipName(
    "a running agent's /metrics passes promtool check metrics, process metrics included",
    PROMTOOL_MISSING ?? needsRoot(),
  ),
  ...agentTestOptions,
  ignore: skipIf(PROMTOOL_MISSING) || agentTestOptions.ignore,
  async fn() {
    const { text, startedAfter, scrapedAt } = await scrapeAgent();
    assert.equal(await metricsProblems(text), "", text);
    // The process that answered, not the test's: it started after the test started it.
    const started = sample(text, "process_start_time_seconds");
    assert.ok(started >= startedAfter - 0.02 && started <= scrapedAt, `started ${started}`);
    assert.ok(sample(text, "process_resident_memory_bytes") > 16 * 1024 * 1024);
    assert.ok(sample(text, "process_cpu_seconds_total") > 0);
    const open = sample(text, "process_open_fds");
    assert.ok(open > 3 && open <= sample(text, "process_max_fds"), `open fds ${open}`);
  },
});

Deno.test({
  name: skipName(
    "lace netcheck --watch's /metrics after a round passes promtool check metrics",
    PROMTOOL_MISSING,
  ),
  ignore: skipIf(PROMTOOL_MISSING),
  async fn() {
    const text = await scrapeNetcheck();
    assert.equal(await metricsProblems(text), "", text);
    // A round with series of every kind: a leak, failing paths, both histograms observed.
    assert.match(text, /^lace_netcheck_isolation_leaks\{[^}]*\} [1-9]/m);
    assert.match(text, /^lace_netcheck_failing_path\{/m);
    assert.match(text, /^lace_netcheck_bandwidth_bytes_per_second_count\{[^}]*\} [1-9]/m);
    assert.match(text, /^lace_netcheck_round_duration_seconds_count 1$/m);
    assert.ok(sample(text, "process_open_fds") > 0);
  },
});
