import assert from "node:assert/strict";
import { FairQueue } from "./fair_queue.ts";
import { forAll } from "../../tests/helpers/property.ts";

/** Pushes `lane:n` items under their own keys; returns the outcomes. */
function pushAll(queue: FairQueue<string>, items: string[]): string[] {
  return items.map((item) => queue.push(item.split(":")[0], item, item).outcome);
}

function drain(queue: FairQueue<string>): string[] {
  const out: string[] = [];
  for (let item; (item = queue.shift()) !== undefined;) out.push(item);
  return out;
}

Deno.test("FairQueue serves lanes round robin, each lane in order", () => {
  const queue = new FairQueue<string>({ capacity: 100, laneCapacity: 100 });
  pushAll(queue, ["a:1", "a:2", "a:3", "a:4", "b:1", "c:1", "b:2"]);
  assert.deepEqual(drain(queue), ["a:1", "b:1", "c:1", "a:2", "b:2", "a:3", "a:4"]);
  assert.equal(queue.size, 0);
  assert.equal(queue.lanes, 0);
});

Deno.test("FairQueue refuses an item whose lane is full and keeps other lanes open", () => {
  const queue = new FairQueue<string>({ capacity: 100, laneCapacity: 2 });
  assert.deepEqual(pushAll(queue, ["a:1", "a:2", "a:3", "b:1"]), [
    "queued",
    "queued",
    "lane-full",
    "queued",
  ]);
  queue.shift();
  assert.equal(queue.push("a", "a:4", "a:4").outcome, "queued", "a lane that was served has room");
});

Deno.test("FairQueue, when full, lets a shorter lane displace the newest item of the longest", () => {
  const queue = new FairQueue<string>({ capacity: 4, laneCapacity: 3 });
  pushAll(queue, ["a:1", "a:2", "a:3", "b:1"]);
  const admitted = queue.push("c", "c:1", "c:1");
  assert.deepEqual(admitted, { outcome: "queued", displaced: "a:3" });
  assert.equal(queue.size, 4);
  // a, b and c now hold 2, 1 and 1: b displaces a's newest (2 > 1); then b is the longest, and
  // its own newcomer has nothing to displace.
  assert.deepEqual(queue.push("b", "b:2", "b:2"), { outcome: "queued", displaced: "a:2" });
  assert.deepEqual(queue.push("b", "b:3", "b:3"), { outcome: "queue-full" });
  assert.deepEqual(drain(queue), ["a:1", "b:1", "c:1", "b:2"]);
});

Deno.test("FairQueue hands back the waiting item of a key until it is served", () => {
  const queue = new FairQueue<{ n: number }>({ capacity: 10, laneCapacity: 10 });
  const item = { n: 1 };
  queue.push("a", "k", item);
  assert.equal(queue.waiting("k"), item);
  assert.throws(
    () => queue.push("a", "k", { n: 2 }),
    new RangeError(`An item of key "k" is already waiting`),
  );
  queue.shift();
  assert.equal(queue.waiting("k"), undefined);
  assert.equal(queue.push("a", "k", { n: 3 }).outcome, "queued");
});

/** How many items of each lane are in `waiting`. */
function laneLengths(waiting: Set<string>): Map<string, number> {
  const lengths = new Map<string, number>();
  for (const item of waiting) {
    const lane = item.split(":")[0];
    lengths.set(lane, (lengths.get(lane) ?? 0) + 1);
  }
  return lengths;
}

Deno.test("FairQueue never holds more than its capacity or a lane more than its share, displaces only from a longest lane, and loses nothing else", () => {
  forAll({ seed: 31, runs: 200 }, (random) => {
    const capacity = random.int(1, 20);
    const laneCapacity = random.int(1, 8);
    const queue = new FairQueue<string>({ capacity, laneCapacity });
    const waiting = new Set<string>();
    let pushed = 0;
    for (let step = 0; step < 200; step++) {
      if (random.chance(0.35)) {
        const item = queue.shift();
        if (item !== undefined) assert.ok(waiting.delete(item), `${item} was served twice`);
      } else {
        const lane = String(random.int(0, 6));
        const item = `${lane}:${pushed++}`;
        const lengths = laneLengths(waiting);
        const own = lengths.get(lane) ?? 0;
        const longest = Math.max(0, ...lengths.values());
        const full = waiting.size >= capacity;
        const { outcome, displaced } = queue.push(lane, item, item);
        if (outcome === "queued") waiting.add(item);
        if (displaced !== undefined) {
          assert.ok(waiting.delete(displaced));
          const from = displaced.split(":")[0];
          assert.equal(lengths.get(from), longest, `displaced from ${from}, not a longest lane`);
          assert.ok(longest > own, `displaced from a lane of ${longest} for one of ${own}`);
        }
        assert.equal(outcome === "lane-full", own >= laneCapacity, `${outcome} at ${own}`);
        if (outcome !== "lane-full") {
          assert.equal(outcome === "queue-full", full && longest <= own, `${outcome}`);
          assert.equal(displaced !== undefined, full && longest > own, "displaced");
        }
      }
      assert.equal(queue.size, waiting.size);
      assert.ok(queue.size <= capacity, `${queue.size} waiting, capacity ${capacity}`);
    }
    const served = drain(queue);
    assert.deepEqual(new Set(served), waiting, "what was queued and not displaced is served");
    const perLane = Map.groupBy(served, (item) => item.split(":")[0]);
    for (const [lane, items] of perLane) {
      assert.ok(items.length <= laneCapacity, `lane ${lane} held ${items.length}`);
    }
  });
});
