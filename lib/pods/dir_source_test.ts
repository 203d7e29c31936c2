import assert from "node:assert/strict";
import type { Pod } from "./pod.ts";
import type { PodSink } from "./source.ts";
import { DirPodSource, parseManifests } from "./dir_source.ts";

function podYaml(uid: string, node?: string): string {
  return [
    "apiVersion: v1",
    "kind: Pod",
    `metadata: {name: p-${uid}, namespace: ns, uid: ${uid}}`,
    `spec: {${node ? `nodeName: ${node}, ` : ""}containers: [{name: app}]}`,
    "status: {phase: Running, podIPs: [{ip: 10.0.0.1}]}",
  ].join("\n");
}

Deno.test("parseManifests() reads several documents and a List with kindless items", () => {
  const text = [
    podYaml("a"),
    "---",
    "kind: List\nitems:\n- metadata: {name: b, uid: b}\n  spec: {containers: []}",
    "---",
    "kind: ConfigMap\nmetadata: {name: c}",
    "---",
  ].join("\n");
  const { pods, problems } = parseManifests(text, "x.yaml");
  assert.deepEqual(pods.map((p) => p.metadata.uid), ["a", "b"]);
  assert.equal(pods[0].status?.podIPs?.[0].ip, "10.0.0.1");
  assert.deepEqual(problems, []);
});

Deno.test("parseManifests() reports a malformed pod and keeps the file's others", () => {
  const text = `${podYaml("a")}\n---\nkind: Pod\nmetadata: {name: nouid}\nspec: {containers: []}`;
  const { pods, problems } = parseManifests(text, "x.yaml");
  assert.deepEqual(pods.map((p) => p.metadata.uid), ["a"]);
  assert.equal(problems.length, 1);
  assert.match(problems[0], /x\.yaml: document 2: .*uid/);
});

Deno.test("parseManifests() throws SyntaxError naming the file when a document does not parse", () => {
  assert.throws(() => parseManifests(`${podYaml("a")}\n---\nmetadata: [`, "half.yaml"), {
    name: "SyntaxError",
    message: /half\.yaml/,
  });
  assert.throws(() => parseManifests('{"kind": "Pod",', "half.json"), SyntaxError);
});

Deno.test("parseManifests() reads a JSON PodList", () => {
  const list = {
    kind: "PodList",
    items: [{ metadata: { name: "a", uid: "a" }, spec: { containers: [] } }],
  };
  const { pods } = parseManifests(JSON.stringify(list, null, "\t"), "pods.json");
  assert.equal(pods[0].metadata.namespace, "default");
});

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

async function waitFor(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
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
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "lace-pods-" });
  try {
    for (const [name, text] of Object.entries(files)) {
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
    const sink = new RecordingSink();
    const source = new DirPodSource(dir, node, { debounceMs: 5 });
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
    await waitFor("pod a", () => sink.uids().join() === "a");
    await Deno.writeTextFile(`${dir}/a.yaml`, podYaml("a2"));
    await waitFor("pod a2", () => sink.uids().join() === "a2");
    await Deno.remove(`${dir}/a.yaml`);
    await waitFor("no pods", () => sink.uids().length === 0);
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
      "b changed",
      () =>
        sink.lists.at(-1)!.find((p) => p.metadata.uid === "b")?.status?.podIPs?.[0].ip ===
          "10.0.0.2",
    );
    const last = sink.lists.at(-1)!;
    const a = (list: Pod[]) => list.find((p) => p.metadata.uid === "a");
    assert.ok(a(first) && a(first) === a(last), "pod a was not parsed again");
    // An explicit rescan re-reads everything.
    await source.rescan();
    assert.notEqual(a(sink.lists.at(-1)!), a(first));
    assert.deepEqual(a(sink.lists.at(-1)!), a(first));
  }));
