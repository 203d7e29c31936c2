/**
 * Which flags a page may name besides a `lace` command's: another program's, listed by hand, or
 * one a program of this repository parses. Reads no `lace --help`, so its unit test runs alone.
 */
import { join } from "node:path";
import { REPO } from "./docs_pages.ts";

/**
 * Flags of other programs the pages name in backticks, by program: each was checked by hand when
 * added here. A `lace` flag never belongs in this list.
 */
export const FOREIGN_FLAGS: Record<string, string> = {
  "--set": "helm",
  "--set-json": "helm",
  "--create-namespace": "helm",
  "--logs": "helm test",
  "--kubelet-cgroups": "kubelet",
  "--disable-agent": "k3s server",
  "--focus-file": "ginkgo",
  "--label-filter": "ginkgo",
  "--max-filesize": "curl",
  "--max-time": "curl",
  "--build-arg": "docker build",
  "--allow-all": "deno",
  "--no-check": "deno test",
  "--cached-only": "deno",
  "--v8-flags": "deno run",
  "--dont-fragment": "iperf3",
  "--archive": "kubectl krew install",
};

/** Programs of this repository whose flags a page may name, and the file that parses them. */
export const OWN_PROGRAMS = [
  "tests/node/dev_node.ts", // scripts/dev node
  "tests/node/conformance.ts", // deno task conformance
  "bench/main.ts", // deno task bench
  "scripts/compile.ts", // deno task compile
  "scripts/release.ts", // deno task release
  "scripts/setup.sh",
  "scripts/mutate.ts",
];

/** Whether a repository program other than `lace` parses `flag` (it appears in its source). */
function ownProgramFlag(flag: string): boolean {
  return OWN_PROGRAMS.some((p) => Deno.readTextFileSync(join(REPO, p)).includes(flag));
}

/** A flag span's problem, or undefined: `--x` or `--x=value`. */
export function flagProblem(span: string, laceFlags: Set<string>): string | undefined {
  const flag = span.split(/[= ]/)[0];
  if (laceFlags.has(flag) || flag in FOREIGN_FLAGS || ownProgramFlag(flag)) return undefined;
  return `${flag} is no flag of any lace command (nor of a program listed in FOREIGN_FLAGS)`;
}
