/**
 * The standard process metrics of a Prometheus client (process_start_time_seconds,
 * process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds,
 * process_max_fds), read from /proc/self at scrape time only. prom-client's own
 * collector loads its whole index and reads more than it serves; this one reads three
 * small files with bounded reads and lists /proc/self/fd, once per scrape.
 */
import type { Metric, Registry } from "prom-client";
import { readBounded } from "./proc.ts";

/**
 * Clock ticks per second of /proc's times (USER_HZ): 100 on every architecture Lace runs on,
 * fixed by the kernel's ABI whatever CONFIG_HZ is (Prometheus' procfs assumes the same).
 */
const USER_HZ = 100;
/** /proc/self/stat, status and limits are a few KiB; what they say first is all that is read. */
const MAX_READ = 8 * 1024;

/** What the process metrics show, each undefined when /proc could not tell it. */
export interface ProcessStats {
  /** Unix time the process started, in seconds. */
  startTimeSeconds?: number;
  /** User and system CPU time spent, in seconds. */
  cpuSeconds?: number;
  residentBytes?: number;
  openFds?: number;
  /** The soft limit of open files. */
  maxFds?: number;
}

/**
 * The CPU ticks (user + system) and the start time in ticks since boot of a /proc/PID/stat line.
 * The command name in parentheses may hold spaces and parentheses, so the fields are counted
 * after its last `)`.
 */
export function parseStat(text: string): { cpuTicks: number; startTicks: number } | undefined {
  const close = text.lastIndexOf(")");
  if (close < 0) return undefined;
  // Field 3 (state) is the first after the name: field n is at n - 3.
  const fields = text.slice(close + 1).trim().split(/\s+/);
  const [utime, stime, start] = [fields[14 - 3], fields[15 - 3], fields[22 - 3]].map(Number);
  if (![utime, stime, start].every(Number.isSafeInteger)) return undefined;
  return { cpuTicks: utime + stime, startTicks: start };
}

/** The resident set size in bytes of /proc/PID/status (its `VmRSS:` line, in KiB). */
export function parseStatusRss(text: string): number | undefined {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(text);
  return m ? Number(m[1]) * 1024 : undefined;
}

/** The soft limit of `Max open files` in /proc/PID/limits ("unlimited" is +Inf). */
export function parseMaxOpenFiles(text: string): number | undefined {
  const m = /^Max open files\s+(\S+)/m.exec(text);
  if (!m) return undefined;
  if (m[1] === "unlimited") return Infinity;
  return /^\d+$/.test(m[1]) ? Number(m[1]) : undefined;
}

/** The seconds since boot of /proc/uptime's first figure. */
export function parseUptime(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s/.exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * A reader of a process's figures (this one's by default) from `procRoot` (/proc, or a fixture
 * shaped like it): its stat, status, limits and the entries of its fd directory. The start time
 * is fixed once read: the wall clock (`now`) less the process's age (uptime less its start).
 */
export function processStatsReader(
  pid: number | "self" = "self",
  procRoot = "/proc",
  now: () => number = Date.now,
): () => ProcessStats {
  const dir = `${procRoot}/${pid}`;
  let startTimeSeconds: number | undefined;
  return () => {
    const stats: ProcessStats = {};
    const stat = parseStat(readBounded(`${dir}/stat`, MAX_READ) ?? "");
    if (stat) {
      stats.cpuSeconds = stat.cpuTicks / USER_HZ;
      if (startTimeSeconds === undefined) {
        const uptime = parseUptime(readBounded(`${procRoot}/uptime`, 128) ?? "");
        if (uptime !== undefined) {
          const age = Math.max(0, uptime - stat.startTicks / USER_HZ);
          startTimeSeconds = Math.round((now() / 1000 - age) * USER_HZ) / USER_HZ;
        }
      }
    }
    stats.startTimeSeconds = startTimeSeconds;
    stats.residentBytes = parseStatusRss(readBounded(`${dir}/status`, MAX_READ) ?? "");
    stats.maxFds = parseMaxOpenFiles(readBounded(`${dir}/limits`, MAX_READ) ?? "");
    try {
      let n = 0;
      for (const _ of Deno.readDirSync(`${dir}/fd`)) n++;
      stats.openFds = n;
    } catch {
      // Not ours to list (a hardened /proc): the sample is left out.
    }
    for (const [key, value] of Object.entries(stats)) {
      if (value === undefined) delete stats[key as keyof ProcessStats];
    }
    return stats;
  };
}

/**
 * Registers the five process metrics in `registry`; `read` is called once per scrape (the
 * metrics are collected one after another in the same turn, and the figures are dropped when
 * it ends). A figure /proc could not give leaves its sample out.
 */
export function registerProcessMetrics(
  registry: Registry,
  read: () => ProcessStats = processStatsReader(),
): void {
  let current: ProcessStats | undefined;
  const stats = (): ProcessStats => {
    if (!current) {
      current = read();
      queueMicrotask(() => current = undefined);
    }
    return current;
  };
  // A plain metric object: prom-client's Gauge cannot leave out its one unlabelled sample.
  const metric = (
    name: string,
    type: "gauge" | "counter",
    help: string,
    pick: (s: ProcessStats) => number | undefined,
  ) => {
    const get = () => {
      const value = pick(stats());
      const values = value === undefined ? [] : [{ value, labels: {} }];
      return { name, help, type, aggregator: "sum", values };
    };
    registry.registerMetric(
      { name, help, type, labelNames: [], aggregator: "sum", get, reset() {} } as unknown as Metric,
    );
  };
  metric(
    "process_start_time_seconds",
    "gauge",
    "Start time of the process since unix epoch in seconds",
    (s) => s.startTimeSeconds,
  );
  metric(
    "process_cpu_seconds_total",
    "counter",
    "Total user and system CPU time spent in seconds",
    (s) => s.cpuSeconds,
  );
  metric(
    "process_resident_memory_bytes",
    "gauge",
    "Resident memory size in bytes",
    (s) => s.residentBytes,
  );
  metric("process_open_fds", "gauge", "Number of open file descriptors", (s) => s.openFds);
  metric("process_max_fds", "gauge", "Maximum number of open file descriptors", (s) => s.maxFds);
}
