/** The test API server: import everything from here. */
export * from "./server.ts";
export type { Route } from "./routing.ts";
export * from "./store.ts";
export { timestamp } from "./object_rules.ts";
export type { ChangeType, Watcher, WatchEvent } from "./watch_hub.ts";
export * from "./resources.ts";
export * from "./status.ts";
export * from "./selectors.ts";
export * from "./patch.ts";
export * from "./validation.ts";
