/**
 * The product never depends on test support: no file under lib/ (other than a
 * unit test or a fixture beside the unit tests, `_*.ts`) and not main.ts imports
 * from tests/, from a path with a `sim` folder or from such a fixture. Unit tests
 * may import fixtures from tests/; a fixture beside them may not (one that needs
 * tests/ belongs there, STYLE.md). And imports run downhill
 * between lib/'s rooms (STYLE.md): FLOORS puts each folder on a floor, from the
 * toolbox and the vocabulary at the bottom to the commands on top; no file
 * imports up or sideways, and no files import each other in a circle.
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

/** Every .ts file under `dir` (tests, fixtures and support too), without installed packages. */
function* allTsFiles(dir: string): Generator<string> {
  for (const entry of Deno.readDirSync(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory && entry.name !== "node_modules") yield* allTsFiles(path);
    else if (entry.isFile && entry.name.endsWith(".ts")) yield path;
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

/** An import from a product file under lib/ to another file under lib/, relative to the repository. */
export interface Arrow {
  from: string;
  to: string;
}

/** Every import between lib/'s files, from its product files (not tests or fixtures), type imports too. */
function libArrows(): Arrow[] {
  const arrows: Arrow[] = [];
  for (const file of productFiles(join(ROOT, "lib"))) {
    const from = relative(ROOT, file);
    for (const spec of importSpecifiers(Deno.readTextFileSync(file))) {
      if (!spec.startsWith(".")) continue;
      const to = relative(ROOT, resolve(dirname(file), spec));
      if (to.startsWith("lib/")) arrows.push({ from, to });
    }
  }
  return arrows;
}

/**
 * The floors of lib/ (STYLE.md, "Imports run downhill", "Vocabulary lives low"): each room (a
 * folder under lib/, or a file directly under it) on one floor. A file imports its own room and
 * rooms on lower floors only: rooms on one floor do not import each other. A new room needs a
 * floor here before its first file lands.
 */
export const FLOORS: Readonly<Record<string, number>> = {
  // The toolbox: no word of Lace's own.
  "lib/time": 0,
  "lib/os": 0,
  "lib/net": 0,
  "lib/libbpf": 0,
  "lib/version.ts": 0,
  // Text, and the probe target's words (key, value, mark, network name) over addresses.
  "lib/text": 1,
  "lib/probe": 1,
  "lib/log": 2,
  // The parts at the edges: sockets, the Kubernetes client, the BPF datapath, the kubelet-like
  // prober (the doctor's and the demo's).
  "lib/socket": 3,
  "lib/prober": 3,
  "lib/kube": 3,
  "lib/datapath": 3,
  // The pod model and sources, the CNI plugin and server, the cgroup follower (drives the datapath).
  "lib/pods": 4,
  "lib/cni": 4,
  "lib/cgroup": 4,
  // Pure: pod -> targets, conflicts, the node's desired map, the address-sharing policy.
  "lib/rules": 5,
  "lib/config.ts": 6,
  // What the agent's local socket answers, its client and its text: the agent writes it, the
  // commands read it. The flag tables every command parses with, the agent's too.
  "lib/agent_api": 7,
  "lib/flags": 7,
  // The agent's loop, the commands beside it, the command line on top.
  "lib/agent": 8,
  "lib/doctor": 9,
  "lib/netcheck": 9,
  "lib/demo": 9,
  "lib/cli": 10,
};

/** The room of a path under lib/: its folder under lib/, or the file itself when directly under it. */
export function roomOf(path: string): string {
  return path.split("/").slice(0, 2).join("/");
}

/** Each arrow into another room that is not on a lower floor, as "FROM imports TO". */
export function uphillArrows(
  arrows: readonly Arrow[],
  floors: Readonly<Record<string, number>>,
): string[] {
  return arrows.filter(({ from, to }) => {
    const a = roomOf(from), b = roomOf(to);
    return a !== b && !(floors[a] > floors[b]);
  }).map(({ from, to }) => `${from} imports ${to}`);
}

/** The circles among files (Tarjan's strongly connected components), each as its sorted files. */
export function importCircles(arrows: readonly Arrow[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of arrows) next.set(from, [...(next.get(from) ?? []), to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (next.get(v) ?? []).includes(v)) circles.push(component.sort());
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return circles;
}

Deno.test("uphillArrows() and importCircles() find a planted upward import and a planted circle", () => {
  const floors = { "lib/low": 0, "lib/high": 1, "lib/side": 1 };
  const arrows: Arrow[] = [
    { from: "lib/high/a.ts", to: "lib/low/b.ts" },
    { from: "lib/low/b.ts", to: "lib/low/c.ts" },
    { from: "lib/low/c.ts", to: "lib/high/a.ts" },
    { from: "lib/side/d.ts", to: "lib/high/a.ts" },
  ];
  assert.deepEqual(uphillArrows(arrows, floors), [
    "lib/low/c.ts imports lib/high/a.ts",
    "lib/side/d.ts imports lib/high/a.ts",
  ]);
  assert.deepEqual(importCircles(arrows), [["lib/high/a.ts", "lib/low/b.ts", "lib/low/c.ts"]]);
  assert.deepEqual(importCircles([{ from: "lib/low/b.ts", to: "lib/low/b.ts" }]), [[
    "lib/low/b.ts",
  ]]);
  assert.deepEqual(uphillArrows([{ from: "lib/new/e.ts", to: "lib/low/b.ts" }], floors), [
    "lib/new/e.ts imports lib/low/b.ts",
  ]);
});

Deno.test("every file under lib/ is in a room the floor table names", () => {
  const rooms = new Set([...productFiles(join(ROOT, "lib"))].map((f) => roomOf(relative(ROOT, f))));
  assert(rooms.size > 15, `only ${rooms.size} rooms under lib/: the scan proves nothing`);
  assert.deepEqual([...rooms].filter((r) => !(r in FLOORS)).sort(), []);
});

Deno.test("imports run downhill: no part imports the agent's loop or a command, type-only imports too", () => {
  const arrows = libArrows();
  assert(
    arrows.length > 500,
    `only ${arrows.length} imports between lib/'s files: the scan proves nothing`,
  );
  assert.deepEqual(uphillArrows(arrows, FLOORS), []);
});

Deno.test("no circle of imports between lib/'s files, type-only imports too", () => {
  assert.deepEqual(importCircles(libArrows()), []);
});

Deno.test("only lib/libbpf/mod.ts is imported from outside lib/libbpf/: its one public module", () => {
  const offenders: string[] = [];
  let seen = 0;
  const files = [
    ...productFiles(join(ROOT, "lib")),
    ...["lib", "tests", "bench", "scripts"].flatMap((d) => [...allTsFiles(join(ROOT, d))]),
  ];
  for (const file of new Set(files)) {
    const from = relative(ROOT, file);
    if (from.startsWith("lib/libbpf/")) continue;
    for (const spec of importSpecifiers(Deno.readTextFileSync(file))) {
      const to = relative(ROOT, resolve(dirname(file), spec));
      if (!spec.startsWith(".") || !to.startsWith("lib/libbpf/")) continue;
      seen++;
      if (to !== "lib/libbpf/mod.ts") offenders.push(`${from} imports ${to}`);
    }
  }
  assert(seen > 10, `only ${seen} imports of lib/libbpf/: the scan proves nothing`);
  assert.deepEqual(offenders, []);
});

/**
 * lace netcheck's rooms (lib/netcheck/), lowest first: its options; the cluster it talks to and
 * the pairs it walks; the checks of one path; the report; the pipeline of a run; the command. As
 * in FLOORS, a file imports its own room and rooms on lower floors only.
 */
const NETCHECK_ROOMS: { room: string; paths: string[]; floor: number }[] = [
  { room: "options", paths: ["lib/netcheck/options.ts"], floor: 0 },
  { room: "cluster", paths: ["lib/netcheck/cluster/"], floor: 1 },
  { room: "pairs", paths: ["lib/netcheck/pairs/"], floor: 1 },
  { room: "checks", paths: ["lib/netcheck/checks/"], floor: 2 },
  { room: "report", paths: ["lib/netcheck/report/"], floor: 3 },
  { room: "pipeline", paths: ["lib/netcheck/pipeline/"], floor: 4 },
  { room: "command", paths: ["lib/netcheck/main.ts", "lib/netcheck/flags.ts"], floor: 5 },
];

/** The room of a path under lib/netcheck/; undefined for a path no room claims. */
function netcheckRoom(path: string): { room: string; floor: number } | undefined {
  return NETCHECK_ROOMS.find(({ paths }) => paths.some((p) => path === p || path.startsWith(p)));
}

/**
 * What netcheck, a separate small world (DESIGN.md), takes from the rest of lib/: the toolbox,
 * logging, the Kubernetes client setup and the flag parser every command shares.
 */
const NETCHECK_SHARES = [
  "lib/time",
  "lib/os",
  "lib/net",
  "lib/text",
  "lib/log",
  "lib/kube",
  "lib/flags",
];

Deno.test("netcheck's rooms import downhill: cluster and pairs, checks, report, pipeline, command", () => {
  const unclaimed = [...productFiles(join(ROOT, "lib/netcheck"))]
    .map((f) => relative(ROOT, f))
    .filter((f) => !netcheckRoom(f));
  assert.deepEqual(unclaimed, [], "every netcheck file belongs to a room");
  const uphill: string[] = [];
  let across = 0;
  for (const { from, to } of libArrows()) {
    const a = netcheckRoom(from), b = netcheckRoom(to);
    if (!a || !b || a.room === b.room) continue;
    across++;
    if (b.floor >= a.floor) uphill.push(`${from} imports ${to}`);
  }
  assert(across > 20, `only ${across} imports between netcheck's rooms: the scan proves nothing`);
  assert.deepEqual(uphill, []);
});

Deno.test("netcheck takes only the toolbox, logging, the client setup and the flag parser from lib/", () => {
  const outside = libArrows().filter(({ from, to }) =>
    from.startsWith("lib/netcheck/") && !to.startsWith("lib/netcheck/")
  );
  assert(outside.length > 5, `only ${outside.length} imports from outside netcheck were seen`);
  assert.deepEqual(
    outside.filter(({ to }) => !NETCHECK_SHARES.includes(roomOf(to)))
      .map(({ from, to }) => `${from} imports ${to}`),
    [],
  );
});
