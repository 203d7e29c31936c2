/**
 * A second process that keeps changing a pinned probe map until killed: it
 * adds and removes keys of its own (10.255.x.y, never a test's stable keys)
 * and, with "rewrite", rewrites the stable keys' values too (the kernel then
 * replaces their elements), so a reader in the test process sees the map
 * change under it. Prints "ready" once it has begun.
 *
 *   deno run -A tests/helpers/map_churn.ts PIN_OF_THE_MAP STABLE_COUNT [rewrite]
 */
import { BpfProbeStore } from "../../lib/datapath/probe_store.ts";
import { BpfMap } from "../../lib/libbpf/mod.ts";
import { stableKey } from "./map_keys.ts";

const [pin, stableText, rewrite] = Deno.args;
const stable = Number(stableText);
using store = new BpfProbeStore(BpfMap.openPinned(pin));
const churnKey = (i: number) => ({
  family: "ipv4" as const,
  address: `10.255.${(i >> 8) & 255}.${i & 255}`,
  port: 9,
});
let ready = false;
for (let round = 0;; round++) {
  for (let i = 0; i < 512; i++) {
    store.put({ key: churnKey(i), value: { networkId: 3, mark: round } });
    if (rewrite) store.put({ key: stableKey(i % stable), value: { networkId: 1, mark: round } });
  }
  for (let i = 0; i < 512; i++) store.remove(churnKey(i));
  if (!ready) {
    console.log("ready");
    ready = true;
  }
}
