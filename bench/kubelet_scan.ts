/**
 * What one /proc scan for the kubelet costs as a node's processes grow (the follower scans every
 * 10 s, every 2 s while auto waits for the kubelet): findKubelets() over fixture trees of N
 * processes, a tenth of them kubelet lookalikes in pod cgroups, and over 100 processes with a
 * 1 MiB command line each; then over this machine's /proc. Not part of `deno task bench`'s
 * figures: run it on its own, under the bench lock, optionally beside another finder module
 * (main's, say) to compare in one run:
 *
 *   flock /tmp/lace-bench.lock deno run --allow-all bench/kubelet_scan.ts [other_finder.ts]
 *
 * A fixture tree lives in the page cache, so it measures the scan's own work (reads, parsing,
 * judging), not the kernel's making of /proc texts.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { findKubelets } from "../lib/cgroup/kubelet_finder.ts";
import { median } from "./stats.ts";

/** A finder's answer, whichever shape: this tree's scan, or an older list of candidates. */
type Finder = (procRoot: string) => unknown;

/** Writes a fixture /proc of `count` processes: a tenth lookalikes, `cmdlineBytes` each. */
function fixture(count: number, cmdlineBytes = 0): string {
  const root = Deno.makeTempDirSync({ prefix: "lace-bench-proc-" });
  const write = (pid: number, comm: string, argv: string[], cgroup: string) => {
    Deno.mkdirSync(`${root}/${pid}/ns`, { recursive: true });
    Deno.writeTextFileSync(`${root}/${pid}/comm`, comm + "\n");
    Deno.writeTextFileSync(`${root}/${pid}/cmdline`, argv.join("\0") + "\0");
    Deno.writeTextFileSync(`${root}/${pid}/cgroup`, `0::${cgroup}\n`);
    Deno.writeTextFileSync(`${root}/${pid}/status`, `Name:\t${comm}\nUid:\t0\t0\t0\t0\n`);
    Deno.writeTextFileSync(`${root}/${pid}/mountinfo`, "20 1 0:21 / / rw - ext4 /dev/vda rw\n");
  };
  write(1, "systemd", ["/sbin/init"], "/init.scope");
  write(2, "kubelet", ["/usr/bin/kubelet", "--v=2"], "/system.slice/kubelet.service");
  const padding = "x".repeat(cmdlineBytes);
  for (let i = 0; i < count; i++) {
    const pod = `/kubepods.slice/kubepods-pod${i % 500}.slice/cri-containerd-${i}.scope`;
    const argv = i % 10 === 0 ? ["/usr/bin/kubelet"] : ["sleep", "infinity"];
    write(1000 + i, i % 10 === 0 ? "kubelet" : "sleep", padding ? [...argv, padding] : argv, pod);
  }
  return root;
}

/** Milliseconds per scan of each finder, alternating, `rounds` times. */
function time(finders: [string, Finder][], root: string, rounds: number): Map<string, number[]> {
  const out = new Map(finders.map(([name]) => [name, [] as number[]]));
  for (let r = 0; r < rounds; r++) {
    for (const [name, find] of finders) {
      const start = performance.now();
      find(root);
      out.get(name)!.push(performance.now() - start);
    }
  }
  return out;
}

const finders: [string, Finder][] = [["this tree", (root) => findKubelets(root)]];
if (Deno.args[0]) {
  const other = await import(pathToFileURL(resolve(Deno.args[0])).href);
  finders.push([Deno.args[0], (root) => other.findKubelets(root)]);
}
const cases: [string, () => string, number][] = [
  ["1,000 processes", () => fixture(1_000), 7],
  ["5,000 processes", () => fixture(5_000), 7],
  ["20,000 processes", () => fixture(20_000), 5],
  ["100 processes, 1 MiB cmdline each", () => fixture(100, 1024 * 1024), 7],
];
console.log(`load ${Deno.loadavg().join(" ")}`);
for (const [name, make, rounds] of cases) {
  const root = make();
  try {
    const processes = [...Deno.readDirSync(root)].length;
    for (const [finder, ms] of time(finders, root, rounds)) {
      const m = median(ms);
      console.log(
        `${name.padEnd(36)} ${finder.padEnd(36)} ${m.toFixed(1).padStart(8)} ms/scan ` +
          `${(m * 1000 / processes).toFixed(1).padStart(7)} µs/process`,
      );
    }
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
}
const real = [...Deno.readDirSync("/proc")].filter((e) => /^\d+$/.test(e.name)).length;
for (const [finder, ms] of time(finders, "/proc", 9)) {
  const m = median(ms);
  console.log(
    `${`this machine's /proc (${real})`.padEnd(36)} ${finder.padEnd(36)} ` +
      `${m.toFixed(1).padStart(8)} ms/scan ${(m * 1000 / real).toFixed(1).padStart(7)} µs/process`,
  );
}
console.log(`load ${Deno.loadavg().join(" ")}`);
