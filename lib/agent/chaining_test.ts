import assert from "node:assert/strict";
import { join } from "node:path";
import { deeplyNested, FLANNEL } from "../cni/chaining/_fixtures.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import { waitFor } from "../../tests/helpers/wait.ts";
import { type ChainingParts, startChaining } from "./chaining.ts";
import type { Config } from "../config.ts";
import { nodeObjectRef } from "../kube/event_sink.ts";
import { pluginDir } from "../cni/chaining/_world.ts";

async function world() {
  const root = await Deno.makeTempDir({ prefix: "lace-agent-chain-" });
  const confDir = join(root, "net.d");
  await Deno.mkdir(confDir);
  await Deno.writeTextFile(join(confDir, "10-flannel.conflist"), FLANNEL);
  const binDir = pluginDir(root);
  const config = (mode: Config["cniChaining"]) => ({
    cniChaining: mode,
    cniConfDir: confDir,
    cniStateDir: join(root, "state"),
    cniBinDir: binDir,
    cniSocket: "/run/lace/cni.sock",
    cniChainFiles: [],
    containerRuntime: "auto" as const,
  });
  const events: string[] = [];
  const outcomes: string[] = [];
  const chainedFiles: number[] = [];
  const parts = (
    uninstalling?: () => Promise<boolean>,
    more: Partial<ChainingParts> = {},
  ): ChainingParts => ({
    events: {
      warn: (_o, reason, message) => events.push(`Warning ${reason}: ${message}`),
      normal: (_o, reason) => events.push(`Normal ${reason}`),
    },
    node: nodeObjectRef("n1"),
    uninstalling,
    metrics: {
      cniChaining: { inc: (l: { outcome: string }) => outcomes.push(l.outcome) },
      cniChainedFiles: { set: (n: number) => chainedFiles.push(n) },
    } as unknown as ChainingParts["metrics"],
    ...more,
  });
  return {
    root,
    confDir,
    binDir,
    config,
    parts,
    events,
    outcomes,
    chainedFiles,
    file: () => Deno.readTextFileSync(join(confDir, "10-flannel.conflist")),
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

Deno.test("startChaining in auto mode chains at start and records a Normal Event on the node", async () => {
  await using w = await world();
  const running = startChaining(w.config("auto"), w.parts(() => Promise.resolve(false)));
  await running.stop();
  assert.match(w.file(), /"lace"/);
  assert.deepStrictEqual(w.events, ["Normal CniChained"]);
  assert.deepStrictEqual(w.chainedFiles, [1]);
});

Deno.test("A stop while the DaemonSet stays (restart, upgrade) leaves the chain in place", async () => {
  await using w = await world();
  await startChaining(w.config("auto"), w.parts(() => Promise.resolve(false))).stop();
  assert.match(w.file(), /"lace"/);
});

Deno.test("A stop that cannot tell whether Lace is uninstalled leaves the chain in place", async () => {
  await using w = await world();
  await startChaining(w.config("auto"), w.parts(() => Promise.reject(new Error("no API")))).stop();
  assert.match(w.file(), /"lace"/);
});

Deno.test("A stop while the DaemonSet is being deleted restores the file byte for byte", async () => {
  await using w = await world();
  await startChaining(w.config("auto"), w.parts(() => Promise.resolve(true))).stop();
  assert.equal(w.file(), FLANNEL);
  assert.deepStrictEqual(w.events, ["Normal CniChained", "Normal CniChainRestored"]);
});

Deno.test("Turning chaining to manual restores what the agent chained before", async () => {
  await using w = await world();
  await startChaining(w.config("auto"), w.parts()).stop();
  assert.match(w.file(), /"lace"/);
  await startChaining(w.config("manual"), w.parts()).stop();
  assert.equal(w.file(), FLANNEL);
});

Deno.test("A first pass that fails starts all the same, reports, and retries after a backoff", async () => {
  await using w = await world();
  const { clock, timers } = fakeTime();
  // The state directory's parent is a file: the chaining lock cannot be taken.
  const blocker = join(w.root, "not-a-dir");
  await Deno.writeTextFile(blocker, "");
  const running = startChaining(
    { ...w.config("auto"), cniStateDir: join(blocker, "state") },
    w.parts(undefined, { timers }),
  );
  try {
    assert.doesNotMatch(w.file(), /"lace"/);
    assert.equal(w.events.length, 1);
    assert.match(w.events[0], /^Warning CniChainFailed: Chaining the lace plugin into .* failed/);
    assert.deepStrictEqual(w.outcomes, ["failed"]);
    assert.equal(running.view().problems[0]?.reason, "failed");
    await Deno.remove(blocker);
    clock.tick(999);
    assert.doesNotMatch(w.file(), /"lace"/, "no retry before the first backoff");
    clock.tick(1);
    assert.match(w.file(), /"lace"/);
    assert.deepStrictEqual(running.view().problems, []);
    assert.deepStrictEqual(running.view().chained, ["10-flannel.conflist"]);
    assert.deepStrictEqual(w.outcomes, ["failed", "chained"]);
  } finally {
    await running.stop();
  }
});

Deno.test("A runtime file nested 9,000 levels deep is refused and reported; the agent's chaining runs on", async () => {
  await using w = await world();
  await Deno.writeTextFile(join(w.confDir, "10-flannel.conflist"), deeplyNested());
  const { timers } = fakeTime();
  const running = startChaining(w.config("auto"), w.parts(undefined, { timers }));
  try {
    assert.deepStrictEqual(w.outcomes, ["refused"]);
    assert.match(
      w.events[0],
      /^Warning CniChainRefused: Not chaining: "10-flannel\.conflist" nests more than 64 levels deep/,
    );
    assert.equal(running.view().problems[0]?.reason, "refused");
    assert.equal(w.file(), deeplyNested(), "left as it is");
  } finally {
    await running.stop();
  }
});

/** A directory whose first file the network plugin was cutting off mid-write. */
async function firstInvalid(w: Awaited<ReturnType<typeof world>>) {
  await Deno.writeTextFile(join(w.confDir, "05-cilium.conflist"), FLANNEL.slice(0, 50));
}

Deno.test("With auto, the Node's containerd picks containerd's rule: a broken first file chains nothing, loudly", async () => {
  await using w = await world();
  await firstInvalid(w);
  const { timers } = fakeTime();
  const running = startChaining(
    w.config("auto"),
    w.parts(undefined, { timers, readRuntimeVersion: () => Promise.resolve("containerd://2.1.4") }),
  );
  try {
    await waitFor(() => w.outcomes.length > 0, { message: "the first pass" });
    assert.deepStrictEqual(running.view().runtime, {
      mode: "auto",
      runtime: "containerd",
      version: "containerd://2.1.4",
    });
    assert.deepStrictEqual(w.outcomes, ["no-runtime-file"]);
    assert.match(
      w.events[0],
      /^Warning CniNoRuntimeConfig: Nothing to chain: containerd loads only the first file, "05-cilium\.conflist"/,
    );
    assert.doesNotMatch(w.file(), /"lace"/, "containerd does not use the flannel file");
  } finally {
    await running.stop();
  }
});

Deno.test("With auto, the Node's CRI-O picks CRI-O's rule: the next file it loads is chained", async () => {
  await using w = await world();
  await firstInvalid(w);
  const { timers } = fakeTime();
  const running = startChaining(
    w.config("auto"),
    w.parts(undefined, { timers, readRuntimeVersion: () => Promise.resolve("cri-o://1.33.2") }),
  );
  try {
    await waitFor(() => w.outcomes.includes("chained"), { message: "the first pass" });
    assert.equal(running.view().runtime.runtime, "crio");
    assert.match(w.file(), /"lace"/);
    assert.match(w.events[0], /^Warning CniConfigUnparsable: CRI-O skips "05-cilium\.conflist"/);
  } finally {
    await running.stop();
  }
});

Deno.test("--container-runtime overrides the Node, which is then not read", async () => {
  await using w = await world();
  await firstInvalid(w);
  let reads = 0;
  const running = startChaining(
    { ...w.config("auto"), containerRuntime: "containerd" },
    w.parts(undefined, { readRuntimeVersion: () => (reads++, Promise.resolve("cri-o://1.33.2")) }),
  );
  try {
    assert.deepStrictEqual(w.outcomes, ["no-runtime-file"], "the first pass ran at once");
    assert.equal(reads, 0);
    assert.deepStrictEqual(running.view().runtime, { mode: "containerd", runtime: "containerd" });
  } finally {
    await running.stop();
  }
});

Deno.test("A Node that does not answer: the first pass goes by CRI-O's rule after 5 s", async () => {
  await using w = await world();
  await firstInvalid(w);
  const { clock, timers } = fakeTime();
  const reads: number[] = [];
  const running = startChaining(
    w.config("auto"),
    w.parts(undefined, {
      timers,
      // The API does not answer.
      readRuntimeVersion: () => (reads.push(clock.now), new Promise<string>(() => {})),
    }),
  );
  try {
    assert.deepStrictEqual(w.outcomes, [], "the first pass waits for the Node");
    clock.tick(4999);
    await Promise.resolve();
    assert.deepStrictEqual(w.outcomes, [], "for 5 s");
    clock.tick(1);
    await waitFor(() => w.outcomes.includes("chained"), { message: "the first pass" });
    assert.equal(running.view().runtime.runtime, undefined);
    assert.deepStrictEqual(reads, [0], "the hung read is not repeated while it hangs");
  } finally {
    await running.stop();
  }
});

Deno.test("A failed Node read is retried after 1 s, 2 s... until the runtime is known", async () => {
  await using w = await world();
  const { clock, timers } = fakeTime();
  const reads: number[] = [];
  const running = startChaining(
    w.config("auto"),
    w.parts(undefined, {
      timers,
      readRuntimeVersion: () => {
        reads.push(clock.now);
        return reads.length < 3
          ? Promise.reject(new Error("connection refused"))
          : Promise.resolve("containerd://2.1.4");
      },
    }),
  );
  try {
    await waitFor(() => w.outcomes.length > 0, { message: "the first pass" });
    await clock.tickAsync(1000);
    await clock.tickAsync(2000);
    assert.deepStrictEqual(reads, [0, 1000, 3000]);
    assert.equal(running.view().runtime.runtime, "containerd");
  } finally {
    await running.stop();
  }
});

Deno.test("A runtime that is neither containerd nor CRI-O is a Warning Event, and CRI-O's rule applies", async () => {
  await using w = await world();
  const { timers } = fakeTime();
  const running = startChaining(
    w.config("auto"),
    w.parts(undefined, { timers, readRuntimeVersion: () => Promise.resolve("docker://28.1.1") }),
  );
  try {
    await waitFor(() => w.outcomes.includes("chained"), { message: "the first pass" });
    assert.match(
      w.events[0],
      /^Warning CniRuntimeUnknown: The node's container runtime "docker:\/\/28\.1\.1" is neither containerd nor CRI-O/,
    );
    assert.deepStrictEqual(running.view().runtime, { mode: "auto", version: "docker://28.1.1" });
  } finally {
    await running.stop();
  }
});

Deno.test("startChaining names the agent's pin path in its lace entry only where it is not the plugin's default", async () => {
  await using w = await world();
  const laceOf = () =>
    JSON.parse(w.file()).plugins.find((p: { type: string }) => p.type === "lace");
  await startChaining({ ...w.config("auto"), pinPath: "/sys/fs/bpf/lace" }, w.parts()).stop();
  assert.equal(laceOf().pinPath, undefined);
  await startChaining({ ...w.config("auto"), pinPath: "/sys/fs/bpf/lace-2" }, w.parts()).stop();
  assert.equal(laceOf().pinPath, "/sys/fs/bpf/lace-2");
});

Deno.test("Without the lace plugin in --cni-bin-dir the agent chains nothing, warns with CniPluginMissing and chains at the next pass once it is installed", async () => {
  await using w = await world();
  await Deno.remove(join(w.binDir, "lace"));
  const { clock, timers } = fakeTime();
  const running = startChaining(
    { ...w.config("auto"), containerRuntime: "containerd" },
    w.parts(undefined, { timers }),
  );
  try {
    assert.deepStrictEqual(w.outcomes, ["no-plugin"]);
    assert.match(
      w.events[0],
      /^Warning CniPluginMissing: The lace plugin ".*\/bin\/lace" is missing: install it .*Nothing is chained until it is/,
    );
    assert.equal(running.view().problems[0]?.reason, "no-plugin");
    assert.equal(w.file(), FLANNEL, "not chained without its plugin");
    Deno.writeTextFileSync(join(w.binDir, "lace"), "#!/bin/sh\n", { mode: 0o755 });
    Deno.chmodSync(join(w.binDir, "lace"), 0o755);
    clock.tick(10_000);
    assert.deepStrictEqual(w.outcomes, ["no-plugin", "chained"]);
    assert.match(w.file(), /"lace"/);
  } finally {
    await running.stop();
  }
});
