import assert from "node:assert/strict";
import { captureConsole } from "../../tests/helpers/capture_console.ts";
import { UsageError } from "../flags/parser.ts";
import { checksText, runDoctor } from "./command.ts";
import { allReached, type ProbeReport, probesTable, requestFor } from "./probes.ts";

/** Runs runDoctor with console output captured. */
const doctor = (args: string[]) => captureConsole(() => runDoctor(args));

/** The UsageError `args` give, for the dispatcher to print with the command's name (exit 2). */
async function refused(args: string[]): Promise<string> {
  const e = await doctor(args).then(() => undefined, (e) => e);
  assert.ok(e instanceof UsageError, `${args.join(" ")} is refused as bad input`);
  return e.message;
}

Deno.test("runDoctor() refuses an unknown flag with one line", async () => {
  assert.equal(
    await refused(["--no-such-flag"]),
    "unknown flag --no-such-flag: see lace doctor --help",
  );
});

Deno.test("runDoctor() refuses an unknown subcommand and a relative kubelet cgroup", async () => {
  assert.equal(await refused(["probe"]), 'unexpected argument "probe": see lace doctor --help');
  assert.match(
    await refused(["--kubelet-cgroup", "system.slice/kubelet.service"]),
    /absolute path or "auto"/,
  );
  assert.match(
    await refused(["probes", "--timeout", "soon"]),
    /^--timeout must be a duration such as 500ms, 5s or 1m30s: "soon"$/,
  );
});

Deno.test("runDoctor() prints help with the probes and pod subcommands and exit code 0", async () => {
  const r = await doctor(["--help"]);
  assert.equal(r.code, 0);
  assert.match(r.out, /lace doctor \[probes \| pod NAMESPACE\/NAME\]/);
  assert.match(r.out, /LACE_KUBELET_CGROUP/);
  assert.doesNotMatch(r.out, /--netns/);
});

Deno.test("checksText() shows each problem with its fix and a summary", () => {
  const text = checksText([
    { name: "bpffs", ok: true, message: "mounted", fix: "", severity: "error" },
    { name: "agent-health", ok: false, message: "down", fix: "start it", severity: "error" },
    { name: "probe-targets", ok: false, message: "none", fix: "add pods", severity: "warning" },
  ], false);
  assert.match(text, /^ok {4}bpffs/m);
  assert.match(text, /^FAIL {2}agent-health +down\n +fix: start it/m);
  assert.match(text, /^WARN {2}probe-targets/m);
  assert.match(text, /1 problem\(s\) found/);
});

Deno.test("requestFor() sends an HTTP GET for httpGet targets and a bare connect otherwise", () => {
  const base = { pod: "p", networkId: 1, address: "10.0.0.1", port: 80 };
  assert.deepEqual(requestFor({ ...base, httpPath: "/healthz" }, 500), {
    host: "10.0.0.1",
    port: 80,
    timeoutMs: 500,
    http: "/healthz",
  });
  assert.equal(requestFor({ ...base, httpPath: "/", httpScheme: "HTTPS" }, 500).connectOnly, true);
  assert.equal(requestFor(base, 500).connectOnly, true);
});

Deno.test("requestFor() only connects to a lifecycle hook's target: its GET would run the hook", () => {
  const base = { pod: "p", networkId: 1, address: "10.0.0.1", port: 80, httpPath: "/drain" };
  for (const probe of ["preStop", "postStart"]) {
    assert.deepEqual(requestFor({ ...base, probe }, 500), {
      host: "10.0.0.1",
      port: 80,
      timeoutMs: 500,
      connectOnly: true,
    });
  }
  assert.equal(requestFor({ ...base, probe: "readiness" }, 500).http, "/drain");
});

Deno.test("allReached() and probesTable() summarise probe reports", () => {
  const reports: ProbeReport[] = [
    { pod: "a", networkId: 1, address: "10.0.0.1", port: 80, result: "reached", httpStatus: 200 },
    { pod: "", networkId: 2, address: "fd00::1", port: 81, result: "TIMEOUT", httpStatus: null },
  ];
  assert.equal(allReached(reports), false);
  assert.equal(allReached(reports.slice(0, 1)), true);
  const table = probesTable(reports).split("\n");
  assert.match(table[0], /^POD +NETWORK +ADDRESS +PORT +RESULT +HTTP$/);
  assert.match(table[1], /^a +1 +10\.0\.0\.1 +80 +reached +200$/);
  assert.match(table[2], /^- +2 +fd00::1 +81 +TIMEOUT +-$/);
});

Deno.test("runDoctor() refuses doctor pod without NAMESPACE/NAME, saying how to name it", async () => {
  assert.equal(
    await refused(["pod", "web"]),
    'pod needs NAMESPACE/NAME, got "web": name it as in default/web',
  );
});
