/** The probe targets figure 1 fills its maps with, beside the pod's own. */
import type { ProbeKey } from "../lib/probe/key.ts";

/** Deterministic distinct keys of both families, none on loopback (so none matches by chance). */
export function* fillerKeys(): Generator<ProbeKey> {
  for (let i = 0;; i++) {
    const port = 1024 + (i % 50_000);
    const n = Math.floor(i / 2);
    if (i % 2 === 0) {
      yield {
        family: "ipv4",
        address: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
        port,
      };
    } else {
      yield {
        family: "ipv6",
        address: `fd00::${(n >> 16).toString(16)}:${(n & 0xffff).toString(16)}`,
        port,
      };
    }
  }
}
