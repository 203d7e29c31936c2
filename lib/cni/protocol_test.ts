import assert from "node:assert/strict";
import { AttachmentRefusedError, parseReply, parseRequest, refKey, requestId } from "./protocol.ts";

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

const add = (a: Record<string, unknown>) =>
  JSON.stringify({ v: 1, id: "a", op: "add", ref, attachment: { ...attachment, ...a } });

/** The TypeError message a request line is refused with. */
function refusal(line: string): string {
  try {
    parseRequest(line);
  } catch (e) {
    assert.ok(e instanceof TypeError, `expected a TypeError, got ${e}`);
    return e.message;
  }
  assert.fail("expected a refusal");
}

Deno.test("parseRequest() takes network ids 1 and 65535 and refuses 0, 65536 and non-integers", () => {
  for (const networkId of [1, 65535]) {
    const r = parseRequest(add({ network: "blue", networkId }));
    assert.equal(r.op === "add" && r.attachment.networkId, networkId);
  }
  for (const networkId of [0, 65536, 1.5, "7", null]) {
    assert.equal(
      refusal(add({ network: "blue", networkId })),
      `attachment.networkId must be an integer 1..65535: ${JSON.stringify(networkId)}`,
    );
  }
  assert.equal(
    refusal(add({ networkId: 7 })),
    "attachment.network must be a string of 1..253 printable characters without spaces: undefined",
  );
});

Deno.test("parseRequest() refuses a network name the annotations could not carry, as the plugin does", () => {
  for (const network of ["", "blue net", "blue\r\nred", "blue\u202e", "x".repeat(254)]) {
    assert.match(
      refusal(add({ network, networkId: 7 })),
      /^attachment\.network must be 1\.\.253 printable characters without spaces: /,
      JSON.stringify(network),
    );
  }
});

Deno.test("parseRequest() takes strings of 1024 characters and refuses 1025 or empty ones", () => {
  const long = "x".repeat(1024);
  const r = parseRequest(add({ uid: long }));
  assert.equal(r.op === "add" && r.attachment.uid, long);
  for (const uid of ["x".repeat(1025), "", 5]) {
    assert.equal(
      refusal(add({ uid })),
      "attachment.uid must be a non-empty string of at most 1024 characters",
    );
  }
});

Deno.test("parseRequest() takes 64 addresses of up to 64 characters and refuses 65 of either", () => {
  const ips64 = Array.from({ length: 64 }, (_, i) => `10.0.0.${i}`);
  const r = parseRequest(add({ ips: ips64 }));
  assert.equal(r.op === "add" && r.attachment.ips.length, 64);
  assert.equal(
    refusal(add({ ips: [...ips64, "10.0.1.0"] })),
    "attachment.ips must be a list of at most 64 addresses",
  );
  parseRequest(add({ ips: ["a".repeat(64)] }));
  assert.equal(
    refusal(add({ ips: ["a".repeat(65)] })),
    `attachment.ips holds something that is not an address: "${"a".repeat(65)}"`,
  );
});

Deno.test("parseRequest() reads del with and without a uid, and gc with its valid list", () => {
  assert.deepEqual(parseRequest(JSON.stringify({ v: 1, id: "a", op: "del", ref })), {
    v: 1,
    id: "a",
    op: "del",
    ref,
    uid: undefined,
  });
  const del = parseRequest(JSON.stringify({ v: 1, id: "a", op: "del", ref, uid: "u1" }));
  assert.equal(del.op === "del" && del.uid, "u1");
  assert.equal(
    refusal(JSON.stringify({ v: 1, id: "a", op: "del", ref, uid: "" })),
    "request.uid must be a non-empty string of at most 1024 characters",
  );
  assert.deepEqual(parseRequest(JSON.stringify({ v: 1, id: "a", op: "gc", valid: [ref] })), {
    v: 1,
    id: "a",
    op: "gc",
    valid: [ref],
  });
  assert.equal(
    refusal(JSON.stringify({ v: 1, id: "a", op: "gc", valid: {} })),
    "valid must be a list of attachments",
  );
});

Deno.test("parseRequest() names each part of a request that is not one", () => {
  const cases: [string, string][] = [
    ["[]", "Request is not a JSON object"],
    ["null", "Request is not a JSON object"],
    [
      JSON.stringify({ id: "a", op: "del", ref }),
      "Unsupported protocol version undefined: this agent speaks 1",
    ],
    [JSON.stringify({ v: 1, id: "a", op: "del", ref: [] }), "ref must be an object"],
    [
      JSON.stringify({ v: 1, id: "a", op: "add", ref, attachment: [] }),
      "attachment must be an object",
    ],
    [JSON.stringify({ v: 1, id: "a", op: "gc", valid: [ref, 3] }), "valid[1] must be an object"],
    [
      JSON.stringify({ v: 1, id: "a", op: "nope" }),
      `Unknown op "nope": expected add, check, del or gc`,
    ],
  ];
  for (const [line, message] of cases) assert.equal(refusal(line), message, line);
});

Deno.test("requestId() needs a JSON object with a string id", () => {
  assert.equal(requestId(JSON.stringify({ id: 5 })), null);
  assert.equal(requestId(JSON.stringify(["x"])), null);
  assert.equal(requestId("null"), null);
});

Deno.test("parseReply() keeps problems as text and fills a failure's missing fields", () => {
  assert.deepEqual(parseReply('{"v":1,"id":"a","ok":true,"problems":["p",2]}'), {
    v: 1,
    id: "a",
    ok: true,
    problems: ["p", "2"],
  });
  assert.deepEqual(parseReply('{"v":1,"id":7,"ok":false}'), {
    v: 1,
    id: null,
    ok: false,
    error: "Unknown agent error",
    retry: false,
  });
  assert.deepEqual(
    parseReply('{"v":1,"id":"a","ok":false,"error":"no","retry":1,"refused":true}'),
    {
      v: 1,
      id: "a",
      ok: false,
      error: "no",
      retry: false,
      refused: true,
    },
  );
  assert.throws(() => parseReply("nope"), new TypeError("Agent reply is not valid JSON"));
  assert.throws(() => parseReply('{"ok":"yes"}'), new TypeError("Agent reply has no ok field"));
  assert.throws(() => parseReply("[true]"), new TypeError("Agent reply has no ok field"));
});

Deno.test("AttachmentRefusedError is named and marked as a refusal", () => {
  const e = new AttachmentRefusedError("taken");
  assert.deepEqual([e.name, e.refused, e.message], ["AttachmentRefusedError", true, "taken"]);
});

Deno.test("parseRequest() takes a gc list of 100000 attachments and refuses 100001", () => {
  const valid = Array.from({ length: 100_000 }, () => ref);
  const gc = parseRequest(JSON.stringify({ v: 1, id: "a", op: "gc", valid }));
  assert.equal(gc.op === "gc" && gc.valid.length, 100_000);
  assert.equal(
    refusal(JSON.stringify({ v: 1, id: "a", op: "gc", valid: [...valid, ref] })),
    "valid must be a list of attachments",
  );
});

Deno.test("parseRequest() names the ref of an add that has a bad one", () => {
  assert.equal(
    refusal(JSON.stringify({ v: 1, id: "a", op: "add", ref: { containerId: "c" }, attachment })),
    "ref.ifname must be a non-empty string of at most 1024 characters",
  );
});
