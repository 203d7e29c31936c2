import assert from "node:assert/strict";
import {
  mssCommand,
  MTU_PAYLOADS,
  mtuCommand,
  mtuVerdict,
  parseMtu,
  parseTcpTransfer,
  segmentSize,
} from "./mtu.ts";

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

const iperf = (doc: unknown, exitCode = 0) => ({
  exitCode,
  stdout: JSON.stringify(doc) + "\n",
  stderr: "",
});
const BLACK_HOLE = {
  start: { tcp_mss_default: 1448 },
  end: {},
  error: "unable to write to stream socket: Connection timed out",
};

Deno.test("mssCommand() sends 1 MiB with iperf3, giving up on unacknowledged data after the timeout", () => {
  const cmd = mssCommand("fd00::2", 5201, 3000);
  assert.deepEqual(cmd.slice(0, 7), ["iperf3", "-c", "fd00::2", "-p", "5201", "-n", "1048576"]);
  assert.equal(cmd[cmd.indexOf("--snd-timeout") + 1], "3000");
  assert.ok(cmd.includes("-J"));
});

Deno.test("parseTcpTransfer(): every byte received passes with the connection's MSS", () => {
  assert.deepEqual(
    parseTcpTransfer(
      iperf({ start: { tcp_mss_default: 1448 }, end: { sum_received: { bytes: 1 << 20 } } }),
    ),
    { mss: 1448, transferred: true },
  );
});

Deno.test("parseTcpTransfer(): a send timing out on a made connection is a lost full-size transfer", () => {
  const t = parseTcpTransfer(iperf(BLACK_HOLE, 1));
  assert.equal(t.mss, 1448);
  assert.equal(t.transferred, false);
  assert.match(t.detail!, /Connection timed out/);
});

Deno.test("parseTcpTransfer(): a busy or unreachable server or a failed exec decides nothing", () => {
  for (
    const r of [
      iperf({ start: { tcp_mss_default: 1448 }, error: "the server is busy running a test" }, 1),
      iperf({ start: {}, error: "unable to connect to server: Connection refused" }, 1),
      { exitCode: -1, stdout: "", stderr: "", error: "container not found" },
      { exitCode: 127, stdout: "", stderr: "iperf3: not found" },
    ]
  ) {
    assert.equal(parseTcpTransfer(r).transferred, undefined, JSON.stringify(r));
  }
});

Deno.test("parseTcpTransfer(): an MSS that is not a whole number in 1..65535 is not read", () => {
  for (const mss of ["1448", 1e9, -1, 1448.5, 0, null]) {
    const t = parseTcpTransfer(iperf({ ...BLACK_HOLE, start: { tcp_mss_default: mss } }, 1));
    assert.equal(t.mss, undefined, String(mss));
    // Without an MSS a timeout is not known to be on a made connection.
    assert.equal(t.transferred, undefined);
  }
  const short = parseTcpTransfer(
    iperf({ start: { tcp_mss_default: 1448 }, end: { sum_received: { bytes: 1000 } } }),
  );
  assert.equal(short.transferred, undefined, "a short count is not a pass");
});

Deno.test("mtuVerdict(): payloads through but the full-size TCP transfer lost fails as MTU naming the MSS", () => {
  const payloads = parseMtu(out("1500", [true, true, true, true]));
  const v = mtuVerdict(payloads, parseTcpTransfer(iperf(BLACK_HOLE, 1)), false);
  assert.equal(v.ok, false);
  assert.ok(!v.ok && v.errorClass === "MTU");
  assert.match(
    !v.ok ? v.message : "",
    /^payloads up to 16000 B pass \(pod eth0 MTU 1500\), but a 1024 KiB TCP transfer does not \(iperf3: unable to write to stream socket: Connection timed out\); the connection's MSS is 1448 B \(segments of 1488 B and more\)/,
  );
  assert.equal(v.largest, 16000);
});

Deno.test("mtuVerdict(): a payload black hole names the MSS's segment size (IPv6 headers are 20 B larger)", () => {
  const payloads = parseMtu(out("1500", [true, false, false, false]));
  const v = mtuVerdict(payloads, parseTcpTransfer(iperf(BLACK_HOLE, 1)), true);
  assert.match(
    !v.ok ? v.message : "",
    /largest through 200 B \(pod eth0 MTU 1500\).*; the connection's MSS is 1448 B \(segments of 1508 B and more\)$/,
  );
});

Deno.test("mtuVerdict(): a transfer that was not measured leaves the payloads' verdict", () => {
  const payloads = parseMtu(out("1500", [true, true, true, true]));
  const busy = parseTcpTransfer(iperf({ error: "the server is busy running a test" }, 1));
  assert.deepEqual(mtuVerdict(payloads, busy, false), payloads);
  assert.equal(segmentSize(1448, false), 1488);
});
