/**
 * The test command's share of the conformance run (tests/node/conformance.ts): every spec of
 * upstream's probe and lifecycle-hook files that upstream marks [Conformance], run by upstream's
 * own e2e binary against a real Lace node over IPv4. The rest of the files' specs, over IPv6-only
 * pods and the control without the agent run in `deno task conformance` (docs/conformance.md
 * says which ran where). Skips with the reason when e2e.test is not built.
 */
import assert from "node:assert/strict";
import { conformanceUnavailableReason, runSpecs } from "./conformance.ts";

const reason = await conformanceUnavailableReason();

Deno.test({
  name:
    "upstream's [Conformance] probe and lifecycle-hook specs pass on a Lace node whose namespaces are isolated networks",
  ignore: reason !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const out = await Deno.makeTempDir({ prefix: "lace-conformance-" });
  const results = await runSpecs("lace-ipv4", { subset: "conformance", procs: 14, out });
  const ran = results.filter((r) => r.outcome !== "skipped");
  // container_probe.go and lifecycle_hook.go of v1.37.2 mark 14 specs [Conformance].
  assert.equal(ran.length, 14, `ran ${ran.length} specs (report in ${out})`);
  assert.deepEqual(
    ran.filter((r) => r.outcome !== "passed").map((r) => `${r.name}: ${r.message}`),
    [],
    `report in ${out}`,
  );
  await Deno.remove(out, { recursive: true });
});
