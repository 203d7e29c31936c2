import assert from "node:assert/strict";
import { moduleCommand, selfCommand, underDeno } from "./self_command.ts";

Deno.test({
  name: "selfCommand() under deno runs main.ts with the hidden subcommand",
  ignore: !underDeno(),
  fn() {
    const cmd = selfCommand("__prober", ["--x"]);
    assert.equal(cmd[0], Deno.execPath());
    assert.deepEqual(cmd.slice(1, 3), ["run", "-A"]);
    assert.match(cmd[3], /^\/.*\/main\.ts$/);
    assert.deepEqual(cmd.slice(4), ["__prober", "--x"]);
  },
});

Deno.test({
  name: "moduleCommand() under deno runs the module file itself",
  ignore: !underDeno(),
  fn() {
    const cmd = moduleCommand("file:///repo/lib/doctor/prober.ts", "__prober", ["a"]);
    assert.deepEqual(cmd, [Deno.execPath(), "run", "-A", "/repo/lib/doctor/prober.ts", "a"]);
  },
});
