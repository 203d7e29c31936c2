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
  const fixes: [ChainState, RegExp][] = [
    ["not-chained", /^run the agent with --cni-chaining=auto/],
    ["unparsable", /^the runtime uses this file but Lace cannot chain it/],
    ["unusable", /^fix or remove the file the message names/],
    ["no-config", /^install the pod network plugin/],
    ["unreadable", /^check --cni-conf-dir/],
  ];
  for (const [state, fix] of fixes) {
    const [c] = cniChecks(snap(state));
    assert.equal(c.ok, false);
    assert.equal(c.severity, "warning");
    assert.equal(c.message, state, "the chaining status's own words");
    assert.match(c.fix, fix, state);
  }
});

Deno.test("cniChecks passes cni-files when no directory, file or record is refused", () => {
  const [, files] = cniChecks(snap("chained"));
  assert.deepStrictEqual([files.name, files.ok], ["cni-files", true]);
});

Deno.test("cniChecks fails cni-files with every problem the agent refuses to write through", () => {
  const s = snap("chained");
  s.cniChaining!.problems = ["the directory is writable by others", "a record names ../x"];
  const [, files] = cniChecks(s);
  assert.equal(files.ok, false);
  assert.equal(files.severity, "error");
  assert.equal(files.message, "the directory is writable by others; a record names ../x");
  assert.match(files.fix, /root's and writable by no one else/);
});

Deno.test("cniChecks says nothing when the doctor did not look", () => {
  assert.deepStrictEqual(cniChecks({} as NodeSnapshot), []);
});

Deno.test("cniChecks names the problems of the agent's last chaining pass", () => {
  const s = {
    agent: {
      chaining: {
        mode: "auto",
        dir: "/etc/cni/net.d",
        chained: [],
        problems: [{
          file: "10-flannel.conflist",
          reason: "failed",
          message: 'Chaining the lace plugin into "10-flannel.conflist" failed: EPERM; retrying',
        }],
      },
    },
  } as unknown as NodeSnapshot;
  const [c] = cniChecks(s);
  assert.equal(c.name, "cni-chaining-agent");
  assert.equal(c.ok, false);
  assert.match(
    c.message,
    /failed: Chaining the lace plugin into "10-flannel\.conflist" failed: EPERM/,
  );
});

Deno.test("cniChecks passes the agent's chaining when its last pass found nothing wrong", () => {
  const s = {
    agent: { chaining: { mode: "auto", dir: "/d", chained: ["a.conflist"], problems: [] } },
  } as unknown as NodeSnapshot;
  assert.deepStrictEqual(cniChecks(s).map((c) => [c.name, c.ok]), [["cni-chaining-agent", true]]);
});

Deno.test("cniChecks fails cni-plugin as an error while a configuration names the missing plugin, a warning before", () => {
  const problem = 'The lace plugin "/opt/cni/bin/lace" is missing: install it';
  const plugin = (naming: string[], p: string | undefined) => {
    const s = snap(naming.length ? "chained" : "not-chained");
    return cniChecks({
      ...s,
      cniChaining: { ...s.cniChaining!, naming },
      cniPlugin: { dir: "/opt/cni/bin", problem: p },
    }).find((c) => c.name === "cni-plugin")!;
  };
  const chained = plugin(["10-flannel.conflist"], problem);
  assert.deepStrictEqual([chained.ok, chained.severity], [false, "error"]);
  assert.match(
    chained.message,
    /is missing: install it; 10-flannel\.conflist name it, so every new pod's network setup on this node fails$/,
  );
  assert.match(chained.fix, /install-cni init container/);
  const before = plugin([], problem);
  assert.deepStrictEqual([before.ok, before.severity], [false, "warning"]);
  assert.match(before.message, /the agent chains nothing until it is there$/);
  assert.equal(plugin(["10-flannel.conflist"], undefined).ok, true);
});
