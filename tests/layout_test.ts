/**
 * The product never depends on test support: no file under lib/ (other than a
 * unit test or a fixture beside the unit tests, `_*.ts`) and not main.ts imports
 * from tests/, from a path with a `sim` folder or from such a fixture. Unit tests
 * may import fixtures from tests/; a fixture beside them may not (one that needs
 * tests/ belongs there, STYLE.md). And imports run downhill
 * between lib/'s folders (STYLE.md): the commands on top, the agent's loop under
 * them, the parts under it.
 */
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Every module specifier in a source text: static imports, re-exports and dynamic imports. */
export function importSpecifiers(source: string): string[] {
  const pattern =
    /(?:^|[\s;}])(?:import|export)\s[^"'`;]*?\sfrom\s*["']([^"']+)["']|(?:^|[\s;])import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm;
  return [...source.matchAll(pattern)].map((m) => m[1] ?? m[2] ?? m[3]);
}

/** True when a resolved path (relative to the repository) is under tests/ or a sim folder. */
function isTestsOrSim(path: string): boolean {
  return path.startsWith("tests/") || /(^|\/)sim\//.test(path);
}

/** True when a resolved path (relative to the repository) is test support. */
function isTestSupport(path: string): boolean {
  return isTestsOrSim(path) || (path.startsWith("lib/") && /(^|\/)_[^/]*\.ts$/.test(path));
}

function* productFiles(dir: string): Generator<string> {
  for (const entry of Deno.readDirSync(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* productFiles(path);
    else if (
      entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts") && !entry.name.startsWith("_")
    ) yield path;
  }
}

/** The fixtures beside lib/'s unit tests (`_*.ts`). */
function* libFixtures(dir: string): Generator<string> {
  for (const entry of Deno.readDirSync(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* libFixtures(path);
    else if (entry.name.startsWith("_") && entry.name.endsWith(".ts")) yield path;
  }
}

Deno.test("importSpecifiers() finds static, type-only, re-exported and dynamic imports", () => {
  const source = [
    `import assert from "node:assert/strict";`,
    `import type { X } from "../../tests/helpers/x.ts";`,
    `import {\n  a,\n  b,\n} from "./multi.ts";`,
    `export { y } from "./sim/y.ts";`,
    `const m = await import("../tests/z.ts");`,
    `import "./side_effect.ts";`,
  ].join("\n");
  assert.deepEqual(importSpecifiers(source), [
    "node:assert/strict",
    "../../tests/helpers/x.ts",
    "./multi.ts",
    "./sim/y.ts",
    "../tests/z.ts",
    "./side_effect.ts",
  ]);
});

Deno.test("no product file under lib/ or main.ts imports from tests/, a sim folder or a lib/ fixture", () => {
  const files = [join(ROOT, "main.ts"), ...productFiles(join(ROOT, "lib"))];
  let relativeImports = 0;
  const offenders: string[] = [];
  for (const file of files) {
    for (const spec of importSpecifiers(Deno.readTextFileSync(file))) {
      if (!spec.startsWith(".")) continue;
      relativeImports++;
      const target = relative(ROOT, resolve(dirname(file), spec));
      if (isTestSupport(target)) offenders.push(`${relative(ROOT, file)} imports ${spec}`);
    }
  }
  // The scan must have seen the tree's imports, or it proves nothing.
  assert(
    relativeImports > files.length,
    `only ${relativeImports} imports in ${files.length} files`,
  );
  assert.deepEqual(offenders, []);
});

Deno.test("no fixture beside lib/'s unit tests imports from tests/ or a sim folder", () => {
  const fixtures = [...libFixtures(join(ROOT, "lib"))];
  assert(fixtures.length >= 5, `only ${fixtures.length} fixtures found under lib/`);
  const offenders: string[] = [];
  for (const file of fixtures) {
    for (const spec of importSpecifiers(Deno.readTextFileSync(file))) {
      if (spec.startsWith(".") && isTestsOrSim(relative(ROOT, resolve(dirname(file), spec)))) {
        offenders.push(`${relative(ROOT, file)} imports ${spec}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

/** The specifiers of a source's value imports (not `import type`, not inline `type` names only). */
function valueImportSpecifiers(source: string): string[] {
  const pattern =
    /(?:^|[\s;}])(import|export)(\s+type)?\s([^"'`;]*?)\sfrom\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm;
  const out: string[] = [];
  for (const m of source.matchAll(pattern)) {
    if (m[5]) {
      out.push(m[5]);
      continue;
    }
    if (m[2]) continue;
    // `import { type A, type B } from ...` brings no value either.
    const names = m[3].replace(/^\{|\}$/g, "").split(",").map((n) => n.trim()).filter(Boolean);
    if (names.length > 0 && names.every((n) => n.startsWith("type "))) continue;
    out.push(m[4]);
  }
  return out;
}

Deno.test("valueImportSpecifiers() leaves out type-only imports", () => {
  const source = [
    `import type * as k8s from "@kubernetes/client-node";`,
    `import { type A, type B } from "pkg-a";`,
    `import { type C, D } from "pkg-b";`,
    `export { E } from "pkg-c";`,
    `const m = await import("pkg-d");`,
  ].join("\n");
  assert.deepEqual(valueImportSpecifiers(source), ["pkg-b", "pkg-c", "pkg-d"]);
});

Deno.test("only lib/kube/client_node.ts imports client-node's values: one copy of the client", () => {
  const offenders: string[] = [];
  let seen = 0;
  for (const file of productFiles(join(ROOT, "lib"))) {
    const path = relative(ROOT, file);
    for (const spec of valueImportSpecifiers(Deno.readTextFileSync(file))) {
      if (!spec.startsWith("@kubernetes/client-node")) continue;
      seen++;
      if (path !== "lib/kube/client_node.ts") offenders.push(`${path} imports ${spec}`);
    }
  }
  assert(seen > 0, "client_node.ts's imports were not found: the scan proves nothing");
  assert.deepEqual(offenders, []);
});

/**
 * The floors of lib/ (STYLE.md, "Imports run downhill"): a file imports only its own floor and
 * those below. lib/'s own files and the parts (rules, datapath, cgroup, pods, kube, cni) share
 * the ground floor, whose arrows this does not order.
 */
const FLOORS: Record<string, number> = { agent: 1, doctor: 2, demo: 2, netcheck: 2, cli: 3 };

/**
 * Uphill arrows that were there before this check, STYLE.md's own examples (what doctor/, demo/
 * and netcheck/ take from cli/ belongs in a lower shared module): fix one when you next touch
 * its file and take it off the list. Nothing may join it.
 */
const KNOWN_UPHILL = new Set([
  "lib/demo/command.ts imports lib/cli/flags.ts",
  "lib/doctor/command.ts imports lib/cli/agent_flags.ts",
  "lib/doctor/command.ts imports lib/cli/flags.ts",
  "lib/netcheck/flags.ts imports lib/cli/flags.ts",
  "lib/netcheck/flags.ts imports lib/cli/log_flags.ts",
  "lib/netcheck/main.ts imports lib/cli/flags.ts",
]);

/** The floor of a path relative to the repository (lib/...): 0 unless FLOORS names its folder. */
function floorOf(path: string): number {
  return FLOORS[path.split("/")[1]] ?? 0;
}

/** Every arrow from a product file under lib/ to a file on a higher floor, type imports too. */
function uphillImports(): { arrows: string[]; seen: number } {
  const arrows: string[] = [];
  let seen = 0;
  for (const file of productFiles(join(ROOT, "lib"))) {
    const from = relative(ROOT, file);
    for (const spec of importSpecifiers(Deno.readTextFileSync(file))) {
      if (!spec.startsWith(".")) continue;
      const to = relative(ROOT, resolve(dirname(file), spec));
      if (!to.startsWith("lib/")) continue;
      seen++;
      if (floorOf(to) > floorOf(from)) arrows.push(`${from} imports ${to}`);
    }
  }
  return { arrows, seen };
}

Deno.test("imports run downhill: no part imports the agent's loop or a command, type-only imports too", () => {
  const { arrows, seen } = uphillImports();
  assert(seen > 100, `only ${seen} imports between lib/'s files: the scan proves nothing`);
  assert.deepEqual(arrows.filter((a) => !KNOWN_UPHILL.has(a)), []);
  // A fixed arrow left on the list would let it come back unnoticed.
  assert.deepEqual([...KNOWN_UPHILL].filter((a) => !arrows.includes(a)), []);
});
