/** Colour in lace's text log: on a terminal only, and never with NO_COLOR. */
import assert from "node:assert/strict";
import { uninstall } from "../lib/datapath/pins.ts";
import { agentFailingOnPodsDir, lace, MAIN } from "./helpers/lace_cli.ts";
import { testPinPath } from "./helpers/sim_world.ts";
import { needsRoot, skipIf } from "./helpers/skip.ts";

/** `lace ARGS` on a terminal: a pty from util-linux's script(1), whose output is the terminal's. */
async function laceOnTerminal(args: string[], env: Record<string, string>) {
  const quote = (a: string) => `'${a.replaceAll("'", `'\\''`)}'`;
  const command = [Deno.execPath(), "run", "-A", MAIN, ...args].map(quote).join(" ");
  // The test's own NO_COLOR, if any, stays out: only `env` says.
  const { NO_COLOR: _, ...inherited } = Deno.env.toObject();
  const out = await new Deno.Command("script", {
    args: ["-qec", command, "/dev/null"],
    env: { ...inherited, ...env },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, output: new TextDecoder().decode(out.stdout) };
}

Deno.test({
  name: "lace agent's text log is coloured on a terminal only, and never with NO_COLOR",
  // The agent logs its datapath's start before the missing pods directory stops it.
  ignore: skipIf(needsRoot("bpffs pins")),
  async fn() {
    const pinPath = testPinPath();
    const args = agentFailingOnPodsDir(pinPath);
    const logged = /INF.*lace·datapath:.*Loaded BPF object/;
    try {
      const piped = await lace(args, { NO_COLOR: "" });
      assert.equal(piped.code, 1, piped.stderr);
      assert.match(piped.stderr, logged);
      assert.ok(!piped.stderr.includes("\x1b"), "no escape code when stderr is a pipe");
      const terminal = await laceOnTerminal(args, {});
      assert.equal(terminal.code, 1, terminal.output);
      assert.match(terminal.output, logged);
      assert.ok(terminal.output.includes("\x1b["), "colour on a terminal");
      const noColor = await laceOnTerminal(args, { NO_COLOR: "1" });
      assert.equal(noColor.code, 1, noColor.output);
      assert.match(noColor.output, logged);
      assert.ok(!noColor.output.includes("\x1b"), "no escape code with NO_COLOR");
    } finally {
      uninstall(pinPath);
    }
  },
});
