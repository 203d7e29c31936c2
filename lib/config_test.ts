import assert from "node:assert/strict";
import {
  ConfigError,
  defaultConfig,
  DURATION_BOUNDS,
  markFor,
  networkMask,
  validateConfig,
  validateMark,
} from "./config.ts";
import { MAX_TIMER_MS } from "./duration.ts";

Deno.test("markFor() puts the probe flag and the network id in the contract's places", () => {
  const c = { probeMark: 0x1000, markShift: 16 };
  assert.equal(markFor(c, 1), 0x11000);
  assert.equal(markFor(c, 0xffff), 0xffff1000);
  assert.equal(markFor({ probeMark: 0x1, markShift: 8 }, 0x12), 0x1201);
});

Deno.test("markFor() refuses network ids outside 1..65535", () => {
  for (const id of [0, -1, 65536, 1.5, NaN]) {
    assert.throws(() => markFor({ probeMark: 0x1000, markShift: 16 }, id), RangeError);
  }
});

Deno.test("networkMask() covers exactly 16 bits above the shift", () => {
  assert.equal(networkMask({ markShift: 16 }), 0xffff0000);
  assert.equal(networkMask({ markShift: 0 }), 0xffff);
});

Deno.test("validateMark() refuses overlapping, empty and overflowing layouts", () => {
  assert.throws(() => validateMark(0x10000, 16), /overlaps/);
  assert.throws(() => validateMark(0x1000, 4), /overlaps/);
  assert.throws(() => validateMark(0, 16), /non-zero/);
  assert.throws(() => validateMark(0x1_0000_0000, 16), /32-bit/);
  assert.throws(() => validateMark(0x1, 17), /0\.\.16/);
  validateMark(0x1000, 16);
  validateMark(0x80000000, 8);
});

Deno.test("validateConfig() names the bad value", () => {
  const base = { ...defaultConfig(), nodeName: "n1" };
  validateConfig(base);
  const bad: [Partial<typeof base>, RegExp][] = [
    [{ pinPath: "relative" }, /Pin path must be absolute: "relative"/],
    [{ kubeletCgroup: "kubelet.service" }, /absolute path or "auto"/],
    [{ nodeName: "" }, /Node name is required/],
    [{ useApi: false, podsDir: "" }, /No pod source/],
    [{ metricsAddr: "9808" }, /host:port/],
    [{ resyncMs: 10 }, /Resync interval must be 1s\.\.24h: 10ms/],
    [{ resyncMs: 600 * 3_600_000 }, /Resync interval must be 1s\.\.24h: 600h/],
    [{ debounceMs: 2 * 60_000 }, /Debounce must be 0s\.\.1m: 2m/],
    [{ watchLivenessMs: 2 * 3_600_000 }, /Watch liveness interval must be 1s\.\.1h: 2h/],
    [{ metricsAddr: "127.0.0.1:99999" }, /port must be 1\.\.65535/],
    [{ metricsAddr: "127.0.0.1:0" }, /port must be 1\.\.65535/],
    [{ cniSocket: "relative/path" }, /CNI socket must be an absolute path/],
    [{ hostCgroupRoot: "host" }, /Host root prefix must be an absolute path/],
    [{ networkAnnotation: "bad key!" }, /not a valid annotation key/],
  ];
  for (const [patch, re] of bad) {
    assert.throws(() => validateConfig({ ...base, ...patch }), (e: Error) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, re);
      return true;
    });
  }
  validateConfig({ ...base, kubeletCgroup: "auto", metricsAddr: "[::1]:9808" });
  validateConfig({ ...base, metricsAddr: "", cniSocket: "", hostCgroupRoot: "/host" });
});

Deno.test("validateConfig() reports every bad value at once", () => {
  const bad = {
    ...defaultConfig(),
    nodeName: "",
    pinPath: "relative",
    metricsAddr: "localhost:65536",
    watchLivenessMs: 0,
  };
  assert.throws(() => validateConfig(bad), (e: Error) => {
    assert.ok(e instanceof ConfigError);
    assert.equal(e.problems.length, 4, e.message);
    assert.deepEqual(e.message.split("\n"), e.problems);
    return true;
  });
});

Deno.test("every duration bound stays below the longest a timer can wait", () => {
  for (const [key, { max }] of Object.entries(DURATION_BOUNDS)) {
    assert.ok(max <= MAX_TIMER_MS, key);
  }
});
