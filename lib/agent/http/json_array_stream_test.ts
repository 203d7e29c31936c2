import assert from "node:assert/strict";
import { jsonArrayResponse } from "./json_array_stream.ts";
import { manyTargets } from "./_targets_fixture.ts";

/** Chunks by item count alone, however slow the machine. */
const NO_TIME_LIMIT = { ms: Infinity, now: () => 0 };

Deno.test("jsonArrayResponse() lets timers run between its chunks", async () => {
  let fired = false;
  const res = jsonArrayResponse(manyTargets(2000), 100, 100, NO_TIME_LIMIT);
  setTimeout(() => fired = true, 0);
  const reader = res.body!.getReader();
  let chunks = 0;
  let firedBeforeLast = false;
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    chunks++;
    if (chunks === 19) firedBeforeLast = fired;
  }
  assert.equal(chunks, 21, "2000 items in chunks of 100, and the closing bracket");
  assert.ok(firedBeforeLast, "a timer set when the answer started ran before its last chunk");
});

Deno.test("jsonArrayResponse() writes, byte for byte, the document JSON.stringify writes", async () => {
  const targets = [...manyTargets(1234), { ...manyTargets(1)[0], pod: 'ns/\u2028"q"', hits: 0 }];
  for (const [perChunk, perPiece] of [[100, 100], [100, 7], [512, 64], [1, 1]]) {
    const streamed = await jsonArrayResponse(targets, perChunk, perPiece).text();
    assert.equal(streamed, JSON.stringify(targets), `chunks of ${perChunk}, pieces of ${perPiece}`);
  }
  const promised = await jsonArrayResponse(Promise.resolve(targets), 100, 7).text();
  assert.equal(promised, JSON.stringify(targets), "items given as a promise");
  async function* oneByOne() {
    yield* targets;
  }
  assert.equal(await jsonArrayResponse(oneByOne(), 100, 7).text(), JSON.stringify(targets));
});

Deno.test("jsonArrayResponse() hands a chunk over in pieces of at most perPiece items", async () => {
  const reader = jsonArrayResponse(manyTargets(300), 100, 40, NO_TIME_LIMIT).body!.getReader();
  const counts: number[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    counts.push(new TextDecoder().decode(r.value).split('"family"').length - 1);
  }
  // Three chunks of 40 + 40 + 20, then the closing bracket alone.
  assert.deepEqual(counts, [40, 40, 20, 40, 40, 20, 40, 40, 20, 0]);
});

Deno.test("jsonArrayResponse() writes an empty list as []", async () => {
  assert.deepEqual(await jsonArrayResponse([]).json(), []);
});

Deno.test("jsonArrayResponse() ends a chunk once its time budget is spent", async () => {
  // A clock that advances 1 ms per reading: with a 3 ms budget a chunk holds 3 items.
  let t = 0;
  const budget = { ms: 3, now: () => t++ };
  const reader = jsonArrayResponse(manyTargets(10), 100, 100, budget).body!.getReader();
  const counts: number[] = [];
  let text = "";
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    const piece = new TextDecoder().decode(r.value);
    text += piece;
    counts.push(piece.split('"family"').length - 1);
  }
  assert.deepEqual(counts, [3, 3, 3, 1]);
  assert.equal(text, JSON.stringify(manyTargets(10)));
});
