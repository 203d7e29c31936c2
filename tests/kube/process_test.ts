import assert from "node:assert/strict";
import { ManagedProcess, tail } from "./_process.ts";
import { waitFor } from "../helpers/wait.ts";

Deno.test("a managed process's output is in its log file while the process still runs", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-process-test-" });
  const log = `${dir}/out.log`;
  const process = await ManagedProcess.spawn(
    "sh",
    ["-c", "echo to-stdout; echo to-stderr >&2; exec sleep 30"],
    log,
  );
  try {
    const text = await waitFor(async () => {
      const text = await tail(log);
      return text.includes("to-stdout") && text.includes("to-stderr") ? text : undefined;
    }, { timeout: 5000, interval: 50, message: "both lines in the log" });
    assert.equal(process.exited, undefined, `the process ended early: ${text}`);
  } finally {
    await process.stop(1000);
    await Deno.remove(dir, { recursive: true });
  }
});
