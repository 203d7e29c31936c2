import assert from "node:assert/strict";
import { moduleCommand, selfCommand, selfPluginCommand, underDeno } from "./self_command.ts";
import { skipIf } from "../../tests/helpers/skip.ts";

const notDeno = underDeno() ? undefined : `run by ${Deno.execPath()}, not deno`;

Deno.test({
  name: "selfCommand() under deno runs main.ts with the hidden subcommand",
  ignore: skipIf(notDeno),
  fn() {
    const cmd = selfCommand("__prober", ["--x"]);
    assert.equal(cmd[0], Deno.execPath());
    assert.deepEqual(cmd.slice(1, 3), ["run", "-A"]);
    assert.match(cmd[3], /^\/.*\/main\.ts$/);
    assert.ok(Deno.statSync(cmd[3]).isFile, `${cmd[3]} is the entry point`);
    assert.deepEqual(cmd.slice(4), ["__prober", "--x"]);
  },
});

Deno.test({
  name: "moduleCommand() under deno runs the module file itself",
  ignore: skipIf(notDeno),
  fn() {
    const cmd = moduleCommand("file:///repo/lib/prober/mod.ts", "__prober", ["a"]);
    assert.deepEqual(cmd, [Deno.execPath(), "run", "-A", "/repo/lib/prober/mod.ts", "a"]);
  },
});

Deno.test({
  name: "selfPluginCommand() under deno runs main.ts itself, quietly, with no subcommand",
  ignore: skipIf(notDeno),
  fn() {
    const cmd = selfPluginCommand();
    assert.deepEqual(cmd.slice(0, 4), [Deno.execPath(), "run", "-A", "--quiet"]);
    assert.equal(cmd.length, 5);
    assert.ok(Deno.statSync(cmd[4]).isFile, `${cmd[4]} is the entry point`);
    assert.match(cmd[4], /\/main\.ts$/);
  },
});
