import assert from "node:assert/strict";
import { MTU_PAYLOADS, mtuCommand, parseMtu } from "./mtu.ts";

const out = (mtu: string, passed: boolean[]) => ({
  exitCode: 0,
  stderr: "",
  stdout: `${mtu}\n\nLACE 000 5\n` +
    MTU_PAYLOADS.map((n, i) => passed[i] ? `\nLACE 200 ${n}\n` : "\nLACE 000 0\n").join(""),
});

Deno.test("mtuCommand() reads the pod MTU to stdout, then discards each payload's answer", () => {
  const cmd = mtuCommand("http://10.0.0.2:1199", 2000);
  assert.deepEqual(cmd.slice(cmd.indexOf("--output"), cmd.indexOf("--output") + 3), [
    "--output",
    "-",
    "file:///sys/class/net/eth0/mtu",
  ]);
  const urls = cmd.filter((a) => a.startsWith("http://"));
  assert.deepEqual(urls.map((u) => u.length - u.indexOf("msg=") - 4), MTU_PAYLOADS);
  assert.equal(cmd.filter((a) => a === "/dev/null").length, MTU_PAYLOADS.length);
});

Deno.test("parseMtu(): all payloads whole pass with the pod MTU", () => {
  assert.deepEqual(parseMtu(out("1450", [true, true, true, true])), {
    ok: true,
    largest: 16000,
    podMtu: 1450,
  });
});

Deno.test("parseMtu(): small through, large lost is an MTU black hole naming the largest size", () => {
  const r = parseMtu(out("1500", [true, true, false, false]));
  assert.ok(!r.ok);
  assert.equal(r.errorClass, "MTU");
  assert.equal(r.largest, 1400);
  assert.match(r.message, /largest through 1400 B \(pod eth0 MTU 1500\)/);
});

Deno.test("parseMtu(): nothing through is not an MTU verdict; a short output is BAD_ANSWER", () => {
  const none = parseMtu(out("1500", [false, false, false, false]));
  assert.equal(none.ok ? "" : none.errorClass, "UNKNOWN");
  const short = parseMtu({ exitCode: 0, stdout: "1500\nLACE 000 5\n", stderr: "" });
  assert.equal(short.ok ? "" : short.errorClass, "BAD_ANSWER");
});
