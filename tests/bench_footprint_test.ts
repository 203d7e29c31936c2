/**
 * The footprint figure's RSS split (bench/system.ts, bench/footprint.ts): anonymous and
 * file-backed pages read for a live process, and the API agent's stretch goal judged with what
 * its RSS is made of.
 */
import assert from "node:assert/strict";
import { rssStretchGoal } from "../bench/footprint.ts";
import { sampleProcess } from "../bench/system.ts";

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
