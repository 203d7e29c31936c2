import assert from "node:assert/strict";
import { chooseHost, FIRST_HOST, LAST_HOST } from "./ipam.ts";

Deno.test("chooseHost() starts at the first host of a fresh network", () => {
  assert.equal(chooseHost({ byContainer: {} }), FIRST_HOST);
});

Deno.test("chooseHost() continues after the last host handed out, also once it is released", () => {
  // A refused ADD is released by DEL: the retry gets the next address, not the same one.
  assert.equal(chooseHost({ byContainer: {}, last: FIRST_HOST }), FIRST_HOST + 1);
  assert.equal(chooseHost({ byContainer: { a: 12 }, last: 11 }), 13);
});

Deno.test("chooseHost() wraps around and skips hosts in use", () => {
  assert.equal(chooseHost({ byContainer: { a: FIRST_HOST }, last: LAST_HOST }), FIRST_HOST + 1);
  const full: Record<string, number> = {};
  for (let host = FIRST_HOST; host <= LAST_HOST; host++) full[`c${host}`] = host;
  assert.equal(chooseHost({ byContainer: full, last: 20 }), undefined);
});

Deno.test("chooseHost() gives a requested host only if it is valid and free", () => {
  assert.equal(chooseHost({ byContainer: {}, last: 40 }, 200), 200);
  assert.equal(chooseHost({ byContainer: { a: 200 } }, 200), undefined);
  assert.equal(chooseHost({ byContainer: {} }, 3), undefined);
  assert.equal(chooseHost({ byContainer: {} }, 10.5), undefined);
});
