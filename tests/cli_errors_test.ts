/**
 * Bad input and failures as an operator meets them: one line naming what failed and what to do
 * (exit code 2 for a bad command line), the causes below it, never a stack trace.
 */
import assert from "node:assert/strict";
import { uninstall } from "../lib/datapath/pins.ts";
import { agentFailingOnPodsDir, COMMANDS, lace } from "./helpers/lace_cli.ts";
import { testPinPath } from "./helpers/sim_world.ts";
import { needsRoot, skipIf } from "./helpers/skip.ts";

for (const command of COMMANDS) {
  Deno.test(`lace ${command} refuses an unknown flag with one line and exit code 2`, async () => {
    const r = await lace([command, "--no-such-flag"]);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(
      r.stderr,
      `lace ${command}: unknown flag --no-such-flag: see lace ${command} --help\n`,
    );
  });
}

Deno.test("lace without a command prints usage and exits 2; an unknown command exits 2", async () => {
  const bare = await lace([]);
  assert.equal(bare.code, 2);
  assert.match(bare.stderr, /^Usage: lace <command> \[flags\]/m);
  const r = await lace(["frobnicate"]);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, 'lace: unknown command "frobnicate": run lace --help for the commands\n');
  const flag = await lace(["--frobnicate"]);
  assert.equal(flag.code, 2);
  assert.equal(
    flag.stderr,
    'lace: unknown flag "--frobnicate": run lace --help for the commands\n',
  );
});

Deno.test("lace targets falls back to the pinned map and says clearly when there is none", async () => {
  const r = await lace([
    "targets",
    "--agent-socket=/nonexistent/lace/agent.sock",
    "--pin-path=/nonexistent/lace",
  ]);
  assert.equal(r.code, 1);
  // The first line says what is missing and why; the lines below it are its causes.
  const [first, ...causes] = r.stderr.trim().split("\n");
  assert.match(
    first,
    /^lace targets: No pinned map at "\/nonexistent\/lace\/probe_targets": the agent has not run/,
  );
  assert(causes.every((line) => line.startsWith("caused by: ")), r.stderr);
  assert.doesNotMatch(r.stderr, /\bat .*\.ts:\d+/, "no stack trace");
});

Deno.test({
  name: "lace agent prints the whole cause chain, so the --pods-dir hint reaches stderr",
  // The datapath opens (pins under bpffs) before the pods directory is read.
  ignore: skipIf(needsRoot("bpffs pins")),
  async fn() {
    const pinPath = testPinPath();
    try {
      const r = await lace(agentFailingOnPodsDir(pinPath));
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^lace agent: Agent could not start$/m);
      assert.match(r.stderr, /^caused by: Pod source "dir" failed to start$/m);
      assert.match(
        r.stderr,
        /^caused by: Cannot read the pods directory "\/nonexistent\/pods": create it or fix --pods-dir$/m,
      );
      assert.doesNotMatch(r.stderr, /\bat .*\.ts:\d+/, "no stack trace");
    } finally {
      uninstall(pinPath);
    }
  },
});
