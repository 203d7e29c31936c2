import assert from "node:assert/strict";
import type { Pod } from "./pod.ts";
import type { PodSink } from "./source.ts";
import { resetSync } from "@logtape/logtape";
import { setupLogging } from "../log/setup.ts";
import { DirPodSource } from "./dir_source.ts";
import { loadYamlParser } from "./manifests.ts";
import { deepJson, deepYamlBlock, podYaml } from "./_manifest_fixture.ts";
import { MAX_MANIFEST_BYTES } from "./manifest_file.ts";
import { waitFor } from "../../tests/helpers/wait.ts";
import { needsRoot, skipIf } from "../../tests/helpers/skip.ts";
import type { Mount } from "../os/mountinfo.ts";
import { realTimers, within } from "../time/timers.ts";

await loadYamlParser();

class RecordingSink implements PodSink {
  lists: Pod[][] = [];
  replaceAll(_source: string, pods: Pod[]): void {
    this.lists.push(pods);
  }
  upsert(): void {
    throw new Error("the directory source only reports full lists");
  }
  remove(): void {
    throw new Error("the directory source only reports full lists");
  }
  uids(): string[] {
    return (this.lists.at(-1) ?? []).map((p) => p.metadata.uid).sort();
  }
}

/**
 * Writes `files` into a new temporary directory, starts a DirPodSource on it
 * for `node`, runs `fn`, then stops the source and removes the directory.
 */
async function withSource(
  files: Record<string, string>,
  node: string,
  fn: (dir: string, sink: RecordingSink, source: DirPodSource) => void | Promise<void>,
  debounceMs = 5,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "lace-pods-" });
  try {
    for (const [name, text] of Object.entries(files)) {
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
    const sink = new RecordingSink();
    const source = new DirPodSource(dir, node, { debounceMs });
    await source.start(sink);
    try {
      await fn(dir, sink, source);
    } finally {
      await source.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("DirPodSource reports this node's pods from every manifest at start", () =>
  withSource(
    {
      "a.yaml": `${podYaml("a", "n1")}\n---\n${podYaml("b", "n2")}`,
      "c.yml": podYaml("c"),
      "notes.txt": "not a manifest",
      ".d.yaml.swp": podYaml("d"),
    },
    "n1",
    (_dir, sink) => {
      assert.deepEqual(sink.uids(), ["a", "c"]);
    },
  ));

Deno.test("DirPodSource rejects a missing directory with a clear error", async () => {
  const source = new DirPodSource("/nonexistent/lace-pods", "n1");
  await assert.rejects(() => source.start(new RecordingSink()), /pods directory.*--pods-dir/i);
});

Deno.test("DirPodSource reports added, changed and removed files", () =>
  withSource({}, "", async (dir, sink) => {
    assert.deepEqual(sink.uids(), []);
    await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a"));
    await waitFor(() => sink.uids().join() === "a", { message: "pod a" });
    await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a2"));
    await waitFor(() => sink.uids().join() === "a2", { message: "pod a2" });
    await Deno.remove(`${dir}/a.yaml`);
    await waitFor(() => sink.uids().length === 0, { message: "no pods" });
  }));

Deno.test("DirPodSource keeps a file's last pods while it is half written or empty", () =>
  withSource({ "a.yaml": podYaml("a"), "b.yaml": podYaml("b") }, "", async (dir, sink, source) => {
    await Deno.writeTextFile(`${dir}/a.yaml`, "");
    await source.rescan();
    assert.deepEqual(sink.uids(), ["a", "b"]);
    await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a").slice(0, 40) + "\n  - [");
    await source.rescan();
    assert.deepEqual(sink.uids(), ["a", "b"]);
  }));

// A quiet time longer than every wait below: what is seen, was read without waiting for it.
const NEVER_QUIET = 60_000;

Deno.test("DirPodSource reads a file renamed into the directory at once, without waiting for quiet", () =>
  withSource({}, "", async (dir, sink) => {
    await Deno.writeTextFile(`${dir}/.a.yaml`, podYaml("a"));
    await Deno.rename(`${dir}/.a.yaml`, `${dir}/a.yaml`);
    await waitFor(() => sink.uids().join() === "a", { message: "pod a", timeout: 2000 });
  }, NEVER_QUIET));

Deno.test("DirPodSource leaves a file being written as it was until its writer closes it", () =>
  withSource({}, "", async (dir, sink) => {
    // The first document alone parses: read now, it would report one pod of two.
    const file = await Deno.open(`${dir}/b.yaml`, { write: true, create: true });
    try {
      await file.write(new TextEncoder().encode(`${podYaml("b1")}\n---\n`));
      await Deno.writeTextFile(`${dir}/.a.yaml`, podYaml("a"));
      await Deno.rename(`${dir}/.a.yaml`, `${dir}/a.yaml`);
      await waitFor(() => sink.uids().includes("a"), { message: "pod a", timeout: 2000 });
      assert.deepEqual(sink.uids(), ["a"]);
      await file.write(new TextEncoder().encode(podYaml("b2")));
    } finally {
      file.close();
    }
    await waitFor(() => sink.uids().join() === "a,b1,b2", { message: "b's pods", timeout: 2000 });
  }, NEVER_QUIET));

Deno.test("DirPodSource keeps other files' pods when one file never parsed", () =>
  withSource(
    { "a.yaml": podYaml("a"), "bad.yaml": "kind: Pod\nmetadata: [" },
    "",
    (_dir, sink) => {
      assert.deepEqual(sink.uids(), ["a"]);
    },
  ));

Deno.test("DirPodSource re-reads only the file that changed; other files' pods stay the same objects", () =>
  withSource({ "a.yaml": podYaml("a"), "b.yaml": podYaml("b") }, "", async (dir, sink, source) => {
    const first = sink.lists.at(-1)!;
    await Deno.writeTextFile(`${dir}/b.yaml`, podYaml("b").replace("10.0.0.1", "10.0.0.2"));
    await waitFor(
      () =>
        sink.lists.at(-1)!.find((p) => p.metadata.uid === "b")?.status?.podIPs?.[0].ip ===
          "10.0.0.2",
      { message: "b changed" },
    );
    const last = sink.lists.at(-1)!;
    const a = (list: Pod[]) => list.find((p) => p.metadata.uid === "a");
    assert.ok(a(first) && a(first) === a(last), "pod a was not parsed again");
    // An explicit rescan re-reads everything.
    await source.rescan();
    assert.notEqual(a(sink.lists.at(-1)!), a(first));
    assert.deepEqual(a(sink.lists.at(-1)!), a(first));
  }));

/** Runs `fn` with the "lace" logs captured as JSON lines; returns the warning messages. */
async function warningsDuring(fn: () => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const decoder = new TextDecoder();
  setupLogging("warning", "json", (b) => lines.push(decoder.decode(b)));
  try {
    await fn();
  } finally {
    resetSync();
  }
  return lines.map((l) => JSON.parse(l).message as string);
}

/** Starts a source on `dir` (prepared by `prepare`), expects `uids`, returns the warnings. */
async function startOn(
  prepare: (dir: string) => Promise<void>,
  check: (sink: RecordingSink, dir: string, source: DirPodSource) => Promise<void> | void,
  opts: { mounts?: (dir: string) => Mount[] } = {},
): Promise<string[]> {
  const dir = await Deno.makeTempDir({ prefix: "lace-pods-" });
  try {
    await prepare(dir);
    return await warningsDuring(async () => {
      const sink = new RecordingSink();
      const source = new DirPodSource(dir, "", {
        debounceMs: 5,
        ...(opts.mounts ? { mounts: opts.mounts(dir) } : {}),
      });
      try {
        // Fails instead of hanging when a read blocks (a FIFO).
        await within(realTimers, source.start(sink), 5000, "starting the source");
        await check(sink, dir, source);
      } finally {
        await source.stop();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function mkfifo(path: string): Promise<void> {
  const { success, stderr } = await new Deno.Command("mkfifo", { args: [path], stderr: "piped" })
    .output();
  if (!success) throw new Error(`mkfifo ${path} failed: ${new TextDecoder().decode(stderr)}`);
}

Deno.test("DirPodSource skips a FIFO without waiting for a writer and keeps the other pods", async () => {
  const warnings = await startOn(async (dir) => {
    await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a"));
    await mkfifo(`${dir}/fifo.yaml`);
  }, (sink) => assert.deepEqual(sink.uids(), ["a"]));
  assert.ok(warnings.some((w) => /fifo\.yaml.*FIFO, not a regular file/.test(w)), `${warnings}`);
});

Deno.test("DirPodSource skips a symlink to /dev/zero without reading it", async () => {
  const warnings = await startOn(async (dir) => {
    await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a"));
    await Deno.symlink("/dev/zero", `${dir}/zero.yaml`);
  }, (sink) => assert.deepEqual(sink.uids(), ["a"]));
  assert.ok(
    warnings.some((w) => /zero\.yaml.*\/dev\/zero.*outside the pods directory/.test(w)),
    `${warnings}`,
  );
});

Deno.test("DirPodSource skips a symlink that leaves the directory, even to a valid pod", async () => {
  const outside = await Deno.makeTempDir({ prefix: "lace-outside-" });
  try {
    await Deno.writeTextFile(`${outside}/b.yaml`, podYaml("b"));
    const warnings = await startOn(async (dir) => {
      await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a"));
      await Deno.symlink(`${outside}/b.yaml`, `${dir}/b.yaml`);
      await Deno.symlink("../" + outside.split("/").pop() + "/b.yaml", `${dir}/rel.yaml`);
    }, (sink) => assert.deepEqual(sink.uids(), ["a"]));
    assert.equal(warnings.filter((w) => /outside the pods directory/.test(w)).length, 2);
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("DirPodSource follows a symlink that stays inside the directory (a ConfigMap volume)", async () => {
  await startOn(async (dir) => {
    await Deno.mkdir(`${dir}/..2026_01_01`);
    await Deno.writeTextFile(`${dir}/..2026_01_01/a.yaml`, podYaml("a"));
    await Deno.symlink("..2026_01_01", `${dir}/..data`);
    await Deno.symlink("..data/a.yaml", `${dir}/a.yaml`);
  }, async (sink, dir) => {
    assert.deepEqual(sink.uids(), ["a"]);
    // The kubelet updates a ConfigMap volume by swapping `..data`; a.yaml itself is untouched.
    await Deno.mkdir(`${dir}/..2026_01_02`);
    await Deno.writeTextFile(`${dir}/..2026_01_02/a.yaml`, podYaml("a2"));
    await Deno.symlink("..2026_01_02", `${dir}/..data_tmp`);
    await Deno.rename(`${dir}/..data_tmp`, `${dir}/..data`);
    await waitFor(() => sink.uids().join() === "a2", {
      message: "pod a2 through the swapped link",
    });
  });
});

Deno.test("DirPodSource skips a file larger than the cap and drops its pods", async () => {
  const warnings = await startOn(async (dir) => {
    await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a"));
    await Deno.writeTextFile(`${dir}/b.yaml`, podYaml("b"));
  }, async (sink, dir, source) => {
    assert.deepEqual(sink.uids(), ["a", "b"]);
    const padding = `# ${"x".repeat(MAX_MANIFEST_BYTES)}\n`;
    await Deno.writeTextFile(`${dir}/b.yaml`, padding + podYaml("b"));
    await source.rescan();
    assert.deepEqual(sink.uids(), ["a"]);
  });
  assert.ok(warnings.some((w) => /b\.yaml.*more than 1048576/.test(w)), `${warnings}`);
});

Deno.test("DirPodSource skips a deeply nested manifest and keeps every other pod", async () => {
  const warnings = await startOn(async (dir) => {
    await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a"));
    await Deno.writeTextFile(`${dir}/deep.yaml`, deepYamlBlock(1200));
    await Deno.writeTextFile(`${dir}/deep.json`, deepJson(100_000));
  }, (sink) => assert.deepEqual(sink.uids(), ["a"]));
  assert.ok(warnings.some((w) => /deep\.yaml.*nested more than/.test(w)), `${warnings}`);
  assert.ok(warnings.some((w) => /deep\.json.*nested more than/.test(w)), `${warnings}`);
});

Deno.test("DirPodSource skips a file of binary garbage with its reason and keeps the other pods", async () => {
  const garbage = new Uint8Array(64 * 1024);
  for (let i = 0; i < garbage.length; i += 65536) crypto.getRandomValues(garbage.subarray(i));
  const warnings = await startOn(async (dir) => {
    await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a"));
    await Deno.writeFile(`${dir}/garbage.yaml`, garbage);
    await Deno.writeFile(`${dir}/garbage.json`, garbage);
  }, (sink) => assert.deepEqual(sink.uids(), ["a"]));
  assert.ok(warnings.some((w) => /garbage\.yaml/.test(w)), `${warnings}`);
  assert.ok(warnings.some((w) => /garbage\.json/.test(w)), `${warnings}`);
});

/** The mount table of a node where `dir` is a read-only mount (a ConfigMap volume) over a writable root. */
function readOnlyAt(dir: string): Mount[] {
  const mount = (id: number, mountPoint: string, options: string[]): Mount => ({
    id,
    parentId: 1,
    root: "/",
    mountPoint,
    fsType: "tmpfs",
    source: "tmpfs",
    options,
  });
  return [mount(1, "/", ["rw"]), mount(2, Deno.realPathSync(dir), ["ro", "relatime"])];
}

const asRoot = { ignore: skipIf(needsRoot("files of other users")) };
const NOBODY = 65534;

Deno.test("DirPodSource refuses at start a pods directory others may write on a writable mount, saying what to do", async () => {
  await assert.rejects(
    () => startOn((dir) => Deno.chmod(dir, 0o777), () => {}),
    /writable by group or others \(mode 0777\) on a writable mount: anyone may plant pods.*chmod go-w.*read-only/s,
  );
});

Deno.test({
  name: "DirPodSource refuses at start a pods directory another non-root user owns",
  ...asRoot,
  fn: async () => {
    await assert.rejects(
      () => startOn((dir) => Deno.chown(dir, NOBODY, NOBODY), () => {}),
      /owned by uid 65534, not root.*chown root/s,
    );
  },
});

Deno.test("DirPodSource reads a pods directory others may write on a read-only mount (a ConfigMap volume)", async () => {
  await startOn(
    async (dir) => {
      await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a"));
      await Deno.chmod(`${dir}/a.yaml`, 0o666);
      await Deno.chmod(dir, 0o777);
    },
    (sink) => assert.deepEqual(sink.uids(), ["a"]),
    { mounts: readOnlyAt },
  );
});

Deno.test({
  name:
    "DirPodSource skips a file another non-root user owns, with its reason, and keeps the other pods",
  ...asRoot,
  fn: async () => {
    for (const mounts of [undefined, readOnlyAt]) {
      const warnings = await startOn(
        async (dir) => {
          await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a"));
          await Deno.writeTextFile(`${dir}/planted.yaml`, podYaml("planted"));
          await Deno.chown(`${dir}/planted.yaml`, NOBODY, NOBODY);
        },
        (sink) => assert.deepEqual(sink.uids(), ["a"]),
        mounts ? { mounts } : {},
      );
      assert.ok(
        warnings.some((w) => /planted\.yaml.*owned by uid 65534, not root/.test(w)),
        warnings.join("\n"),
      );
    }
  },
});

Deno.test("DirPodSource skips a file others may write on a writable mount, and keeps the other pods", async () => {
  const warnings = await startOn(async (dir) => {
    await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a"));
    await Deno.writeTextFile(`${dir}/open.yaml`, podYaml("open"));
    await Deno.chmod(`${dir}/open.yaml`, 0o666);
  }, (sink) => assert.deepEqual(sink.uids(), ["a"]));
  assert.ok(
    warnings.some((w) => /open\.yaml.*writable by group or others \(mode 0666\)/.test(w)),
    warnings.join("\n"),
  );
});
