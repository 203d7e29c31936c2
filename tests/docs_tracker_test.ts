/**
 * No page, no file of deploy/ and no source (comments, test names and strings alike) names a
 * tracker issue or finding: the code and the pages cannot resolve one, and the history belongs in
 * commit messages.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { BUILD_OUTPUTS, REPO } from "./helpers/docs_pages.ts";

/**
 * A tracker reference: the code and the pages cannot resolve it, and the history belongs in
 * commit messages (STYLE.md, "Comments that age well").
 */
export const TRACKER_REFERENCE = /\b[Ii]ssues? #?\d+|\b[Ff]inding \d+|(?<![\w/.#&-])#\d{2,}\b/;

/**
 * What may name no tracker reference: the pages, deploy/, and every source of the product, its
 * tests, benchmarks, scripts and BPF program (comments, test names and strings alike).
 */
const TRACKER_CHECKED = [
  "README.md",
  "docs",
  "deploy",
  "main.ts",
  "lib",
  "tests",
  "bench",
  "scripts",
  "bpf",
  ".ci",
  ".github",
];
/**
 * The benchmarks' output and the mutation summary scripts/mutate.ts generates. The benchmarks'
 * journal (bench/RESULTS.md) is checked: it keeps runs and machines, but no tracker's numbers.
 */
const TRACKER_UNCHECKED = new Set(["bench/results.json", "docs/mutation.md"]);

/** Every text file under TRACKER_CHECKED but build outputs and dependencies (.gitignore). */
export function trackerCheckedFiles(root = REPO): { path: string; text: string }[] {
  const files: { path: string; text: string }[] = [];
  const generated = (path: string) => BUILD_OUTPUTS.some((o) => path === o || path.startsWith(o));
  const visit = (path: string) => {
    if (TRACKER_UNCHECKED.has(path)) return;
    const info = Deno.lstatSync(join(root, path));
    if (info.isDirectory) {
      if (generated(`${path}/`)) return;
      for (const e of Deno.readDirSync(join(root, path))) visit(`${path}/${e.name}`);
    } else if (info.isFile && !generated(path)) {
      const text = Deno.readTextFileSync(join(root, path));
      if (!text.includes("\0")) files.push({ path, text }); // a BPF object is no source
    }
  };
  for (const path of TRACKER_CHECKED) if (existsSync(join(root, path))) visit(path);
  return files;
}

Deno.test("the README, docs, deploy/ and the sources name no tracker issues or findings", () => {
  const files = trackerCheckedFiles();
  const paths = new Set(files.map((f) => f.path));
  for (
    const path of [
      "README.md",
      "main.ts",
      "bpf/lace.bpf.c",
      "scripts/dev",
      "tests/docs_tracker_test.ts",
    ]
  ) {
    assert.ok(paths.has(path), `${path} is not read`);
  }
  // Fewer means the walk lost a folder.
  assert.ok(files.filter((f) => f.path.startsWith("lib/")).length >= 300, "lib/ is not read");
  assert.ok(files.filter((f) => f.path.startsWith("tests/")).length >= 150, "tests/ is not read");
  assert.ok(!paths.has("lib/kube/client_node.bundle.js"), "a build output is read");
  const found = files.flatMap(({ path, text }) =>
    text.split("\n").flatMap((line, i) =>
      TRACKER_REFERENCE.test(line) ? [`${path}:${i + 1}: ${line.trim()}`] : []
    )
  );
  assert.deepEqual(found, []);
});

Deno.test("TRACKER_REFERENCE finds issue and finding numbers, not colours, ports or entities", () => {
  // Written in pieces, so that this file does not name what it looks for.
  const planted = (...pieces: string[]) => pieces.join("");
  for (
    const line of [
      planted("(issue ", "24, finding ", "1)"),
      planted("Issues ", "8, 16 and 28"),
      planted("see #", "123"),
      planted("// finding ", "3: x"),
      planted('Deno.test("refuses it (issue ', '9)"'),
    ]
  ) {
    assert.ok(TRACKER_REFERENCE.test(line), line);
  }
  for (
    const line of ["color: #fff", "port 9808", "a/#12 anchor", "x.md#the-dev-node", "&#60;x&#62;"]
  ) {
    assert.ok(!TRACKER_REFERENCE.test(line), line);
  }
});
