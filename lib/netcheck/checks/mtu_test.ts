import assert from "node:assert/strict";
import {
  fullUdpPayload,
  mssCommand,
  MTU_PAYLOADS,
  mtuCommand,
  mtuVerdict,
  parseMtu,
  parseTcpTransfer,
  parseUdpDatagrams,
  segmentSize,
  udpCommand,
  udpLargest,
  udpMtuVerdict,
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

// What iperf3 3.12 printed as uid 65534 before its JSON (seen in the feasibility run).
const NOISE =
  "iperf3: warning: UDP block size 1472 exceeds TCP MSS 0, may result in fragmentation / drops\n";
const udpOut = (doc: unknown, stdoutPrefix = "", stderr = NOISE) => ({
  exitCode: 0,
  stdout: stdoutPrefix + JSON.stringify(doc) + "\n",
  stderr,
});
const udpDoc = (sent: number, received: number) => ({
  start: {},
  end: { sum_sent: { packets: sent }, sum_received: { packets: received, lost_packets: 0 } },
});

Deno.test("udpCommand(): datagrams of the size given with don't-fragment on IPv4, without on IPv6 (iperf3's flag is IPv4 only)", () => {
  const v4 = udpCommand("10.0.0.2", 5201, 1472, 3000);
  assert.deepEqual(v4.slice(0, 8), ["iperf3", "-c", "10.0.0.2", "-p", "5201", "-u", "-l", "1472"]);
  assert.ok(v4.includes("--dont-fragment"));
  assert.equal(v4[v4.indexOf("-t") + 1], "1");
  assert.equal(v4[v4.indexOf("--connect-timeout") + 1], "3000");
  assert.equal(v4.at(-1), "-J");
  assert.ok(!udpCommand("fd00::2", 5201, 1452, 3000).includes("--dont-fragment"));
  assert.equal(fullUdpPayload(1500, false), 1472);
  assert.equal(fullUdpPayload(1450, true), 1402);
  assert.equal(fullUdpPayload(undefined, false), 1472);
});

Deno.test("parseUdpDatagrams(): received datagrams pass, none of those sent is lost, warnings before the JSON are skipped", () => {
  assert.deepEqual(parseUdpDatagrams(udpOut(udpDoc(92, 92), NOISE, ""), 200), {
    size: 200,
    passed: true,
  });
  assert.deepEqual(parseUdpDatagrams(udpOut(udpDoc(85, 0)), 1472), {
    size: 1472,
    passed: false,
    detail: "received 0 of 85 datagrams",
  });
  // lost_packets stays 0 in iperf3 3.12 when nothing arrives: not read.
  assert.equal(parseUdpDatagrams(udpOut(udpDoc(85, 3)), 1472).passed, true);
  const tooLong = parseUdpDatagrams(
    udpOut({
      start: {},
      end: {},
      error: "error - unable to write to stream socket: Message too long",
    }),
    1472,
  );
  assert.equal(tooLong.passed, false, "DF set and a route MTU below the datagram");
  assert.match(tooLong.detail!, /Message too long/);
});

Deno.test("parseUdpDatagrams(): a busy server, a failed exec, no JSON or forged counts decide nothing", () => {
  const undecided = [
    udpOut({ start: {}, end: {}, error: "the server is busy running a test. try again later" }),
    { exitCode: -1, stdout: "", stderr: "", error: "pod gone" },
    { exitCode: 1, stdout: "", stderr: NOISE + "iperf3: error - unable to connect\n" },
    udpOut({ start: {}, end: { sum_sent: { packets: 0 }, sum_received: { packets: 0 } } }),
    udpOut({ start: {}, end: { sum_sent: { packets: 9 }, sum_received: { packets: -1 } } }),
    udpOut({ start: {}, end: { sum_sent: { packets: 9 }, sum_received: { packets: "1" } } }),
    udpOut({ start: {}, end: { sum_received: { packets: 0 } } }),
  ];
  for (const r of undecided) assert.equal(parseUdpDatagrams(r, 1472).passed, undefined);
  assert.match(parseUdpDatagrams(undecided[1], 1472).detail!, /^exec failed: pod gone/);
});

const lost = { size: 1472, passed: false, detail: "received 0 of 85 datagrams" };
const through = (size: number) => ({ size, passed: true });

Deno.test("udpMtuVerdict(): small datagrams through, full-size lost fails as MTU naming UDP and the size", () => {
  const payloads = parseMtu(out("1500", [true, true, true, true]));
  const v = udpMtuVerdict(payloads, { full: lost, small: through(200) }, false);
  assert.ok(!v.ok && v.errorClass === "MTU");
  assert.equal(
    !v.ok && v.message,
    "payloads up to 16000 B pass over TCP (pod eth0 MTU 1500) and a 200 B UDP datagram passes, " +
      "but a full-size 1472 B one with don't-fragment (1500 B packets) does not (received 0 of 85 " +
      "datagrams): full-size UDP datagrams are lost on this path, an MTU black hole; lower the pod " +
      "MTU below the path's",
  );
  assert.equal(v.largest, 16000);
  assert.equal(udpLargest({ full: lost, small: through(200) }), 200);
  // IPv6: 48 B of headers, no don't-fragment flag.
  const v6 = udpMtuVerdict(payloads, { full: { ...lost, size: 1452 }, small: through(200) }, true);
  assert.match(!v6.ok ? v6.message : "", /a full-size 1452 B one \(1500 B packets\) does not/);
  // A TCP black hole already found gets the UDP finding appended.
  const tcpLost = parseMtu(out("1500", [true, false, false, false]));
  const both = udpMtuVerdict(tcpLost, { full: lost, small: through(200) }, false);
  assert.match(
    !both.ok ? both.message : "",
    /; a 200 B UDP datagram passes but a full-size 1472 B one/,
  );
});

Deno.test("udpMtuVerdict(): full-size through, nothing through or nothing measured leaves the verdict", () => {
  const payloads = parseMtu(out("1500", [true, true, true, true]));
  const unmeasured = { size: 1472, passed: undefined, detail: "iperf3: the server is busy" };
  for (
    const udp of [
      { full: through(1472) },
      { full: lost, small: { size: 200, passed: false, detail: "received 0 of 600 datagrams" } },
      { full: unmeasured },
      { full: lost, small: { ...unmeasured, size: 200 } },
    ]
  ) {
    assert.deepEqual(udpMtuVerdict(payloads, udp, false), payloads);
  }
  assert.equal(udpLargest({ full: through(1472) }), 1472);
  assert.equal(udpLargest({ full: unmeasured }), undefined);
});
