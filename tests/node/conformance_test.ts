/**
 * The README's test command's share of upstream's probe and lifecycle-hook e2e specs
 * (docs/conformance.md): every spec of test/e2e/common/node/container_probe.go and
 * lifecycle_hook.go that upstream labels [Conformance] or [NodeConformance] (chosen by those
 * labels from the e2e binary's own list, not by name) passes on a fresh Lace node over IPv4 and on
 * one whose pods are IPv6-only. The other specs of the files (alpha features) run only in
 * `deno task conformance`. Needs the real node's tools and e2e.test with ginkgo
 * (scripts/build_k8s_tools.sh, which scripts/setup.sh --tests runs).
 */
import assert from "node:assert/strict";
import { conformanceUnavailableReason, runTestCommandShare } from "./conformance.ts";
import { counts } from "./conformance_report.ts";
import { skipIf } from "../helpers/skip.ts";

const reason = await conformanceUnavailableReason();
if (reason) console.error(`conformance_test.ts skipped: ${reason}`);

Deno.test({
  name:
    "Upstream's [Conformance] and [NodeConformance] probe and lifecycle-hook specs pass on a Lace node over IPv4 and over IPv6-only pods",
  ignore: skipIf(reason),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const out = await Deno.makeTempDir({ prefix: "lace-conformance-test-" });
  const began = performance.now();
  const share = await runTestCommandShare({ out, procs: 12, concurrent: true });
  const seconds = Math.round((performance.now() - began) / 1000);
  for (const run of share.runs) {
    console.log(`${run.title}: ${JSON.stringify(counts(run.results))}`);
  }
  console.log(`${share.expected.length} labelled specs, both runs in ${seconds} s (${out})`);
  assert.equal(
    share.failures.map((f) => `${f.run}:\n  ${f.specs.join("\n  ")}`).join("\n"),
    "",
    `Labelled specs that did not pass (ginkgo's logs and reports under ${out})`,
  );
  await Deno.remove(out, { recursive: true });
});
