/**
 * A stand-in kubelet for a booted machine (tests/systemd_unit_test.ts), run there as
 * kubelet.service: from its own cgroup, as the kubelet probes, it connects to one probe target
 * every 50 ms and appends each connect's outcome and socket mark to a file, one JSON line each,
 * for the test to read from outside.
 *
 *   deno run -A tests/helpers/kubelet_loop.ts HOST PORT FILE
 */
import { probeOnce } from "../../lib/prober/mod.ts";
import { libcSymbols } from "../../lib/libbpf/mod.ts";

/** One connect of the loop, as written to the file. */
export interface KubeletConnect {
  /** Its number, from 0. */
  n: number;
  result: string;
  mark: number;
}

/** Reads the lines the loop wrote (a last line being written is left out). */
export function parseConnects(text: string): KubeletConnect[] {
  const out: KubeletConnect[] = [];
  for (const line of text.split("\n")) {
    try {
      out.push(JSON.parse(line) as KubeletConnect);
    } catch {
      // The line being written, or the empty one after the last newline.
    }
  }
  return out;
}

if (import.meta.main) {
  const [host, port, file] = Deno.args;
  const libc = libcSymbols();
  const out = await Deno.open(file, { append: true, create: true });
  for (let n = 0;; n++) {
    const r = probeOnce(libc, { host, port: Number(port), timeoutMs: 1000, connectOnly: true });
    const line = JSON.stringify({ n, result: r.result, mark: r.mark ?? 0 });
    await out.write(new TextEncoder().encode(line + "\n"));
    // Pacing, not synchronisation: a kubelet probes every few seconds, many pods at once.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
