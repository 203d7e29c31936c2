import assert from "node:assert/strict";
import { attachmentNetwork, type AttachmentNetworkInput } from "./network.ts";
import type { Attachment } from "../../cni/protocol.ts";
import type { Pod } from "../../pods/pod.ts";
import { realTimers } from "../../time/timers.ts";

const OPTS = { networkAnnotation: "lace.io/network", networkIdAnnotation: "lace.io/network-id" };
const ADD: Attachment = { namespace: "ns", name: "p", uid: "u1", ips: ["10.0.0.5"] };

function pod(annotations?: Record<string, string>, uid = "u1"): Pod {
  return { metadata: { namespace: "ns", name: "p", uid, annotations }, spec: { containers: [] } };
}

function input(over: Partial<AttachmentNetworkInput>): AttachmentNetworkInput {
  return { cached: undefined, cachedFromApi: true, opts: OPTS, timers: realTimers, ...over };
}

const lookup = (answer: Pod | undefined | Error) => ({
  get: () => answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer),
});

Deno.test("attachmentNetwork() takes the conf's network over any annotation, without asking the API", async () => {
  let asked = false;
  const found = await attachmentNetwork(
    { ...ADD, network: "red", networkId: 2 },
    input({
      cached: pod({ "lace.io/network": "blue", "lace.io/network-id": "3" }),
      lookup: { get: () => (asked = true, Promise.resolve(undefined)) },
    }),
  );
  assert.deepEqual(found, { network: { network: "red", networkId: 2 }, from: "conf" });
  assert.equal(asked, false);
});

Deno.test("attachmentNetwork() is unknown for malformed annotations, a pod the API does not have, or an API that fails", async () => {
  const malformed = pod({ "lace.io/network": "x", "lace.io/network-id": "0" });
  for (
    const [what, over] of [
      ["malformed in the cache", { cached: malformed }],
      ["malformed from the API", { lookup: lookup(malformed) }],
      ["not found", { lookup: lookup(undefined) }],
      ["API error", { lookup: lookup(new Error("connection refused")) }],
      ["no source", {}],
    ] as const
  ) {
    const found = await attachmentNetwork(ADD, input(over));
    assert.equal(found.network, undefined, what);
  }
});

Deno.test("attachmentNetwork() puts a pod without annotations on the default network only when a source that would show them says so", async () => {
  // The API's own answer, or the pods directory when there is no API.
  assert.deepEqual(
    await attachmentNetwork(ADD, input({ cached: pod(), lookup: lookup(pod()) })),
    { network: { network: "", networkId: 0 }, from: "api" },
  );
  assert.deepEqual(
    await attachmentNetwork(ADD, input({ cached: pod(), cachedFromApi: false })),
    { network: { network: "", networkId: 0 }, from: "pods" },
  );
  // The API's cached view without annotations and no way to ask again: the writer may be late.
  assert.equal((await attachmentNetwork(ADD, input({ cached: pod() }))).network, undefined);
});
