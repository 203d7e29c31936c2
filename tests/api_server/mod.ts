/** The test API server: import everything from here. */
export * from "./server.ts";
export * from "./store.ts";
export * from "./resources.ts";
export * from "./status.ts";
export * from "./selectors.ts";
export * from "./patch.ts";
export * from "./validation.ts";
