/**
 * `lace --help`, `lace help COMMAND` and every command's -h and --help: the usage and flags an
 * operator reads, on stdout, with exit code 0.
 */
import assert from "node:assert/strict";
import { COMMANDS, lace } from "./helpers/lace_cli.ts";

Deno.test("lace --help lists every command and exits 0", async () => {
  const r = await lace(["--help"]);
  assert.equal(r.code, 0);
  for (const c of COMMANDS) assert.match(r.stdout, new RegExp(`^  ${c} `, "m"), c);
  assert.doesNotMatch(r.stdout, /__prober|__pod-server/);
});

for (const command of COMMANDS) {
  Deno.test(`lace ${command} -h and --help print its usage and flags and exit 0`, async () => {
    for (const flag of ["-h", "--help"]) {
      const r = await lace([command, flag]);
      assert.equal(r.code, 0, r.stderr);
      // kubectl's plugin says how kubectl runs it.
      const usage = command === "kubectl" ? "kubectl lace" : `lace ${command}`;
      assert.match(r.stdout, new RegExp(`^Usage: ${usage}`), flag);
      assert.match(r.stdout, /^ {2}-h, --help {2,}Show this help$/m, flag);
      assert.equal(r.stderr, "", flag);
    }
  });
}

Deno.test("lace help COMMAND and a subcommand's -h print the command's help", async () => {
  const help = await lace(["help", "doctor"]);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage: lace doctor/);
  assert.match(help.stdout, /^Commands:\n {2}probes {2,}\S/m);
  for (const args of [["doctor", "probes", "-h"], ["doctor", "pod", "default/web", "--help"]]) {
    const r = await lace(args);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, help.stdout, args.join(" "));
  }
});
