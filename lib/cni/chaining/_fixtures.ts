/**
 * CNI configuration files as network plugins install them (trimmed of
 * site-specific values), for the chaining tests: the exact bytes matter, since
 * restoring must give them back byte for byte.
 */

/** Flannel's kube-flannel.yml cni-conf.json, as its init container copies it. */
export const FLANNEL = `{
  "name": "cbr0",
  "cniVersion": "0.3.1",
  "plugins": [
    {
      "type": "flannel",
      "delegate": {
        "hairpinMode": true,
        "isDefaultGateway": true
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      }
    }
  ]
}
`;

/** Calico's 10-calico.conflist, as calico-node's install-cni renders it. */
export const CALICO = `{
  "name": "k8s-pod-network",
  "cniVersion": "0.3.1",
  "plugins": [
    {
      "type": "calico",
      "log_level": "info",
      "log_file_path": "/var/log/calico/cni/cni.log",
      "datastore_type": "kubernetes",
      "nodename": "node-1",
      "mtu": 0,
      "ipam": {
          "type": "calico-ipam"
      },
      "policy": {
          "type": "k8s"
      },
      "kubernetes": {
          "kubeconfig": "/etc/cni/net.d/calico-kubeconfig"
      }
    },
    {
      "type": "portmap",
      "snat": true,
      "capabilities": {"portMappings": true}
    },
    {
      "type": "bandwidth",
      "capabilities": {"bandwidth": true}
    }
  ]
}`;

/** Cilium's 05-cilium.conflist (no final newline, as the agent writes it). */
export const CILIUM = `{
  "cniVersion": "0.3.1",
  "name": "cilium",
  "plugins": [
    {
       "type": "cilium-cni",
       "enable-debug": false,
       "log-file": "/var/run/cilium/cilium-cni.log"
    }
  ]
}`;

/** Multus's 00-multus.conf: a single plugin delegating to the cluster network. */
export const MULTUS = `{
  "cniVersion": "0.3.1",
  "name": "multus-cni-network",
  "type": "multus",
  "capabilities": {"portMappings": true, "bandwidth": true},
  "kubeconfig": "/etc/cni/net.d/multus.d/multus.kubeconfig",
  "delegates": [
    {"cniVersion": "0.3.1", "name": "cbr0", "plugins": [{"type": "flannel", "delegate": {"isDefaultGateway": true}}]}
  ]
}
`;

/** The bridge plugin's single .conf, with CRLF line ends and a tab. */
export const BRIDGE_CONF =
  '{\r\n\t"cniVersion": "1.0.0",\r\n\t"name": "mynet",\r\n\t"type": "bridge",\r\n\t"bridge": "cni0",\r\n\t"ipam": {"type": "host-local", "subnet": "10.22.0.0/16"}\r\n}\r\n';

/**
 * A list written by hand, which the agent's renderer cannot reproduce: tabs and odd spacing, a
 * key that sorts first when parsed ("10"), a number in exponent form, unicode escapes and a
 * repeated key. Only a restore that writes the kept bytes gives it back.
 */
export const HAND_WRITTEN =
  '{ "name" : "weave",\t"cniVersion":"0.3.1",\n "plugins":[ {"type":"weave-net", "hairpinMode":true,' +
  ' "mtu": 1.4e3, "comment":"caf\\u00e9 \\ud83d\\ude00", "10": "ten"},\r\n' +
  '   {"type":"portmap","capabilities":{"portMappings":true},"type":"portmap"} ] }';

/**
 * Flannel's list with its delegate's options nested `depth` levels deep: Go's encoding/json
 * (libcni) takes up to 10,000 levels, so the runtime loads it.
 */
export function deeplyNested(depth = 9000): string {
  const deep = "[".repeat(depth) + "]".repeat(depth);
  return FLANNEL.replace('"hairpinMode": true', `"hairpinMode": true, "options": ${deep}`);
}
