import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { HostNames } from './host.ts';

/**
 * The `kubernetes` Service for the node's pods without kube-proxy: the API server listens on loopback, so
 * an nftables DNAT (in a table of the node's own name; kube-proxy's single `kube-proxy` table would be
 * shared by every node on the host) sends the pods' `<serviceIp>:443` to `127.0.0.1:<apiPort>`, which the
 * kernel allows only with `route_localnet` on the bridge the packets come in by. The API server's serving
 * certificate names the service IP, so the runner's in-cluster client verifies it as in a cluster.
 */
export function serviceRouteRules(names: HostNames, serviceIp: string, apiPort: number): string {
  return `table ip ${names.nftTable} {
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    iifname "${names.bridge}" ip saddr ${names.subnet} ip daddr ${serviceIp} tcp dport 443 dnat to 127.0.0.1:${apiPort}
  }
}
`;
}

/**
 * Creates the node's bridge (the CNI bridge plugin takes it over), lets it route to loopback, and loads the
 * service rule. `rulesPath` is where the rules file is kept (the node's directory).
 */
export function addServiceRoute(
  names: HostNames,
  serviceIp: string,
  apiPort: number,
  rulesPath: string,
): void {
  execFileSync('ip', ['link', 'add', 'name', names.bridge, 'type', 'bridge']);
  execFileSync('ip', ['link', 'set', names.bridge, 'up']);
  writeFileSync(`/proc/sys/net/ipv4/conf/${names.bridge}/route_localnet`, '1');
  writeFileSync(rulesPath, serviceRouteRules(names, serviceIp, apiPort));
  execFileSync('nft', ['-f', rulesPath]);
}
