/**
 * parseFlags(): flags and their values, help, positionals, and the one-line usage errors of each
 * mistake.
 */
import assert from "node:assert/strict";
import { defaultConfig } from "../config.ts";
import { boolean, type CommandSpec, parseFlags, UsageError } from "./parser.ts";
import { agentCommand } from "./agent.ts";
import { parse, shortToy, toy } from "./_parser_fixture.ts";

Deno.test("parseFlags() says in one line how to give a value that starts with a dash", () => {
  assert.throws(
    () => parse(["--pin-path", "-x"]),
    (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.equal(
        e.message,
        "flag --pin-path needs a value (one that starts with a dash is given as " +
          "--pin-path=-VALUE): see lace agent --help",
      );
      return true;
    },
  );
  assert.equal(parse(["--pin-path=-x"]).pinPath, "-x");
});

Deno.test("parseFlags() with no flags and no environment gives exactly the default Config", () => {
  assert.deepEqual(parse([]), defaultConfig());
});

Deno.test("parseFlags() converts marks, durations and booleans into typed Config values", () => {
  const c = parse(
    ["--probe-mark=0x2000", "--debounce", "20ms", "--no-kube-api", "--log-level=debug"],
    { LACE_RESYNC_INTERVAL: "30s" },
  );
  assert.equal(c.probeMark, 0x2000);
  assert.equal(c.debounceMs, 20);
  assert.equal(c.resyncMs, 30_000);
  assert.equal(c.useApi, false);
  assert.equal(c.logLevel, "debug");
  assert.equal(parse([], { LACE_KUBE_API: "false" }).useApi, false);
});

Deno.test("parseFlags() gives one-line UsageErrors for a bad flag or value", () => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [["--nope"], {}, /^unknown flag --nope: see lace agent --help$/],
    [["--mark-shift", "x"], {}, /^--mark-shift must be a whole number: "x"$/],
    [["--probe-mark", "0xzz"], {}, /--probe-mark must be a decimal or 0x hex number/],
    [["--log-level", "loud"], {}, /--log-level must be one of trace, debug/],
    [[], { LACE_DEBOUNCE: "soon" }, /^LACE_DEBOUNCE must be a duration such as 500ms/],
    [[], { LACE_KUBE_API: "maybe" }, /LACE_KUBE_API must be true or false/],
    [["stray"], {}, /^unexpected argument "stray": see lace agent --help$/],
  ];
  for (const [args, env, re] of cases) {
    assert.throws(() => parse(args, env), (e: Error) => {
      assert.ok(e instanceof UsageError, `${args} gives a UsageError`);
      assert.match(e.message, re);
      assert.ok(!e.message.includes("\n"), "one line");
      return true;
    });
  }
});

Deno.test("parseFlags() reports every bad value at once, one line each", () => {
  assert.throws(
    () => parse(["--mark-shift=x", "--debounce=soon"], { LACE_PROBE_MARK: "0xzz" }),
    (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.deepEqual(e.message.split("\n").map((l) => l.split(" ")[0]), [
        "LACE_PROBE_MARK",
        "--mark-shift",
        "--debounce",
      ]);
      return true;
    },
  );
});

Deno.test("parseFlags() says whether help was asked and refuses positionals unless allowed", () => {
  assert.equal(parseFlags(toy, ["--help"], {}).help, true);
  assert.equal(parseFlags(toy, [], {}).help, false);
  assert.throws(
    () => parseFlags(toy, ["x"], {}),
    new UsageError(`unexpected argument "x": see lace toy --help`),
  );
  assert.deepEqual(parseFlags({ ...toy, positionals: true }, ["x", "y"], {}).positionals, [
    "x",
    "y",
  ]);
});

Deno.test("parseFlags() reports a flag without its value in one line naming the command", () => {
  assert.throws(
    () => parseFlags(toy, ["--count"], {}),
    new UsageError("flag --count needs a value: see lace toy --help"),
  );
});

Deno.test("parseFlags() reports an unknown flag without node's advice on positionals", () => {
  assert.throws(
    () => parseFlags(toy, ["--a.b"], {}),
    new UsageError("unknown flag --a.b: see lace toy --help"),
  );
});

Deno.test("UsageError is named so", () => {
  assert.equal(new UsageError("x").name, "UsageError");
});

Deno.test("parseFlags() names the command whose help to read in its usage errors", () => {
  assert.throws(
    () => parse(["--nope"]),
    new UsageError("unknown flag --nope: see lace agent --help"),
  );
  assert.throws(
    () => parse(["-x"]),
    new UsageError("unknown flag -x: see lace agent --help"),
  );
  assert.throws(
    () => parse(["--help=yes"]),
    new UsageError("flag --help takes no value: see lace agent --help"),
  );
});

Deno.test("parseFlags() takes -h as --help, for every command", () => {
  assert.equal(parseFlags(toy, ["-h"], {}).help, true);
  assert.equal(parseFlags(agentCommand, ["--pin-path=/x", "-h"], {}).help, true);
});

Deno.test("parseFlags() reads a flag's one-letter form, its value attached or not", () => {
  assert.equal(parseFlags(shortToy, ["-o", "json"], {}).options.output, "json");
  assert.equal(parseFlags(shortToy, ["-ojson"], {}).options.output, "json");
  assert.throws(
    () => parseFlags(shortToy, ["-o", "yaml"], {}),
    new UsageError('--output must be one of text, json: "yaml"'),
  );
});

Deno.test("parseFlags() refuses two flags given for the same option", () => {
  assert.throws(
    () => parseFlags(shortToy, ["--json", "-o", "text"], {}),
    new UsageError("--output and --json both set the same option: give one"),
  );
});

Deno.test("a boolean flag named no-x is refused when parsing: parseArgs could never set it", () => {
  const spec: CommandSpec<{ quiet: boolean }> = {
    name: "x",
    summary: "",
    usage: "lace x",
    flags: [{ name: "no-quiet", key: "quiet", value: boolean, help: "" }],
    defaults: () => ({ quiet: false }),
  };
  assert.throws(() => parseFlags(spec, [], {}), /--no-quiet without "no-"/);
});
