import assert from "node:assert/strict";
import { parseReply, parseRequest, refKey, requestId } from "./protocol.ts";

const ref = { containerId: "c1", ifname: "eth0" };
const attachment = { namespace: "ns", name: "web", uid: "u1", ips: ["10.0.0.1"] };

Deno.test("parseRequest() reads an add request", () => {
  const line = JSON.stringify({ v: 1, id: "a", op: "add", ref, attachment, extra: true });
  assert.deepEqual(parseRequest(line), { v: 1, id: "a", op: "add", ref, attachment });
});

Deno.test("parseRequest() keeps network and id together", () => {
  const a = { ...attachment, network: "blue", networkId: 7 };
  const r = parseRequest(JSON.stringify({ v: 1, id: "a", op: "check", ref, attachment: a }));
  assert.equal(r.op === "check" && r.attachment.networkId, 7);
  assert.throws(
    () =>
      parseRequest(JSON.stringify({
        v: 1,
        id: "a",
        op: "add",
        ref,
        attachment: { ...attachment, network: "blue" },
      })),
    /networkId/,
  );
});

Deno.test("parseRequest() rejects what is not a request with a TypeError saying why", () => {
  const bad: [unknown, RegExp][] = [
    [{ v: 1, id: "a", op: "add", ref }, /attachment must be an object/],
    [{ v: 1, op: "del", ref }, /request\.id/],
    [{ v: 3, id: "a", op: "del", ref }, /protocol version 3/],
    [{ v: 1, id: "a", op: "del", ref: { ifname: "eth0" } }, /ref\.containerId/],
    [{ v: 1, id: "a", op: "add", ref, attachment: { ...attachment, ips: [1] } }, /ips/],
    [{ v: 1, id: "a", op: "add", ref, attachment: { ...attachment, ips: "x" } }, /ips/],
    [{ v: 1, id: "a", op: "gc", valid: [{}] }, /valid\[0\]/],
    [{ v: 1, id: "a", op: 7 }, /Unknown op 7/],
  ];
  for (const [value, message] of bad) {
    assert.throws(() => parseRequest(JSON.stringify(value)), TypeError);
    assert.throws(() => parseRequest(JSON.stringify(value)), message);
  }
  assert.throws(() => parseRequest("nope"), /not valid JSON/);
});

Deno.test("requestId() recovers the id of a bad request when it has one", () => {
  assert.equal(requestId(JSON.stringify({ id: "x", op: "?" })), "x");
  assert.equal(requestId("{"), null);
});

Deno.test("parseReply() reads success, problems and errors", () => {
  assert.deepEqual(parseReply('{"v":1,"id":"a","ok":true}'), {
    v: 1,
    id: "a",
    ok: true,
    problems: undefined,
  });
  const failed = parseReply('{"v":1,"id":null,"ok":false,"error":"bad","retry":true}');
  assert.deepEqual(failed, { v: 1, id: null, ok: false, error: "bad", retry: true });
  assert.throws(() => parseReply("{}"), /no ok field/);
});

Deno.test("refKey() names an attachment by container and interface", () => {
  assert.equal(refKey(ref), "c1/eth0");
});
