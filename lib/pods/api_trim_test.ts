import assert from "node:assert/strict";
import { HeapGate } from "../os/heap_gate.ts";
import { listTrimmedPods, type PodPage, PodTrimmer } from "./api_trim.ts";

function apiPod(uid: string, phase = "Running"): unknown {
  return {
    metadata: {
      name: `p-${uid}`,
      namespace: "ns",
      uid,
      resourceVersion: "1",
      annotations: { "lace.io/network": "blue", "kubectl.kubernetes.io/last-applied": "x" },
    },
    spec: { containers: [{ name: "app", image: "big" }] },
    status: { phase },
  };
}

Deno.test("PodTrimmer.trim() keeps only the configured annotations, and pod() hands that pod on", () => {
  const trimmer = new PodTrimmer({ annotations: ["lace.io/network"] });
  const trimmed = trimmer.trim(apiPod("a"));
  assert.deepEqual(trimmer.pod(trimmed)?.metadata.annotations, { "lace.io/network": "blue" });
});

Deno.test("PodTrimmer.trim() makes a malformed object a skeleton the sink never gets", () => {
  const trimmer = new PodTrimmer();
  const skeleton = trimmer.trim({ metadata: { name: "x", namespace: "ns", resourceVersion: "9" } });
  assert.deepEqual(skeleton, { metadata: { name: "x", namespace: "ns", resourceVersion: "9" } });
  assert.equal(trimmer.pod(skeleton), undefined);
});

Deno.test("listTrimmedPods() follows the pages, leaves finished pods out, and stops when stopped", async () => {
  const pages: Record<string, PodPage> = {
    "": { items: [apiPod("a"), apiPod("b", "Succeeded")], metadata: { _continue: "t1" } },
    t1: { items: [apiPod("c")], metadata: { _continue: "t2", resourceVersion: "42" } },
    t2: { items: [apiPod("d")], metadata: { resourceVersion: "43" } },
  };
  const asked: string[] = [];
  const page = (token: string | undefined) => {
    asked.push(token ?? "");
    return Promise.resolve(pages[token ?? ""]);
  };
  const trimmer = new PodTrimmer();
  const all = await listTrimmedPods(page, trimmer, new HeapGate(), () => false);
  assert.deepEqual(all.items.map((p) => trimmer.pod(p)?.metadata.uid), ["a", "c", "d"]);
  assert.equal(all.resourceVersion, "43");
  asked.length = 0;
  await listTrimmedPods(page, trimmer, new HeapGate(), () => asked.length === 2);
  assert.deepEqual(asked, ["", "t1"]);
});
