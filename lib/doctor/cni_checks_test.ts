import assert from "node:assert/strict";
import type { NodeSnapshot } from "./check.ts";
import { cniChecks } from "./cni_checks.ts";
import type { ChainState } from "../cni/chaining/status.ts";

const snap = (state: ChainState) =>
  ({
    cniChaining: { dir: "/etc/cni/net.d", state, naming: [], message: state },
  }) as unknown as NodeSnapshot;

Deno.test("cniChecks passes when the runtime's configuration chains lace, by the agent or by hand", () => {
  for (const state of ["chained", "hand-chained"] as const) {
    assert.equal(cniChecks(snap(state))[0].ok, true);
  }
});

Deno.test("cniChecks warns with a fix when the runtime's configuration does not chain lace", () => {
  for (const state of ["not-chained", "unparsable", "no-config", "unreadable"] as const) {
    const [c] = cniChecks(snap(state));
    assert.equal(c.ok, false);
    assert.equal(c.severity, "warning");
    assert.notEqual(c.fix, "");
  }
});

Deno.test("cniChecks says nothing when the doctor did not look", () => {
  assert.deepStrictEqual(cniChecks({} as NodeSnapshot), []);
});
