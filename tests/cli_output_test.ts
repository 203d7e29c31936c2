/**
 * What the commands that print data print: -o/--output text|json, --json as its alias and their
 * variables, and lace version's text and JSON.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { lace } from "./helpers/lace_cli.ts";

Deno.test("lace version prints the version from deno.json and, from source, git's commit", async () => {
  const { version } = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
  const r = await lace(["version", "--json"]);
  assert.equal(r.code, 0);
  const info = JSON.parse(r.stdout);
  assert.equal(info.version, version);
  const head = await new Deno.Command("git", {
    args: ["-C", fileURLToPath(new URL("..", import.meta.url)), "rev-parse", "HEAD"],
    stdout: "piped",
  }).output();
  assert.equal(info.commit, new TextDecoder().decode(head.stdout).trim());
  assert.match(info.commitDate, /^\d{4}-\d\d-\d\dT/);
  assert.equal(info.buildDate, "", "run from source, not built");
  const text = await lace(["version"]);
  assert.equal(
    text.stdout,
    `lace ${version} (commit ${info.commit.slice(0, 12)}${
      info.treeState === "dirty" ? "-dirty" : ""
    }, run from source, bpf abi ${info.bpfAbi}, deno ${Deno.version.deno})\n`,
  );
});

const PRINTING_DATA = ["targets", "doctor", "netcheck", "version", "demo"];

for (const command of PRINTING_DATA) {
  Deno.test(`lace ${command} takes -o/--output text|json, and --json as its alias`, async () => {
    const r = await lace([command, "--help"]);
    assert.match(
      r.stdout,
      /^ {2}-o, --output text\|json {2,}Output format \(default text; env LACE_OUTPUT\)$/m,
    );
    assert.match(r.stdout, /^ {6}--json {2,}Same as --output json \(env LACE_JSON\)$/m);
    const bad = await lace([command, "-o", "yaml"]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.equal(bad.stderr, `lace ${command}: --output must be one of text, json: "yaml"\n`);
    const both = await lace([command, "--json", "-o", "text"]);
    assert.equal(both.code, 2, both.stderr);
    assert.equal(
      both.stderr,
      `lace ${command}: --output and --json both set the same option: give one\n`,
    );
  });
}

Deno.test("lace version prints the same JSON with -o json, --output=json, --json and LACE_OUTPUT", async () => {
  const outputs = await Promise.all([
    lace(["version", "-o", "json"]),
    lace(["version", "--output=json"]),
    lace(["version", "--json"]),
    lace(["version"], { LACE_OUTPUT: "json" }),
    lace(["version", "-o", "json"], { LACE_JSON: "false" }),
  ]);
  for (const r of outputs) {
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), JSON.parse(outputs[0].stdout));
  }
  // The flag given beats the alias's variable.
  const text = await lace(["version", "-o", "text"], { LACE_JSON: "1" });
  assert.match(text.stdout, /^lace \d+\.\d+\.\d+ /);
});
