/**
 * The machine side of the benchmark: sysctl save/restore, process statistics
 * from /proc, the machine description, and waiting for a condition with a deadline.
 */
import { bpffsMountPoints, readMountInfo } from "../lib/os/mountinfo.ts";
import { claimSuffix, removePinDir } from "../lib/demo/leftovers.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";

/** Reads a sysctl through /proc/sys (name with dots). */
function readSysctl(name: string): string {
  return Deno.readTextFileSync(`/proc/sys/${name.replaceAll(".", "/")}`).trim();
}

/** Sets a sysctl and registers the restore of its previous value. */
export function setSysctl(name: string, value: string, cleanups: CleanupStack): void {
  const previous = readSysctl(name);
  cleanups.push(() => Deno.writeTextFileSync(`/proc/sys/${name.replaceAll(".", "/")}`, previous));
  Deno.writeTextFileSync(`/proc/sys/${name.replaceAll(".", "/")}`, value);
}

/** The pin paths this process has handed out, for removeBenchPins on an interrupt. */
const pinPaths = new Set<string>();

/**
 * A unique pin path under the bpffs mount, for one figure's datapath. Its
 * suffix is recorded as this process's (claimSuffix), so the next run's
 * sweepAbandoned removes it when this process is killed before its clean-up.
 */
export function benchPinPath(): string {
  const bpffs = bpffsMountPoints(readMountInfo())[0];
  if (!bpffs) throw new Error("bpffs is not mounted: run `mount -t bpf bpf /sys/fs/bpf`");
  const path = `${bpffs}/lace-bench-${claimSuffix()}`;
  pinPaths.add(path);
  return path;
}

/**
 * Removes every pin directory benchPinPath handed out that is still there:
 * after an interrupt, a figure still running may have pinned after its
 * clean-up ran. Returns the failures.
 */
export function removeBenchPins(): unknown[] {
  const errors: unknown[] = [];
  for (const path of pinPaths) {
    try {
      removePinDir(path);
    } catch (e) {
      errors.push(e);
    }
  }
  return errors;
}

/** CPU time, memory and context switches of a process, from /proc. */
export interface ProcSample {
  /** utime + stime, seconds. */
  cpuSeconds: number;
  rssBytes: number;
  /** Of rssBytes: anonymous pages (the V8 heap, the C heap, thread stacks: the process's own). */
  rssAnonBytes: number;
  /**
   * Of rssBytes: pages of mapped files, almost all the runtime binary's own code and data, which
   * every process of the same binary shares and the kernel can drop and read again.
   */
  rssFileBytes: number;
  /** Peak RSS (VmHWM). */
  peakRssBytes: number;
  /** Voluntary + involuntary context switches summed over all threads: wake-ups. */
  contextSwitches: number;
  /** Context switches of the main thread (the JavaScript event loop). */
  mainThreadSwitches: number;
  /**
   * Voluntary context switches of the main thread: each is the event loop
   * going to sleep, so each is followed by a wake-up. Involuntary switches are
   * preemptions, which count how busy the machine is, not the process.
   */
  mainThreadWakeups: number;
  /** Context switches, CPU seconds and name (comm) by thread id: who wakes up, who spends. */
  byThread: Record<string, { name: string; switches: number; cpuSeconds: number }>;
  threads: number;
}

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** utime + stime of /proc/<path>/stat (a process, or one of its threads), in seconds. */
function statCpuSeconds(path: string): number {
  const stat = Deno.readTextFileSync(`/proc/${path}/stat`);
  // Fields after the command name, which may hold spaces: state is field 3.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Samples a live process; throws when it has exited. */
export function sampleProcess(pid: number): ProcSample {
  const cpuSeconds = statCpuSeconds(String(pid));
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  let contextSwitches = 0, mainThreadSwitches = 0, mainThreadWakeups = 0, threads = 0;
  const byThread: ProcSample["byThread"] = {};
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const t = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/status`);
      let n = 0;
      for (const m of t.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)/gm)) n += Number(m[1]);
      // Other threads may share the main thread's comm (deno): it is named apart.
      const name = task.name === String(pid) ? "main" : /^Name:\s+(.*)$/m.exec(t)?.[1] ?? "?";
      byThread[task.name] = {
        name,
        switches: n,
        cpuSeconds: statCpuSeconds(`${pid}/task/${task.name}`),
      };
      contextSwitches += n;
      if (task.name === String(pid)) {
        mainThreadSwitches = n;
        mainThreadWakeups = Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(t)?.[1] ?? 0);
      }
      threads++;
    } catch {
      // The thread ended between listing and reading.
    }
  }
  return {
    cpuSeconds,
    rssBytes: kb("VmRSS") * 1024,
    rssAnonBytes: kb("RssAnon") * 1024,
    rssFileBytes: kb("RssFile") * 1024,
    peakRssBytes: kb("VmHWM") * 1024,
    contextSwitches,
    mainThreadSwitches,
    mainThreadWakeups,
    byThread,
    threads,
  };
}

/** Describes the machine for RESULTS.md and the JSON document. */
export function machineInfo(): Record<string, string | number> {
  const cpuinfo = Deno.readTextFileSync("/proc/cpuinfo");
  return {
    nproc: navigator.hardwareConcurrency,
    kernel: Deno.osRelease(),
    cpu: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? "unknown",
    memTotalMiB: Math.round(Deno.systemMemoryInfo().total / 2 ** 20),
    deno: Deno.version.deno,
  };
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * Waits for `condition` polling synchronously every ~`everyMs` (fractions of a
 * millisecond) without spinning the CPU: timer callbacks are too coarse (1 ms)
 * for latencies of a few ms, and a busy loop would steal the CPU the agent
 * needs. Returns the time at which the condition was first seen true.
 */
export function pollUntil(
  what: string,
  condition: () => boolean,
  timeoutMs: number,
  everyMs = 0.05,
): number {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (condition()) return performance.now();
    if (performance.now() > deadline) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    Atomics.wait(sleeper, 0, 0, everyMs);
  }
}

/** Milliseconds as a promise, for pacing (never as synchronisation). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Context switches between two samples, per thread name: threads that exited
 * in between are left out, threads that started count from zero.
 */
export function switchesBetween(before: ProcSample, after: ProcSample): Record<string, number> {
  return byThreadName(before, after, "switches");
}

/**
 * CPU seconds between two samples, per thread name (the main thread's is `main`): threads that
 * exited in between are left out, threads that started count from zero.
 */
export function cpuBetween(before: ProcSample, after: ProcSample): Record<string, number> {
  return byThreadName(before, after, "cpuSeconds");
}

function byThreadName(
  before: ProcSample,
  after: ProcSample,
  key: "switches" | "cpuSeconds",
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [tid, t] of Object.entries(after.byThread)) {
    out[t.name] = (out[t.name] ?? 0) + t[key] - (before.byThread[tid]?.[key] ?? 0);
  }
  return out;
}
