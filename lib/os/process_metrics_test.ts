import assert from "node:assert/strict";
import process from "node:process";
import registryClass from "prom-client/lib/registry.js";
import type { Registry } from "prom-client";
import {
  parseMaxOpenFiles,
  parseStat,
  parseStatusRss,
  parseUptime,
  type ProcessStats,
  processStatsReader,
  registerProcessMetrics,
} from "./process_metrics.ts";

const RegistryClass = registryClass as typeof Registry;

/** A /proc/PID/stat line whose name holds spaces and parentheses; utime 250, stime 50, start 1200. */
const STAT = "4242 (a) b) (c d) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 " +
  "1200 123456789 2500 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 1 0 0 0 0 0\n";

Deno.test("parseStat() counts fields after the name's last parenthesis", () => {
  assert.deepEqual(parseStat(STAT), { cpuTicks: 300, startTicks: 1200 });
  assert.equal(parseStat("4242 (x"), undefined);
  assert.equal(parseStat("4242 (x) S 1"), undefined);
});

Deno.test("parseStatusRss(), parseMaxOpenFiles() and parseUptime() read their line", () => {
  assert.equal(parseStatusRss("Name:\tlace\nVmRSS:\t   61440 kB\nRssAnon:\t 1 kB\n"), 61440 * 1024);
  assert.equal(parseStatusRss("Name:\tlace\n"), undefined);
  const limits =
    "Limit                     Soft Limit           Hard Limit           Units     \n" +
    "Max processes             63448                63448                processes \n" +
    "Max open files            1024                 524288               files     \n";
  assert.equal(parseMaxOpenFiles(limits), 1024);
  assert.equal(parseMaxOpenFiles(limits.replace(/1024 /, "unlimited ")), Infinity);
  assert.equal(parseMaxOpenFiles("Max processes 1 1 processes\n"), undefined);
  assert.equal(parseUptime("350.25 1200.50\n"), 350.25);
  assert.equal(parseUptime(""), undefined);
});

/** A fixture shaped like /proc with one process, 4242, and what it gives. */
function procFixture(): string {
  const root = Deno.makeTempDirSync({ prefix: "lace-proc-self-" });
  Deno.mkdirSync(`${root}/4242/fd`, { recursive: true });
  Deno.writeTextFileSync(`${root}/4242/stat`, STAT);
  Deno.writeTextFileSync(`${root}/4242/status`, "Name:\tlace\nVmRSS:\t 2048 kB\n");
  Deno.writeTextFileSync(`${root}/4242/limits`, "Max open files  1024  4096  files\n");
  for (const fd of ["0", "1", "2"]) Deno.writeTextFileSync(`${root}/4242/fd/${fd}`, "");
  Deno.writeTextFileSync(`${root}/uptime`, "112.00 400.00\n");
  return root;
}

Deno.test("processStatsReader() reads the figures of a /proc tree and fixes the start time once", () => {
  const root = procFixture();
  try {
    let now = 1_000_000_000_000;
    const read = processStatsReader(4242, root, () => now);
    // Started at tick 1200 (12 s after boot), 112 s after boot: 100 s ago.
    assert.deepEqual(read(), {
      cpuSeconds: 3,
      startTimeSeconds: 1_000_000_000 - 100,
      residentBytes: 2048 * 1024,
      maxFds: 1024,
      openFds: 3,
    });
    // The wall clock steps: the start time stays what it was.
    now += 3_600_000;
    Deno.writeTextFileSync(`${root}/uptime`, "113.00 400.00\n");
    assert.equal(read().startTimeSeconds, 1_000_000_000 - 100);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("processStatsReader() leaves out what /proc does not give", () => {
  const root = procFixture();
  try {
    Deno.removeSync(`${root}/4242/fd`, { recursive: true });
    Deno.writeTextFileSync(`${root}/4242/status`, "Name:\tlace\n");
    Deno.removeSync(`${root}/uptime`);
    const stats = processStatsReader(4242, root)();
    assert.deepEqual(stats, { cpuSeconds: 3, maxFds: 1024 });
    assert.deepEqual(processStatsReader(4243, root)(), {});
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("processStatsReader() reads this process: its open fds, its CPU time and its memory", () => {
  const read = processStatsReader();
  const before = read();
  const file = Deno.openSync(Deno.execPath());
  try {
    assert.equal(read().openFds, before.openFds! + 1);
  } finally {
    file.close();
  }
  assert.equal(read().openFds, before.openFds);
  // Spin until the kernel's own account (getrusage) says 0.2 s more; /proc counts in 10 ms ticks.
  const cpu = process.cpuUsage();
  while (process.cpuUsage(cpu).user + process.cpuUsage(cpu).system < 200_000) Math.sqrt(2);
  assert.ok(read().cpuSeconds! >= before.cpuSeconds! + 0.15, JSON.stringify(read()));
  const rss = Deno.memoryUsage().rss, seen = read().residentBytes!;
  assert.ok(Math.abs(seen - rss) < rss * 0.1, `VmRSS ${seen}, Deno.memoryUsage() ${rss}`);
  assert.ok(before.maxFds! >= 64, `max fds ${before.maxFds}`);
});

Deno.test("processStatsReader() gives a process's start time between the clock's reads around its spawn", async () => {
  const before = Date.now() / 1000;
  const child = new Deno.Command("sleep", { args: ["30"], stdout: "null", stderr: "null" }).spawn();
  const after = Date.now() / 1000;
  try {
    const started = processStatsReader(child.pid)().startTimeSeconds!;
    // /proc counts in 10 ms ticks; the wall clock and the boot clock may stand a tick apart.
    assert.ok(started >= before - 0.02 && started <= after + 0.02, `${before} ${started} ${after}`);
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
});

Deno.test("registerProcessMetrics() reads once per scrape and leaves out a figure it lacks", async () => {
  const registry = new RegistryClass();
  let reads = 0;
  let stats: ProcessStats = {
    startTimeSeconds: 1700000000.5,
    cpuSeconds: 1.25,
    residentBytes: 50331648,
    openFds: 17,
    maxFds: 1048576,
  };
  registerProcessMetrics(registry, () => (reads++, stats));
  const text = await registry.metrics();
  assert.equal(reads, 1);
  for (
    const line of [
      "# TYPE process_start_time_seconds gauge",
      "process_start_time_seconds 1700000000.5",
      "# TYPE process_cpu_seconds_total counter",
      "process_cpu_seconds_total 1.25",
      "process_resident_memory_bytes 50331648",
      "process_open_fds 17",
      "process_max_fds 1048576",
    ]
  ) assert.ok(text.split("\n").includes(line), `${line} in\n${text}`);
  stats = { cpuSeconds: 2 };
  const second = await registry.metrics();
  assert.equal(reads, 2);
  assert.match(second, /^process_cpu_seconds_total 2$/m);
  assert.doesNotMatch(
    second,
    /^process_(open_fds|max_fds|resident_memory_bytes|start_time_seconds) /m,
  );
});
