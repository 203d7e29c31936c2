/** parseFlags() and the environment: which variable is read, and when a flag wins. */
import assert from "node:assert/strict";
import { defaultConfig } from "../config.ts";
import { parseFlags } from "./parser.ts";
import { parse, shortToy, toy } from "./_parser_fixture.ts";

Deno.test("parseFlags() prefers a flag over the environment over the config's default", () => {
  const env = { LACE_PIN_PATH: "/sys/fs/bpf/from-env", LACE_MARK_SHIFT: "12" };
  const fromEnv = parse([], env);
  assert.equal(fromEnv.pinPath, "/sys/fs/bpf/from-env");
  assert.equal(fromEnv.markShift, 12);
  assert.equal(parse(["--pin-path", "/sys/fs/bpf/flag"], env).pinPath, "/sys/fs/bpf/flag");
  assert.equal(parse([]).pinPath, defaultConfig().pinPath);
});

Deno.test("parseFlags() reads no variable whose flag is given, so a bad one is not reported", () => {
  assert.equal(parse(["--mark-shift", "12"], { LACE_MARK_SHIFT: "twelve" }).markShift, 12);
});

Deno.test("parseFlags() reads NODE_NAME when LACE_NODE_NAME is not set", () => {
  assert.equal(parse([], { NODE_NAME: "n1" }).nodeName, "n1");
  assert.equal(parse([], { NODE_NAME: "n1", LACE_NODE_NAME: "n2" }).nodeName, "n2");
});

Deno.test("parseFlags() ignores an empty variable and takes the first variable set", () => {
  assert.equal(parseFlags(toy, [], { TOY_NAME: "", NAME: "b" }).options.name, "b");
  assert.equal(parseFlags(toy, [], { TOY_NAME: "a", NAME: "b" }).options.name, "a");
  assert.equal(parseFlags(toy, [], { TOY_ON: "yes" }).options.on, true);
});

Deno.test("parseFlags() lets a flag given beat a variable that sets the same option through another flag", () => {
  assert.equal(parseFlags(shortToy, ["-o", "text"], { TOY_JSON: "1" }).options.output, "text");
  assert.equal(parseFlags(shortToy, ["--json"], { TOY_OUTPUT: "text" }).options.output, "json");
  assert.equal(parseFlags(shortToy, [], { TOY_JSON: "1" }).options.output, "json");
});
