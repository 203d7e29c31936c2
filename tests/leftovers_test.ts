/**
 * The sweep of what killed runs left behind removes exactly the things named
 * with a dead owner's suffixes: network namespaces, cgroups and bpffs pin
 * directories; a live owner's things stay. Needs root.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { randomSuffix, run } from "../lib/os/process.ts";
import { claimSuffix, OWNERS_DIR, sweepAbandoned } from "../lib/demo/leftovers.ts";
import { bpffsMountPoints, cgroup2MountPoints, readMountInfo } from "../lib/os/mountinfo.ts";
import { pathExists } from "../lib/datapath/pins.ts";
import { needsRoot, skipIf } from "./helpers/skip.ts";

const reason = needsRoot();

async function netnsExists(name: string): Promise<boolean> {
  return (await run(["ip", "netns", "list"])).split("\n").some((l) => l.split(" ")[0] === name);
}

Deno.test({
  name: "the sweep removes a dead owner's namespaces, cgroups and pins, and keeps a live owner's",
  ignore: skipIf(reason),
  async fn() {
    const mounts = readMountInfo();
    const cgroup2 = cgroup2MountPoints(mounts)[0];
    const bpffs = bpffsMountPoints(mounts)[0];
    // A dead owner: a process that has exited (its pid no longer has this start time).
    const child = new Deno.Command("true").spawn();
    await child.status;
    const dead = randomSuffix();
    Deno.mkdirSync(OWNERS_DIR, { recursive: true });
    const deadOwner = join(OWNERS_DIR, `${child.pid}-0`);
    Deno.writeTextFileSync(deadOwner, `${dead}\n`);
    const live = claimSuffix();
    const made = {
      deadNetns: `lace-node-${dead}`,
      liveNetns: `lace-node-${live}`,
      deadCgroup: join(cgroup2, `lace-sim-${dead}`),
      deadPins: join(bpffs, `lace-test-${dead}`),
    };
    try {
      await run(["ip", "netns", "add", made.deadNetns]);
      await run(["ip", "netns", "add", made.liveNetns]);
      Deno.mkdirSync(join(made.deadCgroup, "kubelet"), { recursive: true });
      Deno.mkdirSync(join(made.deadPins, "abi2"), { recursive: true });

      const removed = await sweepAbandoned();

      assert.ok(removed.includes(`netns ${made.deadNetns}`), removed.join(", "));
      assert.equal(await netnsExists(made.deadNetns), false);
      assert.equal(pathExists(made.deadCgroup), false);
      assert.equal(pathExists(made.deadPins), false);
      assert.equal(pathExists(deadOwner), false, "the dead owner's record goes too");
      assert.equal(await netnsExists(made.liveNetns), true, "a live owner's namespace stays");
    } finally {
      await run(["ip", "netns", "del", made.liveNetns]).catch(() => {});
      await run(["ip", "netns", "del", made.deadNetns]).catch(() => {});
      for (const dir of [join(made.deadCgroup, "kubelet"), made.deadCgroup, made.deadPins]) {
        try {
          Deno.removeSync(dir, { recursive: dir === made.deadPins });
        } catch {
          // Swept.
        }
      }
    }
  },
});
