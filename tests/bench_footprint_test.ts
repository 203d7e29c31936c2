/**
 * The footprint figure's RSS split and CPU by thread (bench/system.ts, bench/footprint.ts):
 * anonymous and file-backed pages, and each thread's CPU, read for a live process, and the API
 * agent's stretch goal judged with what its RSS is made of.
 */
import assert from "node:assert/strict";
import { byThreadText, rssStretchGoal } from "../bench/footprint.ts";
import { cpuBetween, sampleProcess } from "../bench/system.ts";

Deno.test("a process's RSS is read as anonymous and file-backed pages that add up to it", () => {
  const MiB = 2 ** 20;
  const before = sampleProcess(Deno.pid);
  const ballast = new Uint8Array(64 * MiB).fill(1); // anonymous pages, touched
  const after = sampleProcess(Deno.pid);
  const grew = (k: "rssAnonBytes" | "rssFileBytes") => (after[k] - before[k]) / MiB;
  assert.ok(grew("rssAnonBytes") >= 60, `anonymous grew ${grew("rssAnonBytes")} MiB`);
  assert.ok(Math.abs(grew("rssFileBytes")) < 16, `file-backed grew ${grew("rssFileBytes")} MiB`);
  // This process is a deno: its code pages are file-backed.
  assert.ok(after.rssFileBytes > MiB, `file-backed ${after.rssFileBytes}`);
  // RssShmem is the rest, a few pages at most; the three are read from one status file.
  const rest = after.rssBytes - after.rssAnonBytes - after.rssFileBytes;
  assert.ok(rest >= 0 && rest < MiB, `RSS ${after.rssBytes} − anon − file = ${rest}`);
  assert.equal(ballast[ballast.length - 1], 1);
});

Deno.test("the API agent's 80 MB stretch is judged in decimal MB and a miss says what the RSS is", () => {
  const all = [
    { name: "bareDeno", label: "empty", rssMiB: 36, rssAnonMiB: 10, rssFileMiB: 26 },
    { name: "denoLaceClient", label: "client", rssMiB: 64, rssAnonMiB: 30, rssFileMiB: 34 },
    { name: "agentApi", label: "lace agent, API", rssMiB: 91, rssAnonMiB: 45, rssFileMiB: 46 },
  ];
  const missed = rssStretchGoal(all[2], all, 60);
  assert.equal(missed.met, false);
  assert.equal(missed.name, "lace agent, API: RSS after 60 s idle, stretch");
  assert.equal(missed.target, "≤ 80 MB");
  assert.equal(missed.measured, "95.4 MB"); // 91 MiB
  assert.match(missed.reason!, /^the agent 45 anonymous \+ 46 file-backed MiB; /);
  assert.match(missed.reason!, /client's bundle in a bare deno 30 anonymous \+ 34 file-backed/);
  assert.match(missed.reason!, /an empty script 10 anonymous \+ 26 file-backed MiB/);

  // 76 MiB is 79.7 MB: met, with no reason.
  const met = rssStretchGoal({ ...all[2], rssMiB: 76 }, all, 60);
  assert.equal(met.met, true);
  assert.equal(met.reason, undefined);
});

Deno.test("CPU is read per thread, the main thread named apart from threads sharing its name", async () => {
  // A `deno run` of its own: under `deno test` the test's JavaScript runs on a runtime thread.
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      // Spins until its own thread has spent 0.4 s of CPU, however busy the machine.
      `const cpu = () => { const f = Deno.readTextFileSync("/proc/thread-self/stat")
        .split(") ")[1].split(" "); return (Number(f[11]) + Number(f[12])) / 100; };
      console.log("start"); await new Promise((r) => setTimeout(r, 100)); const t0 = cpu();
      while (cpu() - t0 < 0.4); console.log("done"); await new Promise((r) => setTimeout(r, 10_000));`,
    ],
    stdout: "piped",
  }).spawn();
  try {
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    const until = async (word: string) => {
      while (!seen.includes(word)) seen += (await lines.read()).value ?? "";
    };
    await until("start");
    const before = sampleProcess(child.pid);
    await until("done"); // 0.4 s of CPU on its main thread
    const byThread = cpuBetween(before, sampleProcess(child.pid));
    lines.releaseLock();
    assert.ok(byThread.main >= 0.3, JSON.stringify(byThread));
    const others = Object.entries(byThread).filter(([name]) => name !== "main");
    const elsewhere = others.reduce((sum, [, s]) => sum + s, 0);
    assert.ok(elsewhere < 0.1, `other threads spent ${elsewhere} s: ${JSON.stringify(byThread)}`);
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await child.stdout.cancel().catch(() => {});
  }
});

Deno.test("a per-thread figure is shown as its three largest, or none", () => {
  assert.equal(
    byThreadText({ "V8 DefaultWorke": 0.01, main: 0.25, deno: 0.004, tokio: 0.02 }, "%"),
    "main 0.250%, tokio 0.020%, V8 DefaultWorke 0.010%",
  );
  assert.equal(byThreadText({}, "/s"), "none");
});
