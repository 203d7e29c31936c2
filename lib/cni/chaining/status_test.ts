import assert from "node:assert/strict";
import { join } from "node:path";
import { FLANNEL } from "./_fixtures.ts";
import { chainStatus } from "./status.ts";

async function dirWith(files: Record<string, string>) {
  const dir = await Deno.makeTempDir({ prefix: "lace-status-" });
  for (const [n, t] of Object.entries(files)) await Deno.writeTextFile(join(dir, n), t);
  return dir;
}

const chained = (by?: string) => {
  const list = JSON.parse(FLANNEL);
  list.plugins.push({ type: "lace", ...(by ? { chainedBy: by } : {}) });
  return JSON.stringify(list);
};

const CASES: [string, Record<string, string>, string, string[]][] = [
  ["chained by the agent", { "10-f.conflist": chained("lace-agent") }, "chained", [
    "10-f.conflist",
  ]],
  ["chained by hand", { "10-f.conflist": chained() }, "hand-chained", ["10-f.conflist"]],
  ["not chained", { "10-f.conflist": FLANNEL }, "not-chained", []],
  ["unusable to the runtime", { "10-f.conflist": "{" }, "unusable", []],
  [
    "whose runtime file Lace cannot chain",
    { "10-f.conflist": `{"name":"n","plugins":[{"type":"x"}]}`, "20-g.conflist": FLANNEL },
    "unparsable",
    [],
  ],
  [
    "whose first file the runtime skips",
    { "05-f.conflist": "{", "10-f.conflist": chained("lace-agent") },
    "chained",
    ["10-f.conflist"],
  ],
  ["empty", {}, "no-config", []],
  [
    "a later file naming lace",
    { "10-f.conflist": FLANNEL, "20-g.conflist": chained() },
    "not-chained",
    [
      "20-g.conflist",
    ],
  ],
];

for (const [what, files, state, naming] of CASES) {
  Deno.test(`chainStatus of a directory ${what} says ${state}`, async () => {
    const dir = await dirWith(files);
    try {
      const s = chainStatus(dir);
      assert.equal(s.state, state);
      assert.deepStrictEqual(s.naming, naming);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("chainStatus of a missing directory says unreadable", () => {
  assert.equal(chainStatus("/nonexistent/lace-test").state, "unreadable");
});

Deno.test("chainStatus names a configuration directory others may write, a symlinked runtime file and a refused state record", async () => {
  const root = await Deno.makeTempDir({ prefix: "lace-status-" });
  try {
    const dir = join(root, "net.d");
    const state = join(root, "state");
    await Deno.mkdir(dir);
    await Deno.mkdir(state, { mode: 0o700 });
    await Deno.writeTextFile(join(root, "flannel.conflist"), FLANNEL);
    await Deno.symlink(join(root, "flannel.conflist"), join(dir, "10-f.conflist"));
    await Deno.writeTextFile(
      join(state, "chained.json"),
      JSON.stringify({ version: 1, records: [{ dir, file: "../x.conflist" }] }),
      { mode: 0o600 },
    );
    const clean = chainStatus(dir);
    assert.equal(clean.state, "not-chained", "read through the link, as the runtime reads it");
    assert.equal(clean.problems.length, 1);
    assert.match(
      clean.problems[0],
      /10-f\.conflist, the configuration the runtime uses, is a symbolic link to ".*flannel\.conflist": the agent does not chain it/,
    );
    await Deno.chmod(dir, 0o777);
    const s = chainStatus(dir, state);
    assert.equal(s.problems.length, 3);
    assert.match(
      s.problems[0],
      /directory ".*net\.d" is writable by group or others \(mode 0777\)/,
    );
    assert.match(s.problems[1], /Refused record 1 of ".*chained\.json": it lacks originalName/);
    assert.match(s.problems[2], /is a symbolic link/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("chainStatus by containerd's rule: a broken first file means no configuration at all", async () => {
  const dir = await dirWith({ "05-f.conflist": "{", "10-f.conflist": chained("lace-agent") });
  try {
    const s = chainStatus(dir, undefined, "containerd");
    assert.equal(s.state, "unusable");
    assert.match(
      s.message,
      /^containerd loads only the first file, "05-f\.conflist", and fails on it/,
    );
    const crio = chainStatus(dir, undefined, "crio");
    assert.equal(crio.state, "chained");
    assert.match(
      crio.message,
      /^CRI-O skips "05-f\.conflist" \(not JSON: .*\); .*10-f\.conflist chains/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
