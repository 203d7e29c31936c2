/**
 * The programs figure 1 sets beside Lace's to split a connect's cost, each
 * attached to a sibling cgroup of its own with maps of its own: bpf/lace.bpf.c
 * built with -DLACE_BENCH_NOOP (returns at once: what the kernel charges for
 * running any cgroup connect program at all) and with -DLACE_BENCH_LOOKUP_ONLY
 * (one lookup in the probe map and the mark, nothing counted: the least a
 * program that tags probes must do); Lace's own program once more, whose
 * pod ranges the figure sets elsewhere, so that its non-matching connects are
 * outside every range (as the API server's or a host-network pod's are); and
 * further copies of Lace's program, filled like the kubelet's.
 *
 * Lookup + mark and Lace are each loaded COPIES times, interleaved (one copy of
 * each, then the next), and the figure judges the median of the copies: where
 * the kernel places a program's code moves its cost by as much as a quarter
 * (two copies of one object: bench/RESULTS.md, "One lookup
 * answering both questions").
 * Built at run time with the script `deno task bpf` runs, so they are today's
 * source.
 */
import { join } from "node:path";
import { Datapath } from "../lib/datapath/loader.ts";
import { uninstall } from "../lib/datapath/pins.ts";
import type { SimCgroups } from "../lib/demo/cgroup.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";
import { buildBpfObject } from "../tests/helpers/bpf_build.ts";
import { benchPinPath } from "./system.ts";

export interface BenchProgram {
  /** Its own cgroup, a sibling of the kubelet's. */
  cgroup: string;
  datapath: Datapath;
  /** Whether it marks a matching connect itself (else the worker sets the mark). */
  tags: boolean;
  /** Kernel ids of its connect4 and connect6 programs. */
  progIds: Record<"connect4" | "connect6", number>;
}

const VARIANTS = [
  { name: "noop", define: "LACE_BENCH_NOOP", tags: false },
  { name: "lookup", define: "LACE_BENCH_LOOKUP_ONLY", tags: true },
  { name: "outside", define: undefined, tags: true },
  { name: "lace", define: undefined, tags: true },
] as const;

/** How many copies of Lace (the kubelet's among them) and of lookup + mark are measured. */
export const COPIES = 3;

export interface BenchPrograms {
  noop: BenchProgram;
  outside: BenchProgram;
  /** COPIES copies of lookup + mark. */
  lookup: BenchProgram[];
  /** COPIES - 1 copies of Lace's program beside the kubelet's (loaded before these). */
  lace: BenchProgram[];
}

/** Builds, loads and attaches the programs above; cleanups undo all of it. */
export async function loadBenchPrograms(
  cgroups: SimCgroups,
  cleanups: CleanupStack,
): Promise<BenchPrograms> {
  const dir = await Deno.makeTempDir({ prefix: "lace-bench-bpf-" });
  cleanups.push(() => Deno.remove(dir, { recursive: true }));
  const objects = new Map<string, Uint8Array>();
  for (const v of VARIANTS) {
    const object = await buildBpfObject({
      out: join(dir, `${v.name}.bpf.o`),
      defines: v.define ? [v.define] : [],
    });
    objects.set(v.name, await Deno.readFile(object));
  }
  const load = (v: (typeof VARIANTS)[number], copy: number): BenchProgram => {
    const pinPath = benchPinPath();
    cleanups.push(() => uninstall(pinPath));
    const datapath = Datapath.open({ pinPath, object: objects.get(v.name)! });
    cleanups.push(() => datapath.close());
    const cgroup = cgroups.child(`bench-${v.name}${copy ? `-${copy}` : ""}`);
    datapath.attach(cgroup);
    const progIds = Object.fromEntries(datapath.links().map((l) => [l.program, l.progId]));
    return { cgroup, datapath, tags: v.tags, progIds: progIds as BenchProgram["progIds"] };
  };
  const [noop, lookup, outside, lace] = VARIANTS;
  const out: BenchPrograms = {
    noop: load(noop, 0),
    lookup: [],
    lace: [],
    outside: load(outside, 0),
  };
  // Interleaved, so that no program's copies sit together wherever the kernel put the first.
  for (let copy = 0; copy < COPIES; copy++) {
    out.lookup.push(load(lookup, copy));
    if (copy > 0) out.lace.push(load(lace, copy));
  }
  return out;
}
