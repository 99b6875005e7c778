import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { commaList } from '../../schemas/comma-list.ts';
import { unsetWhenEmpty } from '../../schemas/unset-when-empty.ts';

/**
 * Where Redis is: one node, a Redis Cluster (reached through seed nodes), or a master watched by Sentinel.
 * Every key a Lua script touches shares one hash slot (keys.ts, DESIGN.md section 8), so the same scripts
 * run on all three. Read from the environment by src/config.ts and src/relay/config.ts through
 * {@link REDIS_ENV_SHAPE} and {@link redisTopologyOf}.
 */
export type RedisTopology = (
  | { kind: 'single'; url: string }
  | { kind: 'cluster'; nodes: HostPort[] }
  | { kind: 'sentinel'; sentinels: HostPort[]; masterName: string }
) & {
  /** AUTH of every data node (Redis `requirepass`, or an ACL user); absent: no AUTH. */
  credentials?: RedisCredentials;
  /**
   * TLS on every connection (one node's, every Cluster node's, the sentinels' and the master's); absent:
   * plaintext. One node's URL says the same (`rediss://`; {@link redisTopologyOf} keeps them in step).
   */
  tls?: RedisTls;
};

/**
 * How the client checks Redis's certificates: against `ca`, or Node's bundled public roots when absent. The
 * server's name is always checked: a certificate must name the host or IP address the client connects to
 * (a Cluster node's or the master's as the cluster or the sentinels announce it).
 */
export interface RedisTls {
  /** PEM of the CA certificate(s) to trust instead of the public roots. */
  ca?: string;
}

/** Who the client authenticates as: the `default` user unless an ACL `username` is given. */
export interface RedisCredentials {
  username?: string;
  password: string;
}

/** One `host:port` address. */
export interface HostPort {
  host: string;
  port: number;
}

/** `host:port` (a name, an IPv4 address or a bracketed IPv6 address). */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]{1,5})$/;

function hostPortList(name: string) {
  return commaList()
    .pipe(
      z
        .array(
          z
            .string()
            .regex(HOST_PORT, `${name}: each entry must be host:port`)
            .refine((entry) => Number(entry.slice(entry.lastIndexOf(':') + 1)) <= 65535, {
              message: `${name}: port above 65535`,
            }),
        )
        .min(1, `${name}: at least one host:port`)
        .max(32, `${name}: at most 32 addresses`),
    )
    .transform((entries) => entries.map(parseHostPort));
}

function parseHostPort(entry: string): HostPort {
  const colon = entry.lastIndexOf(':');
  const host = entry.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(entry.slice(colon + 1)) };
}

/**
 * The Redis variables, to spread into a configuration schema; exactly one topology must be named (checked
 * by {@link redisTopologyOf}):
 * - `REDIS_URL`: one node, `redis://host:port[/db]` or `rediss://`;
 * - `REDIS_CLUSTER_NODES`: Redis Cluster, comma-separated `host:port` seed nodes (any reachable one will
 *   do; the client learns the rest from the cluster);
 * - `REDIS_SENTINELS` and `REDIS_SENTINEL_MASTER`: comma-separated `host:port` of the sentinels, and the
 *   name they monitor the master under;
 * - with any of them, `REDIS_PASSWORD` (and `REDIS_USERNAME` for an ACL user): the data nodes' AUTH (issue
 *   16). A single node's URL may carry them instead (`redis://user:password@host`), not both;
 * - TLS: `rediss://` for one node, `REDIS_TLS=true` for a Cluster or Sentinel (its sentinels and data nodes
 *   alike); with it, `REDIS_TLS_CA_FILE` (a PEM file, a mounted Secret's key) or `REDIS_TLS_CA_DATA` (the
 *   same PEM base64-encoded, where no file can be mounted: Lambda) names the CA to trust. The CA is read
 *   and parsed here, at start, so a missing or wrong file stops the process with the setting's name.
 * An empty value of the TLS settings is unset (a deployment template's empty default).
 */
export const REDIS_ENV_SHAPE = {
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'REDIS_URL: must start with redis:// or rediss://')
    .optional(),
  REDIS_CLUSTER_NODES: hostPortList('REDIS_CLUSTER_NODES').optional(),
  REDIS_SENTINELS: hostPortList('REDIS_SENTINELS').optional(),
  REDIS_SENTINEL_MASTER: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'REDIS_SENTINEL_MASTER: 1-64 of A-Z, a-z, 0-9, ".", "_", "-"')
    .optional(),
  REDIS_USERNAME: z.string().min(1, 'REDIS_USERNAME: empty').optional(),
  REDIS_PASSWORD: z.string().min(1, 'REDIS_PASSWORD: empty').optional(),
  REDIS_TLS: unsetWhenEmpty(
    z
      .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'REDIS_TLS: true or false' })
      .transform((v) => v === 'true' || v === '1' || v === 'yes'),
  ),
  REDIS_TLS_CA_FILE: unsetWhenEmpty(
    z.string().transform((path, ctx) => {
      const read = readCaFile(path);
      const problem = 'pem' in read ? caProblem(read.pem) : read.problem;
      if (problem === undefined && 'pem' in read) return read.pem;
      ctx.issues.push({ code: 'custom', input: path, message: `REDIS_TLS_CA_FILE: ${path}: ${problem}` });
      return z.NEVER;
    }),
  ),
  REDIS_TLS_CA_DATA: unsetWhenEmpty(
    z.string().transform((data, ctx) => {
      const pem = BASE64.test(data) ? Buffer.from(data, 'base64').toString('utf8') : '';
      const problem = pem === '' ? 'not base64 (of the PEM file: base64 -w0 ca.crt)' : caProblem(pem);
      if (problem === undefined) return pem;
      ctx.issues.push({ code: 'custom', input: '(base64)', message: `REDIS_TLS_CA_DATA: ${problem}` });
      return z.NEVER;
    }),
  ),
};

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** The file's text, or why it cannot be read (the errno code, e.g. ENOENT or EACCES). */
function readCaFile(path: string): { pem: string } | { problem: string } {
  try {
    return { pem: readFileSync(path, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { problem: `cannot read the CA file (${code ?? (error as Error).message})` };
  }
}

/** Why a PEM text is no CA bundle: no certificate in it, or one that does not parse; undefined: fine. */
function caProblem(pem: string): string | undefined {
  const certificates = pem.match(PEM_CERTIFICATE) ?? [];
  if (certificates.length === 0) return 'no PEM certificate (-----BEGIN CERTIFICATE-----) in it';
  for (const [index, certificate] of certificates.entries()) {
    try {
      new X509Certificate(certificate);
    } catch (error) {
      return `certificate ${index + 1} does not parse (${(error as Error).message})`;
    }
  }
  return undefined;
}

/** The parsed Redis variables. */
export interface RedisEnv {
  REDIS_URL?: string | undefined;
  REDIS_CLUSTER_NODES?: HostPort[] | undefined;
  REDIS_SENTINELS?: HostPort[] | undefined;
  REDIS_SENTINEL_MASTER?: string | undefined;
  REDIS_USERNAME?: string | undefined;
  REDIS_PASSWORD?: string | undefined;
  REDIS_TLS?: boolean | undefined;
  /** The PEM read from the file (REDIS_ENV_SHAPE reads it). */
  REDIS_TLS_CA_FILE?: string | undefined;
  /** The PEM decoded from base64. */
  REDIS_TLS_CA_DATA?: string | undefined;
}

const ONE_OF =
  'set exactly one of REDIS_URL (one node), REDIS_CLUSTER_NODES (Redis Cluster seed nodes) or REDIS_SENTINELS with REDIS_SENTINEL_MASTER (Sentinel)';

/** The topology the variables name, or every problem as `NAME: problem` lines. */
export function redisTopologyOf(
  env: RedisEnv,
): { ok: true; topology: RedisTopology } | { ok: false; problems: string[] } {
  const named = [
    env.REDIS_URL !== undefined && 'REDIS_URL',
    env.REDIS_CLUSTER_NODES !== undefined && 'REDIS_CLUSTER_NODES',
    env.REDIS_SENTINELS !== undefined && 'REDIS_SENTINELS',
  ].filter((name): name is string => name !== false);
  const problems: string[] = [];
  if (named.length === 0) problems.push(`REDIS_URL: ${ONE_OF}`);
  if (named.length > 1) problems.push(`${named.join(', ')}: ${ONE_OF}; got ${named.length}`);
  if (env.REDIS_SENTINELS !== undefined && env.REDIS_SENTINEL_MASTER === undefined)
    problems.push('REDIS_SENTINEL_MASTER: required with REDIS_SENTINELS (the monitored master name)');
  if (env.REDIS_SENTINELS === undefined && env.REDIS_SENTINEL_MASTER !== undefined)
    problems.push('REDIS_SENTINEL_MASTER: only with REDIS_SENTINELS');
  if (env.REDIS_USERNAME !== undefined && env.REDIS_PASSWORD === undefined)
    problems.push('REDIS_USERNAME: only with REDIS_PASSWORD');
  if (env.REDIS_PASSWORD !== undefined && env.REDIS_URL !== undefined && urlHasCredentials(env.REDIS_URL))
    problems.push('REDIS_PASSWORD: the REDIS_URL carries credentials already; set one of them');
  const tls = tlsOf(env, problems);
  if (problems.length > 0) return { ok: false, problems };
  const credentials: { credentials?: RedisCredentials } =
    env.REDIS_PASSWORD === undefined
      ? {}
      : {
          credentials: {
            ...(env.REDIS_USERNAME === undefined ? {} : { username: env.REDIS_USERNAME }),
            password: env.REDIS_PASSWORD,
          },
        };
  const extras = { ...credentials, ...(tls === undefined ? {} : { tls }) };
  if (env.REDIS_CLUSTER_NODES !== undefined)
    return { ok: true, topology: { kind: 'cluster', nodes: env.REDIS_CLUSTER_NODES, ...extras } };
  if (env.REDIS_SENTINELS !== undefined && env.REDIS_SENTINEL_MASTER !== undefined)
    return {
      ok: true,
      topology: {
        kind: 'sentinel',
        sentinels: env.REDIS_SENTINELS,
        masterName: env.REDIS_SENTINEL_MASTER,
        ...extras,
      },
    };
  if (env.REDIS_URL !== undefined)
    return { ok: true, topology: { kind: 'single', url: env.REDIS_URL, ...extras } };
  return { ok: false, problems: [`REDIS_URL: ${ONE_OF}`] };
}

/**
 * TLS as the settings ask for it (undefined: plaintext), adding to `problems` what contradicts: a REDIS_TLS
 * that says otherwise than the URL's scheme, a CA for a plaintext connection (it would be ignored while the
 * operator believes the connection checked), two CAs.
 */
function tlsOf(env: RedisEnv, problems: string[]): RedisTls | undefined {
  const urlTls = env.REDIS_URL === undefined ? undefined : env.REDIS_URL.startsWith('rediss://');
  if (urlTls !== undefined && env.REDIS_TLS !== undefined && env.REDIS_TLS !== urlTls)
    problems.push(
      `REDIS_TLS: ${env.REDIS_TLS} but the REDIS_URL is ${urlTls ? 'rediss://' : 'redis://'}; one node's TLS is its URL's scheme (rediss://)`,
    );
  const on = urlTls ?? env.REDIS_TLS ?? false;
  if (env.REDIS_TLS_CA_FILE !== undefined && env.REDIS_TLS_CA_DATA !== undefined)
    problems.push('REDIS_TLS_CA_FILE, REDIS_TLS_CA_DATA: set one of them');
  const ca = env.REDIS_TLS_CA_FILE ?? env.REDIS_TLS_CA_DATA;
  if (!on && ca !== undefined) {
    const name = env.REDIS_TLS_CA_FILE === undefined ? 'REDIS_TLS_CA_DATA' : 'REDIS_TLS_CA_FILE';
    problems.push(
      `${name}: only with TLS (a rediss:// REDIS_URL, or REDIS_TLS=true for a Cluster or Sentinel)`,
    );
  }
  if (!on) return undefined;
  return ca === undefined ? {} : { ca };
}

/** Whether a `redis://` URL names a user or password (`redis://[user][:password]@host`). */
function urlHasCredentials(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return false;
  }
}

/** The environment that names `topology` (the inverse of {@link redisTopologyOf}, for child processes). */
export function redisEnvOf(topology: RedisTopology): Record<string, string> {
  const list = (addresses: HostPort[]) =>
    addresses.map((a) => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`)).join(',');
  const credentials: Record<string, string> = {
    ...(topology.credentials?.username === undefined
      ? {}
      : { REDIS_USERNAME: topology.credentials.username }),
    ...(topology.credentials === undefined ? {} : { REDIS_PASSWORD: topology.credentials.password }),
    // One node's TLS is its URL's scheme; REDIS_TLS says the same, and names it for the other two.
    ...(topology.tls === undefined ? {} : { REDIS_TLS: 'true' }),
    ...(topology.tls?.ca === undefined
      ? {}
      : { REDIS_TLS_CA_DATA: Buffer.from(topology.tls.ca, 'utf8').toString('base64') }),
  };
  switch (topology.kind) {
    case 'single':
      return { REDIS_URL: topology.url, ...credentials };
    case 'cluster':
      return { REDIS_CLUSTER_NODES: list(topology.nodes), ...credentials };
    case 'sentinel':
      return {
        REDIS_SENTINELS: list(topology.sentinels),
        REDIS_SENTINEL_MASTER: topology.masterName,
        ...credentials,
      };
  }
}
