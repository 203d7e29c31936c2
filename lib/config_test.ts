import assert from "node:assert/strict";
import {
  ConfigError,
  defaultConfig,
  markFor,
  networkMask,
  validateConfig,
  validateMark,
} from "./config.ts";

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
    [{ resyncMs: 10 }, /at least 1s/],
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
});
