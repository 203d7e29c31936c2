/**
 * A benchmark killed mid-figure leaves no `lace-bench-*` pin directory under
 * bpffs: with SIGTERM it removes its own pins before exiting; with SIGKILL
 * its pins are recorded as its own, so the next run's sweep removes them.
 * Runs `bench/main.ts --quick --only hook` and kills it once its datapath is
 * pinned, then runs it once to the end (about 5 s); no timing is judged.
 * Needs root; run under `flock /tmp/lace-kernel.lock`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { OWNERS_DIR, sweepAbandoned } from "../lib/demo/leftovers.ts";
import { pathExists } from "../lib/datapath/pins.ts";
import { bpffsMountPoints, readMountInfo } from "../lib/os/mountinfo.ts";
import { needsRoot, skipIf } from "./helpers/skip.ts";
import { waitFor } from "./helpers/wait.ts";

const MAIN = fileURLToPath(new URL("../bench/main.ts", import.meta.url));
/** The bench's quickest figure that pins a datapath. */
const HOOK_QUICK = ["run", "--allow-all", MAIN, "--quick", "--only", "hook"];
const reason = needsRoot();

function benchPins(bpffs: string): Set<string> {
  return new Set(
    [...Deno.readDirSync(bpffs)].map((e) => e.name).filter((n) => n.startsWith("lace-bench-")),
  );
}

/** Starts the hook figure and waits for a new pin directory of its own holding pins. */
async function benchWithPins(bpffs: string) {
  const before = benchPins(bpffs);
  const child = new Deno.Command(Deno.execPath(), {
    args: HOOK_QUICK,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  try {
    const dir = await waitFor(() => {
      const made = [...benchPins(bpffs)].filter((n) => !before.has(n));
      const full = made.map((n) => join(bpffs, n)).filter((d) => [...Deno.readDirSync(d)].length);
      return full[0];
    }, { timeout: 20_000, interval: 20, message: "the bench's pins under bpffs" });
    return { child, stderr, dir };
  } catch (e) {
    child.kill("SIGKILL");
    await child.status;
    throw new Error(`${(e as Error).message}; the bench said: ${await stderr}`);
  }
}

Deno.test({
  name: "a bench killed with SIGTERM removes its pins, one killed with SIGKILL has them swept",
  ignore: skipIf(reason),
  async fn() {
    const bpffs = bpffsMountPoints(readMountInfo())[0];
    const made: string[] = [];
    try {
      const term = await benchWithPins(bpffs);
      made.push(term.dir);
      term.child.kill("SIGTERM");
      const termStatus = await term.child.status;
      assert.equal(termStatus.code, 130, await term.stderr);
      assert.equal(pathExists(term.dir), false, `SIGTERM left ${term.dir}`);

      const kill = await benchWithPins(bpffs);
      made.push(kill.dir);
      kill.child.kill("SIGKILL");
      await kill.child.status;
      assert.equal(pathExists(kill.dir), true, "SIGKILL runs no clean-up: the pins are left");
      const owners = [...Deno.readDirSync(OWNERS_DIR)].map((e) => e.name);
      assert.ok(
        owners.some((o) => o.startsWith(`${kill.child.pid}-`)),
        `no owner record of the killed bench (pid ${kill.child.pid}) in ${OWNERS_DIR}`,
      );
      // The next bench run sweeps before its figures (the hook figure, a few seconds).
      const next = await new Deno.Command(Deno.execPath(), {
        args: HOOK_QUICK,
        stdout: "null",
        stderr: "piped",
      }).output();
      const said = new TextDecoder().decode(next.stderr);
      assert.match(said, new RegExp(`Removed pins ${kill.dir}, left by a killed run`), said);
      assert.equal(pathExists(kill.dir), false, `the next run's sweep left ${kill.dir}`);
    } finally {
      await sweepAbandoned().catch(() => []);
      for (const dir of made) {
        try {
          Deno.removeSync(dir, { recursive: true });
        } catch {
          // Removed by the bench or the sweep.
        }
      }
    }
  },
});
