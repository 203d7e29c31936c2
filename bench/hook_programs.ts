/**
 * The programs figure 1 sets beside Lace's to split a connect's cost, each
 * attached to a sibling cgroup of its own with maps of its own: bpf/lace.bpf.c
 * built with -DLACE_BENCH_NOOP (returns at once: what the kernel charges for
 * running any cgroup connect program at all) and with -DLACE_BENCH_LOOKUP_ONLY
 * (one lookup in the probe map and the mark, nothing counted: the least a
 * program that tags probes must do); and Lace's own program once more, whose
 * pod ranges the figure sets elsewhere, so that its non-matching connects are
 * outside every range (as the API server's or a host-network pod's are).
 * Built at run time with the script `deno task bpf` runs, so they are today's
 * source.
 */
import { join } from "node:path";
import { Datapath } from "../lib/datapath/loader.ts";
import { uninstall } from "../lib/datapath/pins.ts";
import type { SimCgroups } from "../lib/demo/cgroup.ts";
import type { CleanupStack } from "../lib/cleanup_stack.ts";
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
] as const;

/** Builds, loads and attaches the programs above; cleanups undo all of it. */
export async function loadBenchPrograms(
  cgroups: SimCgroups,
  cleanups: CleanupStack,
): Promise<Record<(typeof VARIANTS)[number]["name"], BenchProgram>> {
  const dir = await Deno.makeTempDir({ prefix: "lace-bench-bpf-" });
  cleanups.push(() => Deno.remove(dir, { recursive: true }));
  const out = {} as Record<(typeof VARIANTS)[number]["name"], BenchProgram>;
  for (const v of VARIANTS) {
    const object = await buildBpfObject({
      out: join(dir, `${v.name}.bpf.o`),
      defines: v.define ? [v.define] : [],
    });
    const pinPath = benchPinPath();
    cleanups.push(() => uninstall(pinPath));
    const datapath = Datapath.open({ pinPath, object: await Deno.readFile(object) });
    cleanups.push(() => datapath.close());
    const cgroup = cgroups.child(`bench-${v.name}`);
    datapath.attach(cgroup);
    const progIds = Object.fromEntries(datapath.links().map((l) => [l.program, l.progId]));
    out[v.name] = {
      cgroup,
      datapath,
      tags: v.tags,
      progIds: progIds as BenchProgram["progIds"],
    };
  }
  return out;
}
