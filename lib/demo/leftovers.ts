/**
 * Names for machine-wide things the demo and the tests make (network
 * namespaces, cgroups, bpffs pin directories), and the sweep of those a
 * killed process left behind. Each process records the suffixes it names
 * things with in an owner file; a process killed with SIGKILL (or by a
 * tool's time limit) never runs its own clean-up, so the next demo or test
 * run removes every `lace-*-<suffix>` of owners that are no longer alive.
 * Things of live owners, and anything not named through here, are never
 * touched, so concurrent runs on one machine stay safe.
 */
import { join } from "node:path";
import { randomSuffix, run } from "../os/process.ts";
import { uninstall } from "../datapath/pins.ts";
import { bpffsMountPoints, cgroup2MountPoints, readMountInfo } from "../os/mountinfo.ts";

/** Where owner files live (tmpfs: a reboot clears them along with what they name). */
export const OWNERS_DIR = "/run/lace-sim/owners";

/** This process's identity: pid and start time (clock ticks), so a reused pid is not mistaken. */
function processIdentity(pid: number | "self"): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // Field 22 (starttime), counted after the command name, which may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return `${pid === "self" ? Deno.pid : pid}-${fields[19]}`;
  } catch {
    return undefined;
  }
}

let ownerFile: string | undefined;

/**
 * A fresh suffix for `lace-<kind>-<suffix>` names, recorded as this
 * process's, so a sweep can remove what it names if this process dies
 * without cleaning up.
 */
export function claimSuffix(): string {
  const sfx = randomSuffix();
  if (ownerFile === undefined) {
    Deno.mkdirSync(OWNERS_DIR, { recursive: true, mode: 0o700 });
    ownerFile = join(OWNERS_DIR, processIdentity("self")!);
    // A normal exit has cleaned up already; only the record goes.
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(ownerFile!);
      } catch {
        // Already gone.
      }
    });
  }
  Deno.writeTextFileSync(ownerFile, sfx + "\n", { append: true });
  return sfx;
}

/** Whether an owner file (named `<pid>-<starttime>`) belongs to a process that is gone. */
export function ownerIsGone(name: string): boolean {
  const pid = Number(name.slice(0, name.indexOf("-")));
  return !Number.isInteger(pid) || pid <= 0 || processIdentity(pid) !== name;
}

/** The `lace-*-<suffix>` entries of `names` whose suffix is one of `suffixes`. */
export function namesWithSuffixes(names: string[], suffixes: Set<string>): string[] {
  return names.filter((n) => {
    const m = /^lace-[a-z0-9]+-([0-9a-f]+)$/.exec(n);
    return m !== null && suffixes.has(m[1]);
  });
}

function entries(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name);
  } catch {
    return [];
  }
}

/** Removes a cgroup directory tree, moving any process left in it to the mount's root. */
function removeCgroup(mount: string, dir: string): void {
  for (const child of entries(dir)) {
    const path = join(dir, child);
    if (Deno.statSync(path).isDirectory) removeCgroup(mount, path);
  }
  for (const pid of Deno.readTextFileSync(join(dir, "cgroup.procs")).split("\n")) {
    if (!pid) continue;
    try {
      Deno.writeTextFileSync(join(mount, "cgroup.procs"), pid);
    } catch {
      // Exited meanwhile.
    }
  }
  Deno.removeSync(dir);
}

/** Removes a pin directory Lace's pins were made in, with whatever else is left in it; gone is fine. */
export function removePinDir(dir: string): void {
  uninstall(dir); // removes the directory too when only Lace's pins were in it
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/**
 * Removes the network namespaces, cgroups and bpffs pin directories named
 * with the suffixes of owners that are no longer alive, then their owner
 * files. Returns what it removed; a thing it cannot remove is reported and
 * its owner file kept for the next sweep.
 */
export async function sweepAbandoned(): Promise<string[]> {
  const suffixes = new Set<string>();
  const owners = entries(OWNERS_DIR).filter(ownerIsGone);
  for (const owner of owners) {
    for (const sfx of Deno.readTextFileSync(join(OWNERS_DIR, owner)).split("\n")) {
      if (sfx) suffixes.add(sfx);
    }
  }
  if (suffixes.size === 0) {
    for (const owner of owners) Deno.removeSync(join(OWNERS_DIR, owner));
    return [];
  }
  const removed: string[] = [];
  const failures: string[] = [];
  const attempt = async (what: string, remove: () => unknown) => {
    try {
      await remove();
      removed.push(what);
    } catch (e) {
      failures.push(`${what}: ${e instanceof Error ? e.message : e}`);
    }
  };
  const netns = (await run(["ip", "netns", "list"])).split("\n").map((l) => l.split(" ")[0]);
  for (const name of namesWithSuffixes(netns, suffixes)) {
    await attempt(`netns ${name}`, () => run(["ip", "netns", "del", name]));
  }
  const mounts = readMountInfo();
  for (const mount of cgroup2MountPoints(mounts)) {
    for (const name of namesWithSuffixes(entries(mount), suffixes)) {
      await attempt(`cgroup ${join(mount, name)}`, () => removeCgroup(mount, join(mount, name)));
    }
  }
  for (const bpffs of bpffsMountPoints(mounts)) {
    for (const name of namesWithSuffixes(entries(bpffs), suffixes)) {
      const dir = join(bpffs, name);
      await attempt(`pins ${dir}`, () => removePinDir(dir));
    }
  }
  if (failures.length) {
    throw new Error(`Could not remove what killed runs left behind:\n${failures.join("\n")}`);
  }
  for (const owner of owners) Deno.removeSync(join(OWNERS_DIR, owner));
  return removed;
}

if (import.meta.main) {
  for (const what of await sweepAbandoned()) console.log(`removed ${what}, left by a killed run`);
}
