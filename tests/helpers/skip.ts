/**
 * How a test that cannot run on every machine says so. Without root, a test that needs root is
 * skipped, its reason in its name. Where the test command runs as root (CI does), everything a
 * test needs is there after `scripts/setup.sh --tests`, so a skip means a missing tool or a broken
 * harness, not a machine that cannot run it: the test stays skipped and one failing test per
 * reason and test file names what is missing, so the command fails (and scripts/test.sh counts
 * each test skipped as root as a failure). Under CI=true a skip fails the same way even without
 * root (CI runs the tests as root). The one exception is a property of the kernel (kind
 * "kernel", its reason starting "the kernel"), which no set-up can change: it stays a skip, and
 * docs/testing.md lists each such reason.
 *
 * Nothing in lib/ imports this but the unit tests beside the code; it imports nothing heavy.
 */

/** What keeps a test from running: something the machine lacks, or a property of the kernel. */
export type SkipKind = "setup" | "kernel";

/** Why this machine cannot run tests that need root, or undefined when it can. */
export function needsRoot(what = "netns, cgroups, BPF"): string | undefined {
  return Deno.uid() === 0 ? undefined : `needs root (${what})`;
}

/** Why a skip may not stand here (root, or CI=true), or undefined where it may. */
export function skipsForbidden(): string | undefined {
  if (Deno.uid() === 0) return "the tests run as root, where every tool they need is installed";
  if (Deno.env.get("CI") === "true") return "CI=true, where the tests run as root";
  return undefined;
}

/** The reasons this test file already failed on, so a reason fails once however many tests share it. */
const failed = new Set<string>();

/**
 * `Deno.test`'s `ignore` for a test that cannot run while `why` gives a reason (undefined: it
 * runs). Where skips are forbidden (root, CI=true), a `setup` reason also registers a failing
 * test, once per reason in this test file, that names it. Call it while the test file loads.
 */
export function skipIf(why: string | undefined, kind: SkipKind = "setup"): boolean {
  if (why === undefined) return false;
  // scripts/test.sh tells a kernel's skip by its name's "(skipped: the kernel …)".
  if (kind === "kernel" && !why.startsWith("the kernel ")) {
    throw new TypeError(`A kernel's reason to skip must start "the kernel ": "${why}"`);
  }
  const forbidden = skipsForbidden();
  if (forbidden && kind === "setup" && !failed.has(why)) {
    failed.add(why);
    Deno.test(`a test of this file would be skipped: ${why}`, () => {
      throw new Error(
        `Tests of this file cannot run: ${why}. A skip fails here (${forbidden}): install what ` +
          "is missing (scripts/setup.sh --tests) or fix the harness",
      );
    });
  }
  return true;
}

/** A test's name, with the reason it is skipped when it is. */
export function skipName(name: string, why: string | undefined): string {
  return why === undefined ? name : `${name} (skipped: ${why})`;
}
