/**
 * `startAgent` undoes a start that fails half-way: every part started before
 * the failure is stopped and closed again (the pins stay, as on a normal stop).
 */
import assert from "node:assert/strict";
import { defaultConfig } from "../lib/config.ts";
import { startAgent } from "../lib/agent/start.ts";
import { uninstall } from "../lib/datapath/pins.ts";
import { libbpfSymbols } from "../lib/libbpf/mod.ts";
import { testPinPath } from "./helpers/sim_world.ts";
import { needsRoot, skipIf, skipName } from "./helpers/skip.ts";

const skip = needsRoot();
// libbpf stays loaded for the life of the process: load it before the test, so the
// resource sanitizer below sees only what the start itself leaves behind.
if (!skip) libbpfSymbols();

/** The BPF objects (maps, programs, links) this process holds open. */
function openBpfFds(): string[] {
  const out: string[] = [];
  for (const entry of Deno.readDirSync("/proc/self/fd")) {
    try {
      const target = Deno.readLinkSync(`/proc/self/fd/${entry.name}`);
      if (target.startsWith("anon_inode:bpf")) out.push(`${entry.name} ${target}`);
    } catch {
      // The fd of the directory listing itself, already closed.
    }
  }
  return out.sort();
}

/** The names of every pin under `dir`, at any depth. */
function pinnedNames(dir: string): string[] {
  return [...Deno.readDirSync(dir)].flatMap((e) =>
    e.isDirectory ? pinnedNames(`${dir}/${e.name}`) : [e.name]
  );
}

Deno.test({
  name: skipName(
    "a start that fails at the HTTP listen address leaves nothing running or open",
    skip,
  ),
  ignore: skipIf(skip),
  // The default sanitizers are the check that nothing runs on: a pods-directory
  // watcher, the follower's inotify watch and timers, or the runner's resync timer
  // left behind fail this test.
  sanitizeOps: true,
  sanitizeResources: true,
  async fn() {
    const pinPath = testPinPath();
    const podsDir = await Deno.makeTempDir({ prefix: "lace-start-test-" });
    using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const before = openBpfFds();
    try {
      await assert.rejects(
        startAgent({
          ...defaultConfig(),
          nodeName: "n1",
          useApi: false,
          podsDir,
          pinPath,
          kubeletCgroup: "/sys/fs/cgroup/lace-start-test-absent",
          metricsAddr: `127.0.0.1:${taken.addr.port}`,
          agentSocket: "",
          cniSocket: "",
        }),
        (e: unknown) => {
          assert(e instanceof Error);
          assert.match(e.message, /^Cannot serve metrics and health on "127\.0\.0\.1:\d+"/);
          assert(e.cause instanceof Deno.errors.AddrInUse, String(e.cause));
          return true;
        },
      );
      // The datapath had been opened (its maps are pinned) and is closed again.
      assert(pinnedNames(pinPath).includes("probe_targets"), "the probe map was pinned");
      assert.deepEqual(openBpfFds(), before);
    } finally {
      uninstall(pinPath);
      await Deno.remove(podsDir, { recursive: true });
    }
  },
});
