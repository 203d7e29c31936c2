/**
 * The modules of the pure core under mutation testing: each is mutated on its
 * own and only its own unit tests run against its mutants, which keeps a run
 * short. A new pure module of the core belongs here.
 */
export interface MutationModule {
  /** Short name: the report's file name and the argument of `deno task mutate`. */
  name: string;
  /** Files whose code is mutated; `file#name` mutates only the top-level function `name`. */
  mutate: string[];
  /** Unit test files (or folders) run against each mutant. */
  tests: string[];
}

export const MODULES: MutationModule[] = [
  {
    name: "rules",
    mutate: [
      "lib/rules/targets.ts",
      "lib/rules/kinds.ts",
      "lib/rules/pod_fields.ts",
      "lib/rules/pod_network.ts",
      "lib/rules/probe_port.ts",
      "lib/rules/placement.ts",
      "lib/rules/conflicts.ts",
      "lib/rules/addresses.ts",
      "lib/rules/share.ts",
      "lib/probe/network_name.ts",
    ],
    // Every test of the folder: the rules' unit, condition and property tests; and the name rule's.
    tests: ["lib/rules/", "lib/probe/network_name_test.ts"],
  },
  {
    name: "desired-state",
    // The whole node's computation over the rules: placement at shared addresses, caps, shares.
    mutate: ["lib/rules/desired_state.ts", "lib/rules/address_placement.ts"],
    // Its own tests, the refusal at attach that places pods by the same rule and memo, and the
    // core's, which run it over a pod cache and the CNI path's attachments (fake time, no root).
    tests: [
      "lib/rules/desired_state_test.ts",
      "lib/rules/desired_state_capacity_test.ts",
      "lib/rules/desired_state_host_test.ts",
      "lib/rules/desired_state_memo_test.ts",
      "lib/rules/desired_state_sharing_test.ts",
      "lib/rules/desired_state_views_test.ts",
      "lib/rules/address_placement_test.ts",
      "lib/agent/admission/clashes_test.ts",
      "lib/agent/core_test.ts",
      "lib/agent/core_addresses_test.ts",
      "lib/agent/core_capacity_test.ts",
      "lib/agent/core_conflicts_test.ts",
      "lib/agent/core_node_network_test.ts",
    ],
  },
  {
    name: "reconcile-diff",
    // The diff only; the reconcile step and the scheduler around it have their own tests.
    mutate: ["lib/agent/reconcile.ts#diffTargets"],
    tests: ["lib/agent/reconcile_test.ts"],
  },
  {
    name: "probe-map-codec",
    // The codec and the vocabulary it encodes: addresses, keys, marks.
    mutate: ["lib/datapath/probe_map.ts", "lib/net/address.ts", "lib/probe/key.ts"],
    tests: [
      "lib/datapath/probe_map_test.ts",
      "lib/datapath/hits_test.ts",
      "lib/net/address_test.ts",
      "lib/probe/key_test.ts",
    ],
  },
  {
    name: "cni",
    mutate: [
      "lib/cni/spec.ts",
      "lib/cni/spec_env.ts",
      "lib/cni/spec_netconf.ts",
      "lib/cni/spec_result.ts",
      "lib/cni/protocol.ts",
    ],
    tests: [
      "lib/cni/spec_test.ts",
      "lib/cni/spec_env_test.ts",
      "lib/cni/spec_netconf_test.ts",
      "lib/cni/spec_result_test.ts",
      "lib/cni/protocol_test.ts",
    ],
  },
  {
    name: "netcheck",
    mutate: [
      "lib/netcheck/pairs/scheduler.ts",
      "lib/netcheck/checks/connect_result.ts",
      "lib/netcheck/checks/iperf_result.ts",
    ],
    tests: [
      "lib/netcheck/pairs/scheduler_test.ts",
      "lib/netcheck/checks/connect_result_test.ts",
      "lib/netcheck/checks/iperf_result_test.ts",
    ],
  },
  {
    name: "flags-config",
    mutate: ["lib/flags/parser.ts", "lib/flags/agent.ts", "lib/config.ts"],
    tests: [
      "lib/flags/parser_test.ts",
      "lib/flags/parser_env_test.ts",
      "lib/flags/parser_help_test.ts",
      "lib/flags/parser_values_test.ts",
      "lib/flags/agent_test.ts",
      "lib/config_test.ts",
    ],
  },
];
